import type { ColumnType, Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

type JsonOf<T> = ColumnType<T, T | string, T | string>

export interface RuleSchedule {
  event_type: string
  cron_expression?: string | undefined
  timezone?: string | undefined
  offset_minutes?: number | undefined
}
export type RuleScope = 'EVENT' | 'SPACE' | 'CONTACT' | 'GLOBAL'
export type RuleAction = Record<string, unknown> & { type: string }

export interface AutomationRulesTable {
  tenant_id: string
  id: Generated<string>
  org_id: string | null
  name: string
  description: string | null
  enabled: Generated<boolean>
  priority: Generated<number>
  scope: RuleScope
  scope_id: string | null
  event_type: string
  schedule: JsonOf<RuleSchedule>
  conditions: JsonOf<Record<string, unknown>>
  actions: JsonOf<RuleAction[]>
  created_by_kind: Generated<string>
  creator_id: string
  /** the tenant roles of the rule's last writer (known role names), whose rights the rule acts with */
  creator_roles: Generated<string[]>
  /** why the service disabled the rule (its creator was removed or deactivated); null otherwise */
  disabled_reason: Generated<string | null>
  version: Generated<number>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}
export type RuleRow = Selectable<AutomationRulesTable>

export type ExecutionStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped'

export interface AutomationExecutionsTable {
  tenant_id: string
  id: Generated<string>
  rule_id: string
  trigger_key: string
  trigger_type: string
  trigger_payload: JsonOf<Record<string, unknown>>
  depth: Generated<number>
  status: Generated<ExecutionStatus>
  attempts: Generated<number>
  max_attempts: number
  claim_token: string | null
  lease_until: Timestamp | null
  started_at: Timestamp | null
  finished_at: Timestamp | null
  conditions_met: boolean | null
  condition_results: JsonOf<unknown[]> | null
  action_results: JsonOf<unknown[]> | null
  error: string | null
  /** the rule version the execution was enqueued with: the runner runs that version's snapshot */
  rule_version: number
  /** the failed execution this one retries, if it is a retry */
  retry_of: Generated<string | null>
  created_at: Generated<Date>
}
export type ExecutionRow = Selectable<AutomationExecutionsTable>

/** An immutable snapshot of one version of a rule: what it runs and whom it acts as (migration 0014). */
export interface AutomationRuleVersionsTable {
  tenant_id: string
  rule_id: string
  version: number
  name: string
  event_type: string
  schedule: JsonOf<RuleSchedule>
  conditions: JsonOf<Record<string, unknown>>
  actions: JsonOf<RuleAction[]>
  scope: RuleScope
  scope_id: string | null
  created_by_kind: string
  creator_id: string
  creator_roles: string[]
  org_id: string | null
  created_at: Generated<Date>
}
export type RuleVersionRow = Selectable<AutomationRuleVersionsTable>

export interface AutomationScheduleStateTable {
  tenant_id: string
  rule_id: string
  last_slot: Timestamp
  updated_at: Generated<Date>
}

export interface AutomationTables {
  automation_rules: AutomationRulesTable
  automation_executions: AutomationExecutionsTable
  automation_rule_versions: AutomationRuleVersionsTable
  automation_schedule_state: AutomationScheduleStateTable
}

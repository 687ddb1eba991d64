/** All SQL of automation rules and executions; every query names its tenant. */
import { sql } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { eventVisibleTo } from '../events/events.access.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { AutomationRulesTable, ExecutionRow, RuleAction, RuleRow, RuleSchedule, RuleScope } from './automation.table.ts'
import type { Insertable, Updateable } from 'kysely'

const jsonb = (v: unknown) => JSON.stringify(v)

export interface RuleValues {
  name: string
  description: string | null
  enabled: boolean
  priority: number
  scope: RuleScope
  scope_id: string | null
  schedule: RuleSchedule
  conditions: Record<string, unknown>
  actions: RuleAction[]
}

function toColumns (v: Partial<RuleValues>): Updateable<AutomationRulesTable> {
  const out: Updateable<AutomationRulesTable> = {}
  if (v.name !== undefined) out.name = v.name
  if (v.description !== undefined) out.description = v.description
  if (v.enabled !== undefined) out.enabled = v.enabled
  if (v.priority !== undefined) out.priority = v.priority
  if (v.scope !== undefined) out.scope = v.scope
  if (v.scope_id !== undefined) out.scope_id = v.scope_id
  if (v.schedule !== undefined) { out.schedule = jsonb(v.schedule); out.event_type = v.schedule.event_type }
  if (v.conditions !== undefined) out.conditions = jsonb(v.conditions)
  if (v.actions !== undefined) out.actions = jsonb(v.actions)
  return out
}

export async function insertRule (trx: Tx, tenantId: string, creator: { kind: string, id: string, orgId: string | null }, v: RuleValues): Promise<RuleRow> {
  const values = { ...toColumns(v), tenant_id: tenantId, org_id: creator.orgId, created_by_kind: creator.kind, creator_id: creator.id } as Insertable<AutomationRulesTable>
  return await trx.insertInto('automation_rules').values(values).returningAll().executeTakeFirstOrThrow()
}

export async function updateRule (trx: Tx, tenantId: string, id: string, v: Partial<RuleValues>): Promise<RuleRow> {
  return await trx.updateTable('automation_rules')
    .set({ ...toColumns(v), version: sql`version + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returningAll().executeTakeFirstOrThrow()
}

export async function findRule (trx: Tx, tenantId: string, id: string, lock = false): Promise<RuleRow | undefined> {
  return await trx.selectFrom('automation_rules').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .$if(lock, qb => qb.forUpdate())
    .executeTakeFirst()
}

export async function deleteRule (trx: Tx, tenantId: string, id: string): Promise<void> {
  await trx.deleteFrom('automation_rules').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

export interface RuleFilter { scope?: RuleScope | undefined, scopeId?: string | undefined, eventType?: string | undefined, enabled?: boolean | undefined }

/**
 * Rules of a tenant, newest first. With `auth`, rules of events the caller cannot see are left
 * out (tenant admins see all).
 */
export async function listRules (trx: Tx, tenantId: string, f: RuleFilter, page: number, size: number, auth?: AuthContext): Promise<{ items: RuleRow[], total: number }> {
  const base = trx.selectFrom('automation_rules').where('tenant_id', '=', tenantId)
    .$if(auth !== undefined, qb => qb.where(eb => eb.or([
      eb('scope', '!=', 'EVENT'),
      eb('scope_id', 'is', null),
      eb('scope_id', 'in', eb.selectFrom('events').select(sql<string>`events.id::text`.as('id')).where(e => eventVisibleTo(e, auth as AuthContext)))
    ])))
    .$if(f.scope !== undefined, qb => qb.where('scope', '=', f.scope ?? 'GLOBAL'))
    .$if(f.scopeId !== undefined, qb => qb.where('scope_id', '=', f.scopeId ?? ''))
    .$if(f.eventType !== undefined, qb => qb.where('event_type', '=', f.eventType ?? ''))
    .$if(f.enabled !== undefined, qb => qb.where('enabled', '=', f.enabled ?? true))
  const [items, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(size).offset((page - 1) * size).execute(),
    base.select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return { items, total: Number(count.n) }
}

export interface ExecutionValues {
  ruleId: string
  triggerKey: string
  triggerType: string
  payload: Record<string, unknown>
  depth: number
  maxAttempts: number
  /** a skipped execution is recorded finished, with its reason */
  skipped?: string
}

/** Inserts an execution unless one exists for (rule, trigger occurrence); undefined when it existed. */
export async function insertExecution (trx: Tx, tenantId: string, v: ExecutionValues): Promise<ExecutionRow | undefined> {
  return await trx.insertInto('automation_executions').values({
    tenant_id: tenantId,
    rule_id: v.ruleId,
    trigger_key: v.triggerKey,
    trigger_type: v.triggerType,
    trigger_payload: jsonb(v.payload),
    depth: v.depth,
    max_attempts: v.maxAttempts,
    ...(v.skipped !== undefined ? { status: 'skipped' as const, error: v.skipped, finished_at: sql<Date>`now()` as unknown as Date } : {})
  }).onConflict(oc => oc.columns(['tenant_id', 'rule_id', 'trigger_key']).doNothing())
    .returningAll().executeTakeFirst()
}

export async function listExecutions (trx: Tx, tenantId: string, ruleId: string, page: number, size: number): Promise<{ items: ExecutionRow[], total: number }> {
  const base = trx.selectFrom('automation_executions').where('tenant_id', '=', tenantId).where('rule_id', '=', ruleId)
  const [items, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(size).offset((page - 1) * size).execute(),
    base.select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return { items, total: Number(count.n) }
}

export async function lockExecution (trx: Tx, tenantId: string, id: string): Promise<ExecutionRow | undefined> {
  return await trx.selectFrom('automation_executions').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', id).forUpdate().executeTakeFirst()
}

/** The wire shape of an execution. */
export function toExecution (row: ExecutionRow) {
  return {
    ...row,
    trigger: row.trigger_payload,
    condition_results: row.condition_results as Array<Record<string, unknown>> | null,
    action_results: row.action_results as Array<Record<string, unknown>> | null
  }
}

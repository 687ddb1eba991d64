/** All SQL of automation rules and executions; every query names its tenant. */
import { sql } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { eventVisibleTo } from '../events/events.access.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { keptTotal, type Counting } from '../../platform/db/kept-counts.ts'
import { afterKey, listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type {
  AutomationRulesTable,
  ExecutionRow,
  ExecutionStatus,
  RuleAction,
  RuleRow,
  RuleSchedule,
  RuleScope,
  RuleVersionRow
} from './automation.table.ts'
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

/** Whom a rule acts as: its last writer (docs/automation.md, "Whom a rule acts as"). */
export interface RuleWriter { kind: string, id: string, orgId: string | null, roles: string[] }

export async function insertRule (trx: Tx, tenantId: string, creator: RuleWriter, v: RuleValues): Promise<RuleRow> {
  const values = {
    ...toColumns(v),
    tenant_id: tenantId,
    org_id: creator.orgId,
    created_by_kind: creator.kind,
    creator_id: creator.id,
    creator_roles: creator.roles
  } as Insertable<AutomationRulesTable>
  const row = await trx.insertInto('automation_rules').values(values).returningAll().executeTakeFirstOrThrow()
  await snapshotRule(trx, tenantId, row.id)
  return row
}

/**
 * Keeps the rule's current version as an immutable snapshot (what it runs, whom it acts as). Every
 * statement that creates a version of a rule calls it in the same transaction.
 */
async function snapshotRule (trx: Tx, tenantId: string, id: string): Promise<void> {
  await sql`
    insert into automation_rule_versions (tenant_id, rule_id, version, name, event_type, schedule, conditions, actions,
      scope, scope_id, created_by_kind, creator_id, creator_roles, org_id)
    select tenant_id, id, version, name, event_type, schedule, conditions, actions,
      scope, scope_id, created_by_kind, creator_id, creator_roles, org_id
    from automation_rules where tenant_id = ${tenantId} and id = ${id}::uuid
    on conflict (tenant_id, rule_id, version) do nothing`.execute(trx)
}

/** The snapshot of one version of a rule. */
export async function findRuleVersion (
  trx: Tx,
  tenantId: string,
  ruleId: string,
  version: number
): Promise<RuleVersionRow | undefined> {
  return await trx
    .selectFrom('automation_rule_versions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('rule_id', '=', ruleId)
    .where('version', '=', version)
    .executeTakeFirst()
}

/** Replaces the given fields; the rule then acts as `writer`. Enabling it clears `disabled_reason`. */
export async function updateRule (
  trx: Tx,
  tenantId: string,
  id: string,
  v: Partial<RuleValues>,
  writer: RuleWriter
): Promise<RuleRow> {
  const row = await trx
    .updateTable('automation_rules')
    .set({
      ...toColumns(v),
      org_id: writer.orgId,
      created_by_kind: writer.kind,
      creator_id: writer.id,
      creator_roles: writer.roles,
      ...(v.enabled === true ? { disabled_reason: null } : {}),
      version: sql`version + 1`,
      updated_at: sql`now()`
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
  await snapshotRule(trx, tenantId, id)
  return row
}

/**
 * Disables a rule, saying why (its creator may no longer act; it failed too often). Only an
 * enabled rule is changed: answers whether this call disabled it.
 */
export async function disableRule (trx: Tx, tenantId: string, id: string, reason: string): Promise<boolean> {
  const changed = await trx.updateTable('automation_rules')
    .set({ enabled: false, disabled_reason: reason, version: sql`version + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id).where('enabled', '=', true)
    .returning('id').executeTakeFirst()
  if (changed !== undefined) await snapshotRule(trx, tenantId, id)
  return changed !== undefined
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

export interface RuleFilter {
  scope?: RuleScope | undefined
  scopeId?: string | undefined
  eventType?: string | undefined
  enabled?: boolean | undefined
}

/**
 * Rules of a tenant, newest first. With `auth`, rules of events the caller cannot see are left
 * out (tenant admins see all).
 */
const RULE_KEYS: KeyColumn[] = [
  { ref: 'created_at', dir: 'desc', type: 'time' },
  { ref: 'id', dir: 'asc', type: 'uuid' }
]

export async function listRules (
  trx: Tx,
  tenantId: string,
  f: RuleFilter,
  q: { page: number; size: number; cursor?: string | undefined },
  auth?: AuthContext
) {
  const window = pageWindow(q, listScope('rules', { ...f }), RULE_KEYS)
  const base = trx
    .selectFrom('automation_rules')
    .where('tenant_id', '=', tenantId)
    .$if(auth !== undefined, qb =>
      qb.where(eb =>
        eb.or([
          eb('scope', '!=', 'EVENT'),
          eb('scope_id', 'is', null),
          eb(
            'scope_id',
            'in',
            eb
              .selectFrom('events')
              .select(sql<string>`events.id::text`.as('id'))
              .where(e => eventVisibleTo(e, auth as AuthContext))
          )
        ])
      )
    )
    .$if(f.scope !== undefined, qb => qb.where('scope', '=', f.scope ?? 'GLOBAL'))
    .$if(f.scopeId !== undefined, qb => qb.where('scope_id', '=', f.scopeId ?? ''))
    .$if(f.eventType !== undefined, qb => qb.where('event_type', '=', f.eventType ?? ''))
    .$if(f.enabled !== undefined, qb => qb.where('enabled', '=', f.enabled ?? true))
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, RULE_KEYS, window.after ?? [])))
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(window.limit)
      .offset(window.offset)
      .execute(),
    base.select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return { ...pageOf(rows, window, r => [r.created_at, r.id]), total: Number(count.n) }
}

export interface ExecutionValues {
  ruleId: string
  /** the version of the rule the execution runs */
  ruleVersion: number
  /** the failed execution this one retries */
  retryOf?: string
  triggerKey: string
  triggerType: string
  payload: Record<string, unknown>
  depth: number
  maxAttempts: number
  /** a skipped execution is recorded finished, with its reason */
  skipped?: string
}

/** Inserts an execution unless one exists for (rule, trigger occurrence); undefined when it existed. */
export async function insertExecution (
  trx: Tx,
  tenantId: string,
  v: ExecutionValues
): Promise<ExecutionRow | undefined> {
  return await trx
    .insertInto('automation_executions')
    .values({
      tenant_id: tenantId,
      rule_id: v.ruleId,
      rule_version: v.ruleVersion,
      ...(v.retryOf !== undefined ? { retry_of: v.retryOf } : {}),
      trigger_key: v.triggerKey,
      trigger_type: v.triggerType,
      trigger_payload: jsonb(v.payload),
      depth: v.depth,
      max_attempts: v.maxAttempts,
      ...(v.skipped !== undefined
        ? { status: 'skipped' as const, error: v.skipped, finished_at: sql<Date>`now()` as unknown as Date }
        : {})
    })
    .onConflict(oc => oc.columns(['tenant_id', 'rule_id', 'trigger_key']).doNothing())
    .returningAll()
    .executeTakeFirst()
}

export interface ExecutionFilter {
  status?: ExecutionStatus | undefined
  triggerType?: string | undefined
  from?: Date | undefined
  to?: Date | undefined
}

const EXECUTION_KEYS: KeyColumn[] = [
  { ref: 'created_at', dir: 'desc', type: 'time' },
  { ref: 'id', dir: 'desc', type: 'uuid' }
]

/**
 * A rule's executions, newest first; `from` inclusive and `to` exclusive bound when they were queued
 * (created_at). With a cursor, the page after its execution (docs/pagination.md).
 */
/** The trigger that keeps the executions' counts in row_counts (absent on Citus) */
export const EXECUTION_COUNTS_TRIGGER = 'executions_counts_insert'

export async function listExecutions (
  trx: Tx,
  tenantId: string,
  ruleId: string,
  q: { page: number; size: number; cursor?: string | undefined },
  f: ExecutionFilter = {},
  counting: Counting = 'rows'
) {
  const window = pageWindow(
    q,
    listScope('executions', {
      ruleId,
      status: f.status,
      triggerType: f.triggerType,
      from: f.from?.toISOString(),
      to: f.to?.toISOString()
    }),
    EXECUTION_KEYS
  )
  const base = trx
    .selectFrom('automation_executions')
    .where('tenant_id', '=', tenantId)
    .where('rule_id', '=', ruleId)
    .$if(f.status !== undefined, qb => qb.where('status', '=', f.status ?? 'queued'))
    .$if(f.triggerType !== undefined, qb => qb.where('trigger_type', '=', f.triggerType ?? ''))
    .$if(f.from !== undefined, qb => qb.where('created_at', '>=', f.from ?? new Date(0)))
    .$if(f.to !== undefined, qb => qb.where('created_at', '<', f.to ?? new Date(0)))
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, EXECUTION_KEYS, window.after ?? [])))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(window.limit)
      .offset(window.offset)
      .execute(),
    // a time range counts its rows; status and trigger type are keys of the kept counts
    counting === 'kept' && f.from === undefined && f.to === undefined
      ? keptTotal(
        trx,
        tenantId,
        'executions',
        sql<boolean>`k1 = ${ruleId}
          and ${f.status !== undefined ? sql<boolean>`k2 = ${f.status}` : sql<boolean>`true`}
          and ${f.triggerType !== undefined ? sql<boolean>`k3 = ${f.triggerType}` : sql<boolean>`true`}`
      )
      : base
        .select(eb => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
        .then(r => Number(r.n))
  ])
  return { ...pageOf(rows, window, r => [r.created_at, r.id]), total: count }
}

export async function lockExecution (trx: Tx, tenantId: string, id: string): Promise<ExecutionRow | undefined> {
  return await trx.selectFrom('automation_executions').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', id).forUpdate().executeTakeFirst()
}

/** The execution that retries a failed one, if any. */
export async function findRetryOf (trx: Tx, tenantId: string, failedId: string): Promise<ExecutionRow | undefined> {
  return await trx.selectFrom('automation_executions').selectAll()
    .where('tenant_id', '=', tenantId).where('retry_of', '=', failedId).executeTakeFirst()
}

/**
 * Whether the last `n` finished executions of a rule that ran or tried to run its actions
 * (succeeded or failed; skipped ones are neither) all failed.
 */
export async function failedInARow (trx: Tx, tenantId: string, ruleId: string, n: number): Promise<boolean> {
  const last = await trx
    .selectFrom('automation_executions')
    .select('status')
    // literals, not parameters: the partial index automation_executions_rule_finished matches this predicate
    .where('tenant_id', '=', tenantId)
    .where('rule_id', '=', ruleId)
    .where(sql<boolean>`status in ('succeeded', 'failed')`)
    .orderBy('finished_at', 'desc')
    .limit(n)
    .execute()
  return last.length === n && last.every(r => r.status === 'failed')
}

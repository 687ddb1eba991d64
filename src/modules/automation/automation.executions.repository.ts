/**
 * All SQL of automation executions: queued by the dispatcher, the scheduler, manual runs and
 * retries; claimed, finished and released by the runner; swept when their worker died. Every query
 * names its tenant, except the sweep, which runs over every tenant (system transaction).
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { keptTotalQuery, type Counting } from '../../platform/db/kept-counts.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { updateRows } from '../../platform/db/match.ts'
import { listScope, pageWindow, type KeyColumn, type PageParams } from '../../platform/http/cursor.ts'
import type { ExecutionRow, ExecutionStatus } from './automation.table.ts'

const jsonb = (v: unknown) => JSON.stringify(v)

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

const EXECUTION_KEYS: KeyColumn[] = [{ ref: 'created_at', dir: 'desc', type: 'time' },
  { ref: 'id', dir: 'desc', type: 'uuid' }]

/** The trigger that keeps the executions' counts in row_counts (absent on Citus) */
export const EXECUTION_COUNTS_TRIGGER = 'executions_counts_insert'

/**
 * A rule's executions, newest first; `from` inclusive and `to` exclusive bound when they were queued
 * (created_at). With a cursor, the page after its execution (docs/pagination.md).
 */
export async function listExecutions (
  trx: Tx,
  tenantId: string,
  ruleId: string,
  q: PageParams,
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
  // a time range counts its rows; status and trigger type are keys of the kept counts
  const kept = counting === 'kept' && f.from === undefined && f.to === undefined
  const keptCount = keptTotalQuery(
    trx,
    tenantId,
    'executions',
    sql<boolean>`k1 = ${ruleId}
          and ${f.status !== undefined ? sql<boolean>`k2 = ${f.status}` : sql<boolean>`true`}
          and ${f.triggerType !== undefined ? sql<boolean>`k3 = ${f.triggerType}` : sql<boolean>`true`}`
  )
  return await listPage(trx, base, qb => qb.selectAll(), EXECUTION_KEYS, window, kept ? keptCount : undefined)
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

// ---- the runner

/** What a claim sets: the attempt, the claim token and its lease. */
export interface ExecutionClaim {
  attempts: number
  claimToken: string
  leaseUntil: Date
  startedAt: Date
}

/** Claims an execution for one attempt: running, under the claim token until the lease ends. */
export async function claimExecutionRow (
  trx: Tx,
  tenantId: string,
  id: string,
  c: ExecutionClaim
): Promise<ExecutionRow> {
  return await updateRows(trx, 'automation_executions', { tenant_id: tenantId, id })
    .set({
      status: 'running',
      attempts: c.attempts,
      claim_token: c.claimToken,
      lease_until: c.leaseUntil,
      started_at: c.startedAt,
      error: null
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** How an execution ended: its status and results, and when. */
export interface ExecutionEnd {
  status: 'succeeded' | 'skipped' | 'failed'
  finishedAt: Date
  conditionsMet?: boolean | undefined
  conditionResults?: unknown[] | undefined
  actionResults?: unknown[] | undefined
  error?: string | undefined
}

/** Records the end of an execution the caller holds (claim token checked by the caller), releasing its claim. */
export async function finishExecution (trx: Tx, tenantId: string, id: string, end: ExecutionEnd): Promise<void> {
  await updateRows(trx, 'automation_executions', { tenant_id: tenantId, id })
    .set({
      status: end.status,
      finished_at: end.finishedAt,
      claim_token: null,
      lease_until: null,
      conditions_met: end.conditionsMet ?? null,
      condition_results: end.conditionResults === undefined ? null : JSON.stringify(end.conditionResults),
      action_results: end.actionResults === undefined ? null : JSON.stringify(end.actionResults),
      error: end.error ?? null
    })
    .execute()
}

/** Replaces the stored trigger payload (cut down to what the rule's creator may see). */
export async function replaceTriggerPayload (
  trx: Tx,
  tenantId: string,
  id: string,
  payload: Record<string, unknown>
): Promise<void> {
  await updateRows(trx, 'automation_executions', { tenant_id: tenantId, id })
    .set({ trigger_payload: JSON.stringify(payload) })
    .execute()
}

/** How a failed attempt leaves an execution: failed for good, or queued for the next attempt. */
export interface AttemptFailure {
  giveUp: boolean
  finishedAt: Date
  error: string
  /** the results of the actions up to the one that failed */
  actionResults?: unknown[] | undefined
}

/**
 * Records a failed attempt of an execution still held under `claimToken` and releases the claim; the
 * rule's id, or undefined when another worker holds it now.
 */
export async function failAttempt (
  trx: Tx,
  tenantId: string,
  id: string,
  claimToken: string,
  f: AttemptFailure
): Promise<{ rule_id: string } | undefined> {
  return await updateRows(trx, 'automation_executions', { tenant_id: tenantId, id, claim_token: claimToken })
    .set({
      status: f.giveUp ? 'failed' : 'queued',
      finished_at: f.giveUp ? f.finishedAt : null,
      claim_token: null,
      lease_until: null,
      error: f.error,
      ...(f.actionResults !== undefined
        ? { action_results: JSON.stringify(f.actionResults), conditions_met: true }
        : {})
    })
    .returning('rule_id')
    .executeTakeFirst()
}

/**
 * Fails every tenant's executions whose last attempt's worker died (running, lease expired, no
 * attempts left); the failed ones.
 */
export async function failAbandonedExecutions (trx: Tx, now: Date, error: string) {
  return await trx.updateTable('automation_executions')
    .set({ status: 'failed', finished_at: now, claim_token: null, lease_until: null, error })
    .where('status', '=', 'running').where('lease_until', '<', now).whereRef('attempts', '>=', 'max_attempts')
    .returning(['tenant_id', 'rule_id', 'id']).execute()
}

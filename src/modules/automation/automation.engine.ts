/**
 * The automation engine (docs/automation.md): what the dispatcher (automation.dispatcher.ts), the scheduler
 * (automation.scheduler.ts) and the runner (automation.runner.ts) share: the engine itself (the database, the job
 * queue, the outbound allow list, the clock) and the queueing of an execution. src/workers.ts starts them in the
 * background (automation.workers.ts); tests drive each step directly with a clock of their own.
 *
 * Exactly-once effects: an execution row is unique per (tenant, rule, trigger occurrence). The
 * runner claims it (status running, a claim token and a lease) in one transaction, then applies
 * every database effect and marks it succeeded in a second transaction that first re-locks the row
 * and checks the claim. A worker that dies leaves no effect; after the lease (= the pg-boss job
 * expiry) another worker re-claims the row. Webhooks are called inside that second transaction,
 * so a rolled-back attempt may have delivered one already: receivers deduplicate by
 * `Automation-Execution` (at-least-once delivery).
 */
import type { Kysely } from 'kysely'
import type { Config } from '../../config.ts'
import type { Database } from '../../platform/db/database.ts'
import { type Tx } from '../../platform/db/tenant.ts'
import * as executions from './automation.executions.repository.ts'
import { createJobQueue, MAX_ATTEMPTS, type JobQueue } from './automation.queue.ts'
import type { ExecutionRow, RuleRow } from './automation.table.ts'
import { allowListOf, type AllowList } from '../../platform/http/outbound.ts'

/** Domain events caused by automation carry depth + 1; a trigger at this depth runs nothing (skipped). */
export const MAX_DEPTH = 3

export interface Engine {
  db: Kysely<Database>
  queue: JobQueue
  allow: AllowList
  now: () => Date
  webhookTimeoutMs?: number
  /** failed executions in a row after which a rule is paused (AUTOMATION_PAUSE_AFTER_FAILURES); 0 = never; default 5 */
  pauseAfterFailures?: number
}

/** Failed executions in a row after which a rule is paused, unless the deployment says otherwise. */
export const PAUSE_AFTER_FAILURES = 5

declare module '../../platform/app-context.ts' {
  interface Engines {
    /** the automation engine: dispatcher, scheduler and runner (`ctx.engines.automation`) */
    automation: Engine
  }
}

/**
 * The engine of an app: the job queue keeps its own schema and works across tenants, so it uses the worker login
 * (`systemDb`), never the request login.
 */
export function createAutomationEngine (
  db: Kysely<Database>,
  systemDb: Kysely<Database>,
  config: Pick<Config, 'automationWebhookAllow' | 'automationPauseAfterFailures'>
): Engine {
  return {
    db,
    queue: createJobQueue(systemDb),
    allow: allowListOf(config.automationWebhookAllow),
    now: () => new Date(),
    pauseAfterFailures: config.automationPauseAfterFailures
  }
}

type Json = Record<string, unknown>

// ---- matching

export function scopeMatches (rule: RuleRow, payload: Json): boolean {
  const id = (v: unknown) => v === undefined || v === null ? undefined : String(v)
  switch (rule.scope) {
    case 'EVENT': return rule.scope_id === null || id(payload.event_id) === rule.scope_id
    case 'SPACE': return rule.scope_id === null || id(payload.space_id) === rule.scope_id
    case 'CONTACT': return rule.scope_id === null || id(payload.contact_id) === rule.scope_id
    case 'GLOBAL': return true
  }
}

/**
 * Creates the execution of a rule for a trigger occurrence (once) and sends its job. The execution
 * is pinned to the rule's version as read here: the runner runs that version's snapshot.
 */
export async function enqueueExecution (
  trx: Tx,
  engine: Engine,
  tenantId: string,
  rule: Pick<RuleRow, 'id' | 'version'>,
  v: Omit<executions.ExecutionValues, 'ruleId' | 'ruleVersion' | 'maxAttempts'>
): Promise<ExecutionRow | undefined> {
  const row = await executions.insertExecution(trx, tenantId, {
    ...v,
    ruleId: rule.id,
    ruleVersion: rule.version,
    maxAttempts: MAX_ATTEMPTS
  })
  if (row !== undefined && row.status === 'queued') await engine.queue.send(trx, { tenantId, executionId: row.id })
  return row
}

/**
 * Queues a new attempt of a failed execution: a new execution of the same rule version, trigger
 * payload and depth, linked by `retry_of`, with the key `retry:<failed id>` (unique per rule, so a
 * failed execution is retried at most once; the retry itself may be retried if it fails).
 */
export async function enqueueRetry (
  trx: Tx,
  engine: Engine,
  tenantId: string,
  failed: ExecutionRow
): Promise<ExecutionRow | undefined> {
  const row = await executions.insertExecution(trx, tenantId, {
    ruleId: failed.rule_id,
    ruleVersion: failed.rule_version,
    retryOf: failed.id,
    triggerKey: `retry:${failed.id}`,
    triggerType: failed.trigger_type,
    payload: failed.trigger_payload,
    depth: failed.depth,
    maxAttempts: MAX_ATTEMPTS
  })
  if (row !== undefined && row.status === 'queued') await engine.queue.send(trx, { tenantId, executionId: row.id })
  return row
}

/**
 * The dispatcher of the automation engine: the outbox's domain events → executions of the rules they trigger (only
 * those whose creator may be told of them: the outbound rule) and their jobs.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withSystem, type Tx } from '../../platform/db/tenant.ts'
import { shareAmongTenants, TenantWorkError } from '../../platform/tenant-batches.ts'
import { triggerTypesOf } from './automation.catalogue.ts'
import * as outbox from './automation.outbox.repository.ts'
import * as repo from './automation.repository.ts'
import { subjectOf } from './automation.run-as.ts'
import { asTheyAreNow, mayLearnOf } from '../disclosure/index.ts'
import { MAX_DEPTH, type Engine, scopeMatches, enqueueExecution } from './automation.engine.ts'

export interface DispatchResult { events: number, executions: number, skipped: number }

/**
 * Dispatches up to `limit` unprocessed outbox rows: creates an execution and a job for every
 * enabled rule whose trigger matches, and marks the rows processed. It claims per tenant so that
 * the lock is routed to one shard on Citus: first it finds, without locks, the tenants with
 * unprocessed rows (oldest row first, at most `limit`), then claims each tenant's rows in id order
 * (`tenant_id = $1 … for update skip locked`, so instances share the work and each row is
 * processed once) and processes them in a transaction of that tenant's own. The `limit` is shared
 * among the tenants (`shareAmongTenants`). Answers the totals of the tenants whose work was
 * committed; when some tenant's transaction failed, throws a `TenantWorkError` (carrying those
 * totals in `result`) after the other tenants were processed.
 */
export async function dispatchOutbox (engine: Engine, limit = 100): Promise<DispatchResult> {
  await engine.queue.ready()
  const result: DispatchResult = { events: 0, executions: 0, skipped: 0 }
  const tenants = await withSystem(engine.db, async trx => await outbox.tenantsWithUnprocessedOutbox(trx, limit))
  const seen = new Map<string, boolean>()
  const failures = await shareAmongTenants(tenants.map(r => r.tenant_id), limit, async (tenantId, n) => {
    const done = await withSystem(engine.db, async trx => await dispatchTenant(trx, engine, tenantId, n, seen))
    result.events += done.events
    result.executions += done.executions
    result.skipped += done.skipped
    return done.events
  })
  if (failures.length > 0) throw new TenantWorkError(failures, result, 'outbox dispatch')
  return result
}

/**
 * Claims up to `limit` unprocessed outbox rows of one tenant (skip locked), dispatches them and marks them processed.
 */
async function dispatchTenant (
  trx: Tx,
  engine: Engine,
  tenantId: string,
  limit: number,
  seen: Map<string, boolean>
): Promise<DispatchResult> {
  const rows = await outbox.claimOutboxRows(trx, tenantId, limit)
  const result: DispatchResult = { events: rows.length, executions: 0, skipped: 0 }
  const readers = new Map<string, AuthContext>()
  for (const row of rows) {
    const payload = row.payload
    const types = triggerTypesOf(row.topic, payload)
    const rules = await repo.enabledRulesOfTypes(trx, tenantId, types)
    for (const rule of rules.filter(r => scopeMatches(r, payload))) {
      // a rule acts as its creator: what they may not be told of (the outbound rule, disclosure/disclosure.ts) does not
      // trigger it, nor enter its history
      const reader = await asTheyAreNow(trx, subjectOf(rule, null), readers)
      if (!(await mayLearnOf(trx, reader, row.topic, payload, seen))) continue
      const tooDeep = row.depth >= MAX_DEPTH
      const created = await enqueueExecution(trx, engine, tenantId, rule, {
        triggerKey: `outbox:${row.id}`,
        triggerType: rule.event_type,
        payload: {
          ...payload,
          topic: row.topic,
          aggregate_type: row.aggregate_type,
          aggregate_id: row.aggregate_id,
          actor_id: row.actor_id,
          occurred_at: row.created_at.toISOString()
        },
        depth: row.depth,
        ...(tooDeep ? { skipped: `automation chain depth limit (${MAX_DEPTH}) reached` } : {})
      })
      if (created !== undefined) {
        if (tooDeep) result.skipped++
        else result.executions++
      }
    }
  }
  if (rows.length > 0) await outbox.markOutboxProcessed(trx, tenantId, rows.map(r => r.id))
  return result
}

// ---- scheduler

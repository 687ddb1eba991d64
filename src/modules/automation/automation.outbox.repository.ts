/**
 * The dispatcher's SQL over the outbox (src/platform/outbox.ts): which tenants have domain events
 * to dispatch, claiming a tenant's events, and marking them processed.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'

/** Up to `limit` tenants with unprocessed outbox rows, oldest row first, without locks (system transaction). */
export async function tenantsWithUnprocessedOutbox (trx: Tx, limit: number): Promise<Array<{ tenant_id: string }>> {
  return await trx.selectFrom('outbox').select('tenant_id')
    .where('processed_at', 'is', null)
    .groupBy('tenant_id').orderBy(sql`min(id)`).limit(limit)
    .execute()
}

/**
 * Locks up to `limit` unprocessed outbox rows of a tenant in id order, skipping rows another
 * dispatcher holds (each row is processed once).
 */
export async function claimOutboxRows (trx: Tx, tenantId: string, limit: number) {
  return await trx
    .selectFrom('outbox')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('processed_at', 'is', null)
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute()
}

/** Marks a tenant's outbox rows processed. */
export async function markOutboxProcessed (trx: Tx, tenantId: string, ids: number[]): Promise<void> {
  await trx
    .updateTable('outbox')
    .set({ processed_at: sql`now()` })
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${ids}::bigint[])`)
    .where('processed_at', 'is', null)
    .execute()
}

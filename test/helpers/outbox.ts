/**
 * What a tenant's requests left behind to be sent: the domain events of the outbox and the
 * notifications queued in `notification_outbox`, read (and made due) through SQL.
 */
import { sql } from 'kysely'
import type { TestApp } from './build-app.ts'
import { withTenant } from '../../src/platform/db/tenant.ts'

/** A tenant's domain events whose topic starts with `prefix`, oldest first, with every column. */
export async function outboxEvents (t: TestApp, tenantId: string, prefix = '') {
  return await withTenant(t.ctx.db, { tenantId }, async trx =>
    await trx
      .selectFrom('outbox')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('topic', 'like', `${prefix.replace(/[\\%_]/g, m => `\\${m}`)}%`)
      .orderBy('id')
      .execute()
  )
}

/** The topics of a tenant's domain events (those starting with `prefix`), oldest first. */
export async function outboxTopics (t: TestApp, tenantId: string, prefix = ''): Promise<string[]> {
  return (await outboxEvents(t, tenantId, prefix)).map(e => e.topic)
}

/** The notifications queued for a tenant, oldest first, with every column. */
export async function queuedNotifications (t: TestApp, tenantId: string) {
  return await withTenant(t.ctx.db, { tenantId }, async trx =>
    await trx.selectFrom('notification_outbox').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute()
  )
}

/** Makes a tenant's notifications due now: the delivery's backoff (`next_attempt_at`) is dropped. */
export async function makeNotificationsDue (t: TestApp, tenantId: string): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx
      .updateTable('notification_outbox')
      .set({ payload: sql`payload - 'next_attempt_at'` })
      .where('tenant_id', '=', tenantId)
      .execute()
  })
}

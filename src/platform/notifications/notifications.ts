/**
 * Notifications to people (invitations, publish notices, automation messages). A request only
 * ever inserts a row into `notification_outbox` (`queueNotification`, in the request's
 * transaction, so a rolled-back change notifies nobody); a delivery loop picks pending rows with
 * `for update skip locked`, hands them to a `NotificationSender` and marks them sent, or retries
 * them with backoff until MAX_ATTEMPTS and then marks them failed. Decisions: docs/notifications.md.
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../db/database.ts'
import { withSystem, type Tx } from '../db/tenant.ts'

export const NOTIFICATION_CHANNELS = ['email', 'push', 'sms'] as const
export type NotificationChannel = typeof NOTIFICATION_CHANNELS[number]

/** One notification handed to a sender. */
export interface Notification {
  id: number
  tenantId: string
  channel: string
  recipient: string
  subject: string
  body: string
  priority: string
  payload: Record<string, unknown>
  attempts: number
}

/** Delivers one notification; a thrown error marks the attempt failed (retried with backoff). */
export interface NotificationSender {
  readonly name: string
  send (notification: Notification): Promise<void>
  close? (): Promise<void>
}

export interface QueuedNotification {
  tenantId: string
  channel: string
  recipient: string
  subject: string
  body: string
  priority?: 'normal' | 'high' | undefined
  payload?: Record<string, unknown>
}

/**
 * Queues a notification in the caller's transaction.
 *
 * @example
 *   await queueNotification(trx, { tenantId, channel: 'email', recipient: 'ann@example.com', subject: 'Invitation', body: '…' })
 */
export async function queueNotification (trx: Tx, n: QueuedNotification): Promise<number> {
  const row = await trx.insertInto('notification_outbox').values({
    tenant_id: n.tenantId,
    channel: n.channel,
    recipient: n.recipient,
    subject: n.subject,
    body: n.body,
    priority: n.priority ?? 'normal',
    payload: sql`${JSON.stringify(n.payload ?? {})}::jsonb`
  }).returning('id').executeTakeFirstOrThrow()
  return row.id
}

/** Attempts before a row is marked `failed` for good. */
export const MAX_ATTEMPTS = 5
/** Wait before retry n (n = attempts so far): 30 s, 2 min, 8 min, 32 min. */
export const backoffSeconds = (attempts: number): number => 30 * 4 ** Math.max(0, attempts - 1)

export interface DeliveryResult { sent: number, retried: number, failed: number }

/**
 * Delivers up to `batchSize` due pending notifications of every tenant, in id order. Rows are
 * claimed with `for update skip locked`, so several processes may deliver at once without
 * sending a row twice; the rows stay locked while they are sent, in one transaction. A row whose
 * attempt failed waits `backoffSeconds(attempts)`: the due time is kept in `payload.next_attempt_at`
 * (the 0001 table has no column for it) and is not passed to the sender.
 */
export async function deliverPendingNotifications (db: Kysely<Database>, sender: NotificationSender, options: { batchSize?: number } = {}): Promise<DeliveryResult> {
  const batchSize = options.batchSize ?? 50
  const result: DeliveryResult = { sent: 0, retried: 0, failed: 0 }
  await withSystem(db, async (trx) => {
    const rows = await trx.selectFrom('notification_outbox')
      .select(['id', 'tenant_id', 'channel', 'recipient', 'subject', 'body', 'priority', 'payload', 'attempts'])
      .where('status', '=', 'pending')
      .where(sql<boolean>`coalesce((payload->>'next_attempt_at')::timestamptz, '-infinity') <= now()`)
      .orderBy('id')
      .limit(batchSize)
      .forUpdate().skipLocked()
      .execute()
    for (const row of rows) {
      const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as Record<string, unknown>
      const { next_attempt_at: _next, ...content } = payload
      try {
        await sender.send({
          id: row.id,
          tenantId: row.tenant_id,
          channel: row.channel,
          recipient: row.recipient,
          subject: row.subject,
          body: row.body,
          priority: row.priority,
          payload: content,
          attempts: row.attempts
        })
        await trx.updateTable('notification_outbox')
          .set({ status: 'sent', sent_at: sql`now()`, attempts: row.attempts + 1, last_error: null })
          .where('tenant_id', '=', row.tenant_id).where('id', '=', row.id).execute()
        result.sent++
      } catch (err) {
        const attempts = row.attempts + 1
        const message = (err instanceof Error ? err.message : String(err)).slice(0, 1000)
        const final = attempts >= MAX_ATTEMPTS
        await trx.updateTable('notification_outbox')
          .set({
            status: final ? 'failed' : 'pending',
            attempts,
            last_error: message,
            payload: sql`${JSON.stringify(payload)}::jsonb || jsonb_build_object('next_attempt_at', now() + make_interval(secs => ${backoffSeconds(attempts)}))`
          })
          .where('tenant_id', '=', row.tenant_id).where('id', '=', row.id).execute()
        if (final) result.failed++
        else result.retried++
      }
    }
  })
  return result
}

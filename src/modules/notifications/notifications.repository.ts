/** SQL of the notifications module: the tenant's notification outbox as administrators list it. */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { NotificationStatus } from '../../platform/notifications/notifications.ts'
import type { ListNotificationsQuery } from './notifications.schemas.ts'

const COLUMNS = [
  'id',
  'channel',
  'recipient',
  'subject',
  'priority',
  'attempts',
  'last_error',
  'created_at',
  'sent_at',
  sql<NotificationStatus>`status`.as('status'),
  sql<string | null>`payload->>'kind'`.as('kind'),
  sql<Date | null>`case when status = 'pending' then (payload->>'next_attempt_at')::timestamptz end`.as(
    'next_attempt_at'
  )
] as const

const KEYS: KeyColumn[] = [{ ref: 'id', dir: 'desc', type: 'int' }]

/** A page of the tenant's notifications, newest first, with the filters' total. */
export async function listNotifications (trx: Tx, tenantId: string, q: ListNotificationsQuery) {
  const window = pageWindow(q, listScope('notifications', {
    status: q.status, channel: q.channel, after: q.created_after, before: q.created_before
  }), KEYS)
  let base = trx.selectFrom('notification_outbox').where('tenant_id', '=', tenantId)
  if (q.status !== undefined) base = base.where('status', '=', q.status)
  if (q.channel !== undefined) base = base.where('channel', '=', q.channel)
  if (q.created_after !== undefined) base = base.where('created_at', '>=', new Date(q.created_after))
  if (q.created_before !== undefined) base = base.where('created_at', '<', new Date(q.created_before))
  return await listPage(base, qb => qb.select(COLUMNS), KEYS, window)
}

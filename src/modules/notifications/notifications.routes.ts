/**
 * Notifications as administrators see them: `GET /api/v1/notifications` lists the tenant's
 * notification outbox, newest first, filtered by status, channel and time, so that failed and
 * undeliverable notifications are visible (docs/notifications.md, "Seeing what failed"). Tenant
 * admins only (`notification:read` → `tenant:admin`). The rows are written by
 * `src/platform/notifications/` and the modules that queue notifications; this module only reads.
 */
import { sql } from 'kysely'
import { defineModule } from '../../platform/app-context.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { invalidField } from '../../platform/http/errors.ts'
import { afterKey, listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { NotificationStatus } from '../../platform/notifications/notifications.ts'
import { requirePolicy } from '../policy/policy.ts'
import { ListNotificationsQuery, PagedBodyNotification } from './notifications.schemas.ts'

const tags = ['Notifications']

const KEYS: KeyColumn[] = [{ ref: 'id', dir: 'desc', type: 'int' }]

async function listNotifications (trx: Tx, tenantId: string, q: ListNotificationsQuery) {
  const window = pageWindow(q, listScope('notifications', {
    status: q.status, channel: q.channel, after: q.created_after, before: q.created_before
  }), KEYS)
  let base = trx.selectFrom('notification_outbox').where('tenant_id', '=', tenantId)
  if (q.status !== undefined) base = base.where('status', '=', q.status)
  if (q.channel !== undefined) base = base.where('channel', '=', q.channel)
  if (q.created_after !== undefined) base = base.where('created_at', '>=', new Date(q.created_after))
  if (q.created_before !== undefined) base = base.where('created_at', '<', new Date(q.created_before))
  const [rows, count] = await Promise.all([
    base
      .select([
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
      ])
      .$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, KEYS, window.after ?? [])))
      .orderBy('id', 'desc')
      .limit(window.limit)
      .offset(window.offset)
      .execute(),
    base.select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return { ...pageOf(rows, window, r => [r.id]), total: Number(count.n) }
}

export const notificationsModule = defineModule(async (app, { db }) => {
  app.get('/api/v1/notifications', {
    schema: {
      operationId: 'list-notifications',
      summary: 'List the tenant\'s notifications, newest first, by status, channel and time (tenant admins)',
      tags,
      querystring: ListNotificationsQuery,
      response: { 200: PagedBodyNotification }
    },
    onRequest: requirePolicy('notification', 'read')
  }, async (request) => {
    const q = request.query
    if (
      q.created_after !== undefined &&
      q.created_before !== undefined &&
      Date.parse(q.created_before) < Date.parse(q.created_after)
    ) {
      throw invalidField('query.created_before', 'expected created_before >= created_after', q.created_before)
    }
    const found = await withTenant(db, request.auth, trx => listNotifications(trx, request.auth.tenantId, q))
    return { ...found, size: q.size }
  })
})

/** SQL of the notifications module: the tenant's notification outbox as administrators list it. */
import { sql } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { NotificationStatus } from '../../platform/notifications/notifications.ts'
import { visibleTo } from '../contacts/index.ts'
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

/**
 * A page of the tenant's notifications, newest first, with the filters' total. A recipient that is the address (or
 * the `contact:<id>`) of contacts the caller may not read, and of none they may, is shown as `withheld`, and so is a
 * failure text that names it: the outbound rule (docs/security.md), with the contacts' own `visibleTo`.
 */
export async function listNotifications (trx: Tx, auth: AuthContext, q: ListNotificationsQuery) {
  const window = pageWindow(q, listScope('notifications', {
    status: q.status, channel: q.channel, after: q.created_after, before: q.created_before
  }), KEYS)
  let base = trx.selectFrom('notification_outbox').where('tenant_id', '=', auth.tenantId)
  if (q.status !== undefined) base = base.where('status', '=', q.status)
  if (q.channel !== undefined) base = base.where('channel', '=', q.channel)
  if (q.created_after !== undefined) base = base.where('created_at', '>=', new Date(q.created_after))
  if (q.created_before !== undefined) base = base.where('created_at', '<', new Date(q.created_before))
  const page = await listPage(trx, base, qb => qb.select(COLUMNS), KEYS, window)
  const hidden = await hiddenRecipients(trx, auth, page.items.map(r => r.recipient))
  if (hidden.size === 0) return page
  return {
    ...page,
    items: page.items.map(r => {
      if (!hidden.has(r.recipient.toLowerCase())) return r
      const error = r.last_error !== null && r.last_error.toLowerCase().includes(r.recipient.toLowerCase())
        ? 'withheld'
        : r.last_error
      return { ...r, recipient: 'withheld', last_error: error }
    })
  }
}

/** Of these recipients (lower-cased), those that name contacts the caller may not read, and none they may. */
async function hiddenRecipients (trx: Tx, auth: AuthContext, recipients: string[]): Promise<Set<string>> {
  const emails = [...new Set(recipients.filter(r => r.includes('@')).map(r => r.toLowerCase()))]
  const ids = [...new Set(recipients.flatMap(r => {
    const id = /^contact:([0-9a-f-]{36})$/i.exec(r)?.[1]
    return id === undefined ? [] : [id.toLowerCase()]
  }))]
  if (emails.length === 0 && ids.length === 0) return new Set()
  const rows = await trx.selectFrom('contacts')
    .select(eb => [
      sql<string | null>`lower(email)`.as('email'),
      sql<string>`id::text`.as('id'),
      sql<boolean>`${visibleTo(eb, auth)}`.as('visible')
    ])
    .where('tenant_id', '=', auth.tenantId)
    .where(sql<boolean>`(lower(email) = any(${emails}::text[]) or id = any(${ids}::uuid[]))`)
    .execute()
  const seen = new Map<string, boolean>()
  for (const r of rows) {
    for (const key of [r.email, `contact:${r.id}`]) {
      if (key === null) continue
      seen.set(key, (seen.get(key) ?? false) || r.visible === true)
    }
  }
  return new Set([...seen].filter(([, visible]) => !visible).map(([key]) => key))
}

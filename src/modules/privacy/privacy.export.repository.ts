/**
 * The SQL of the data-subject exports (privacy.export.ts; docs/privacy.md, "Export"): each section is one statement
 * naming the tenant, at most `limit + 1` rows (the extra row only says that the section was cut).
 */
import { sql, type RawBuilder } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { naming, textOf, type Needles, type TraceTable } from './privacy.erase.repository.ts'

type Row = Record<string, unknown>

/** Columns never exported: the tenant (the caller's own), keys computed from others, secrets' hashes. */
const HIDDEN = new Set([
  'tenant_id', 'search_text', 'phone_primary_rev', 'phone_secondary_rev', 'phone_work_rev', 'email_key',
  'name_company_key', 'check_in_token_hash', 'token_hash', 'invite_token_hash', 'secret', 'previous_secret',
  'claim_token', 'request_hash'
])

const shown = (rows: readonly Row[]): Row[] =>
  rows.map(r => Object.fromEntries(Object.entries(r).filter(([k]) => !HIDDEN.has(k))))

export async function contactRow (trx: Tx, tenantId: string, id: string): Promise<Row | undefined> {
  const r = await sql<Row>`select * from contacts where tenant_id = ${tenantId} and id = ${id}::uuid`.execute(trx)
  return shown(r.rows)[0]
}

/** The contact's attendances with the event or series they are of (title and start). */
export async function attendances (trx: Tx, tenantId: string, contactId: string, limit: number) {
  const r = await sql<Row>`
    select a.*, e.title as event_title, e.start_dt as event_start, s.title as series_title
    from attendees a
    left join events e on e.tenant_id = a.tenant_id and e.id = a.event_id
    left join event_series s on s.tenant_id = a.tenant_id and s.id = a.series_id
    where a.tenant_id = ${tenantId} and a.contact_id = ${contactId}::uuid
    order by a.id limit ${limit + 1}`.execute(trx)
  return shown(r.rows)
}

/** The questions each answered form version asked (the registration answers' context). */
export async function formVersions (trx: Tx, tenantId: string, ids: readonly number[]) {
  if (ids.length === 0) return []
  const r = await sql<Row>`select id, event_id, series_id, version, questions from registration_forms
    where tenant_id = ${tenantId} and id = any(${[...ids]}::bigint[])`.execute(trx)
  return r.rows
}

/** Every column of the rows of a table that name the person, in key order. */
export async function rowsNaming (
  trx: Tx, tenantId: string, table: TraceTable, n: Needles, limit: number, extra?: RawBuilder<boolean>
): Promise<Row[]> {
  const found = extra === undefined ? naming(textOf(table), n) : sql<boolean>`(${naming(textOf(table), n)} or ${extra})`
  const order = table === 'idempotency_keys' ? sql`created_at` : sql`id`
  const r = await sql<Row>`select * from ${sql.table(table)} where tenant_id = ${tenantId} and ${found}
    order by ${order} limit ${limit + 1}`.execute(trx)
  return shown(r.rows)
}

/** The sync log's rows of the contact and of its attendances (ids, owners, whether deleted). */
export async function syncRecords (
  trx: Tx, tenantId: string, contactIds: readonly string[], attendeeIds: readonly number[], limit: number
) {
  const r = await sql<Row>`select * from changes where tenant_id = ${tenantId}
    and ((kind = 'contact' and key = any(${[...contactIds]}::text[]))
      or (kind = 'attendee' and key = any(${attendeeIds.map(String)}::text[])))
    order by seq limit ${limit + 1}`.execute(trx)
  return shown(r.rows)
}

export async function spaceLinks (trx: Tx, tenantId: string, contactId: string, limit: number) {
  const r = await sql<Row>`select l.*, s.title as space_title from space_contacts l
    left join spaces s on s.tenant_id = l.tenant_id and s.id = l.space_id
    where l.tenant_id = ${tenantId} and l.contact_id = ${contactId}::uuid order by l.id limit ${limit + 1}`
    .execute(trx)
  return shown(r.rows)
}

export async function redirectsTo (trx: Tx, tenantId: string, contactId: string) {
  const r = await sql<Row>`select from_id, merged_at, merged_by from contact_redirects
    where tenant_id = ${tenantId} and to_id = ${contactId}::uuid order by from_id`.execute(trx)
  return r.rows
}

/** A user of the tenant: their profile (from the identity provider) and the claims their last token carried. */
export async function userOf (trx: Tx, tenantId: string, userId: string) {
  const profile = await sql<Row>`select * from users where tenant_id = ${tenantId} and id = ${userId}`.execute(trx)
  const claims = await sql<Row>`select * from user_claims where tenant_id = ${tenantId} and user_id = ${userId}`
    .execute(trx)
  return { profile: shown(profile.rows)[0], claims: shown(claims.rows)[0] }
}

/** The user's rows of a table (`column` names them), newest last. */
export async function rowsOfUser (
  trx: Tx, tenantId: string, table: UserTable, userId: string, limit: number
): Promise<Row[]> {
  const t = USER_TABLES[table]
  const columns = t.columns === '*' ? sql`*` : sql.join(t.columns.map(c => sql.ref(c)))
  const r = await sql<Row>`select ${columns} from ${sql.table(table)}
    where tenant_id = ${tenantId} and ${sql.ref(t.by)} = ${userId}
    order by ${sql.ref(t.order)} limit ${limit + 1}`.execute(trx)
  return shown(r.rows)
}

/**
 * What a user made or holds, by table: the column naming them, the order, and what is shown (of what they created,
 * its ids and titles: the rows hold other people's data, such as a contact's, which is theirs to ask for).
 */
export const USER_TABLES = {
  space_members: { by: 'user_id', order: 'created_at', columns: '*' },
  space_managers: { by: 'user_id', order: 'id', columns: '*' },
  event_managers: { by: 'user_id', order: 'id', columns: '*' },
  feed_tokens: { by: 'user_id', order: 'id', columns: '*' },
  events: { by: 'creator_id', order: 'id', columns: ['id', 'title', 'status', 'start_dt', 'created_at'] },
  event_series: { by: 'creator_id', order: 'id', columns: ['id', 'title', 'created_at'] },
  spaces: { by: 'creator_id', order: 'id', columns: ['id', 'title', 'created_at'] },
  automation_rules: { by: 'creator_id', order: 'created_at', columns: ['id', 'name', 'event_type', 'created_at'] },
  webhook_subscriptions: {
    by: 'created_by', order: 'created_at', columns: ['id', 'url', 'event_types', 'created_by_email', 'created_at']
  },
  contacts: { by: 'owner_id', order: 'created_at', columns: ['id', 'created_at'] }
} as const satisfies Record<string, { by: string, order: string, columns: '*' | readonly string[] }>
export type UserTable = keyof typeof USER_TABLES

/** Notifications to the user (by their address, or their id for other channels). */
export async function notificationsToUser (
  trx: Tx, tenantId: string, userId: string, email: string | null, limit: number
) {
  const to = [userId, ...(email !== null ? [email.trim().toLowerCase()] : [])]
  const r = await sql<Row>`select * from notification_outbox where tenant_id = ${tenantId}
    and lower(recipient) = any(${to.map(v => v.toLowerCase())}::text[]) order by id limit ${limit + 1}`.execute(trx)
  return shown(r.rows)
}

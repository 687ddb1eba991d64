/**
 * The SQL of a contact's erasure (privacy.erase.ts; docs/privacy.md, "Erasure"): every statement names the tenant, so
 * on a Citus cluster each is routed to the tenant's shard (the locks too). The rows that name the person are found
 * by their ids (the contact's and those it absorbed in merges) and by its strongest values (e-mail, phone numbers) in
 * the text of their JSON: the tables that hold payloads (outbox, webhook deliveries, executions, notifications,
 * idempotent answers) are read per tenant, bounded by their retention periods (docs/retention.md).
 */
import { sql, type RawBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { likePattern } from '../../platform/db/like.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { visibleTo } from '../contacts/index.ts'
import type { ErasureCounts, PrivacyTables } from './privacy.table.ts'

/** The statuses of an attendance that wait on the person (a place in line, an approval, a confirmation by mail). */
export const WAITING_STATUSES = ['waitlisted', 'pending', 'awaiting_confirmation'] as const

/** Rows changed by one multi-row UPDATE … FROM (VALUES …): well under PostgreSQL's 65 535 bind parameters. */
const ROWS_PER_UPDATE = 1000

/** What finds the rows naming a person in the text of a column: its ids and its strongest values, as LIKE patterns. */
export interface Needles {
  /** the contact's id and those it absorbed */
  ids: string[]
  /** lower-cased LIKE patterns (`%…%`) of the ids, the e-mail and the phone numbers */
  patterns: string[]
}

export function needlesOf (ids: readonly string[], values: ReadonlyArray<string | null>): Needles {
  const strong = values.filter((v): v is string => v !== null && v.trim().length >= 6).map(v => v.trim())
  return { ids: [...ids], patterns: [...new Set([...ids, ...strong].map(likePattern))] }
}

export const naming = (text: RawBuilder<unknown>, n: Needles) =>
  sql<boolean>`lower(${text}) like any(${n.patterns}::text[])`

/** The contact, locked, when the caller sees it (the contacts rule). */
export async function lockVisibleContact (trx: Tx, auth: AuthContext, id: string) {
  return await trx.selectFrom('contacts').selectAll()
    .where('tenant_id', '=', auth.tenantId).where('id', '=', id).where(eb => visibleTo(eb, auth))
    .forUpdate()
    .executeTakeFirst()
}

/** Whether a contact with that id was absorbed by a merge (its id redirects): such an id is no contact to erase. */
export async function isAbsorbed (trx: Tx, tenantId: string, id: string): Promise<boolean> {
  const r = await sql`select 1 from contact_redirects where tenant_id = ${tenantId} and from_id = ${id}::uuid`
    .execute(trx)
  return r.rows.length > 0
}

export async function findErasure (trx: Tx, tenantId: string, contactId: string) {
  return await trx.withTables<PrivacyTables>().selectFrom('erasures')
    .select(['contact_id', 'erased_at', 'erased_by', 'counts'])
    .where('tenant_id', '=', tenantId).where('contact_id', '=', contactId)
    .executeTakeFirst()
}

export async function insertErasure (
  trx: Tx, tenantId: string, contactId: string, erasedBy: string, counts: ErasureCounts
) {
  return await trx.withTables<PrivacyTables>().insertInto('erasures')
    .values({ tenant_id: tenantId, contact_id: contactId, erased_by: erasedBy, counts: JSON.stringify(counts) })
    .returning(['contact_id', 'erased_at', 'erased_by', 'counts'])
    .executeTakeFirstOrThrow()
}

/** The ids of the contacts merged into this one (their traces still name them). */
export async function absorbedIds (trx: Tx, tenantId: string, id: string): Promise<string[]> {
  const r = await sql<{ from_id: string }>`
    select from_id from contact_redirects where tenant_id = ${tenantId} and to_id = ${id}::uuid order by from_id`
    .execute(trx)
  return r.rows.map(x => x.from_id)
}

export async function deleteRedirects (trx: Tx, tenantId: string, id: string): Promise<number> {
  const r = await sql`delete from contact_redirects where tenant_id = ${tenantId} and to_id = ${id}::uuid`.execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

/** The contact's attendances (its own rows and its series-wide rows), locked. */
export async function lockAttendances (trx: Tx, tenantId: string, contactId: string) {
  return await trx.selectFrom('attendees')
    .select(['id', 'event_id', 'series_id', 'status', 'notes', 'answers'])
    .where('tenant_id', '=', tenantId).where('contact_id', '=', contactId)
    .orderBy('id')
    .forUpdate()
    .execute()
}

/**
 * Makes attendances anonymous: no contact, no personal column; a status that waits on the person becomes `declined`
 * (its place in line goes). The count of each kept status, seats included, stays as it was.
 */
export async function anonymiseAttendances (trx: Tx, tenantId: string, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0
  const r = await sql`
    update attendees set
      contact_id = null, notes = null, answers = null, answers_form_id = null, answers_updated_at = null,
      locale = null, calendar_digest = null, check_in_token_hash = null, check_in_token_issued_at = null,
      check_in_token_revoked_at = null, guest_responded_at = null,
      status = case when status in (${sql.join(WAITING_STATUSES)}) then 'declined' else status end,
      waitlist_position = case when status in (${sql.join(WAITING_STATUSES)}) then null else waitlist_position end,
      updated_at = now()
    where tenant_id = ${tenantId} and id = any(${[...ids]}::bigint[])`.execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

/** The guests' links of attendances (token hashes: nothing to keep once the person is gone). */
export async function deleteGuestTokens (trx: Tx, tenantId: string, attendeeIds: readonly number[]): Promise<number> {
  if (attendeeIds.length === 0) return 0
  const r = await sql`delete from guest_tokens where tenant_id = ${tenantId}
    and attendee_id = any(${[...attendeeIds]}::bigint[])`.execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

export async function deleteSpaceLinks (trx: Tx, tenantId: string, id: string): Promise<number> {
  const r = await sql`delete from space_contacts where tenant_id = ${tenantId} and contact_id = ${id}::uuid`
    .execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

export async function deleteContact (trx: Tx, tenantId: string, id: string): Promise<number> {
  const r = await sql`delete from contacts where tenant_id = ${tenantId} and id = ${id}::uuid`.execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

/** The sync log's tombstones of the contact (written by the delete's trigger: ids only). */
export async function tombstones (trx: Tx, tenantId: string, id: string): Promise<number> {
  const r = await sql<{ n: number }>`select count(*)::int as n from changes
    where tenant_id = ${tenantId} and kind = 'contact' and key = ${id} and deleted`.execute(trx)
  return r.rows[0]?.n ?? 0
}

/** A row of a table holding JSON or text about people: its key and the columns an erasure rewrites. */
export interface TraceRow { id: string, [column: string]: unknown }

/** The tables whose rows an erasure scrubs in place, their key, and the columns it rewrites. */
export const TRACE_TABLES = {
  outbox: { key: 'id', keyType: 'bigint', json: ['payload'], text: [] },
  webhook_deliveries: { key: 'id', keyType: 'uuid', json: ['body'], text: ['last_error'] },
  automation_executions: {
    key: 'id', keyType: 'uuid', json: ['trigger_payload', 'condition_results', 'action_results'], text: ['error']
  },
  notification_outbox: { key: 'id', keyType: 'bigint', json: ['payload'], text: ['recipient', 'subject', 'body'] },
  event_activity: { key: 'id', keyType: 'bigint', json: ['payload'], text: [] },
  space_activity: { key: 'id', keyType: 'bigint', json: [], text: ['title', 'message'] },
  // a key is the caller's: the row is named by both
  idempotency_keys: { key: ['user_id', 'key'], keyType: 'text', json: [], text: ['response_body'] }
} as const satisfies Record<string, {
  key: string | readonly string[], keyType: string, json: readonly string[], text: readonly string[]
}>
export type TraceTable = keyof typeof TRACE_TABLES

/**
 * A row's key equal to `k`, a text as `keyOf` writes it (`alias`: of the table in the statement): the key column
 * compared in its own type, so the primary key's index finds the row.
 */
function keyIs (table: TraceTable, alias: string, k: RawBuilder<unknown>): RawBuilder<boolean> {
  const t = TRACE_TABLES[table]
  const key: string | readonly string[] = t.key
  if (typeof key === 'string') return sql<boolean>`${sql.ref(`${alias}.${key}`)} = ${k}::${sql.raw(t.keyType)}`
  const [first, second] = key
  if (first === undefined || second === undefined) throw new Error(`a key of two columns expected: ${table}`)
  return sql<boolean>`(${sql.ref(`${alias}.${first}`)} = split_part(${k}, chr(10), 1)
    and ${sql.ref(`${alias}.${second}`)} = substr(${k}, length(split_part(${k}, chr(10), 1)) + 2))`
}

/** The key of a table's rows as one text (`alias`: of the table in the statement). */
function keyOf (table: TraceTable, alias?: string): RawBuilder<unknown> {
  const key: string | readonly string[] = TRACE_TABLES[table].key
  const ref = (c: string) => sql.ref(alias === undefined ? c : `${alias}.${c}`)
  return typeof key === 'string'
    ? sql`${ref(key)}::text`
    : sql`(${sql.join(key.map(c => ref(c)), sql` || chr(10) || `)})`
}

/** All the rewritten columns of a table as one text, for the search by needles. */
export function textOf (table: TraceTable): RawBuilder<unknown> {
  const t = TRACE_TABLES[table]
  const parts = [
    ...t.json.map(c => sql`coalesce(${sql.ref(c)}::text, '')`),
    ...t.text.map(c => sql`coalesce(${sql.ref(c)}, '')`)
  ]
  return sql`(${sql.join(parts, sql` || ' ' || `)})`
}

function columnsOf (table: TraceTable) {
  const t = TRACE_TABLES[table]
  return sql.join([sql`${keyOf(table)} as id`, ...[...t.json, ...t.text].map(c => sql.ref(c))])
}

/**
 * The rows of a table that name the person (`extra`: a condition of its own, such as a notification's attendee),
 * locked (`for update` of the tenant's rows), with the columns an erasure rewrites. `limit`: at most so many (an
 * export), in key order.
 */
export async function rowsNaming (
  trx: Tx, tenantId: string, table: TraceTable, n: Needles, o: { extra?: RawBuilder<boolean>, lock?: boolean } = {}
): Promise<TraceRow[]> {
  const named = naming(textOf(table), n)
  const found = o.extra === undefined ? named : sql<boolean>`(${named} or ${o.extra})`
  // the statement names the tenant (`where tenant_id =` above the lock): the lock stays on the tenant's rows
  // eslint-disable-next-line citus/statement-shapes -- the fragment is the tail of a statement filtered by tenant_id
  const lock = o.lock === true ? sql`for update` : sql``
  const r = await sql<TraceRow>`select ${columnsOf(table)} from ${sql.table(table)}
    where tenant_id = ${tenantId} and ${found}
    order by 1
    ${lock}`.execute(trx)
  return r.rows
}

/** Rewrites the columns of rows by key (`rows` hold the new values: JSON as values, text as strings). */
export async function rewriteRows (trx: Tx, tenantId: string, table: TraceTable, rows: readonly TraceRow[]) {
  const t = TRACE_TABLES[table]
  const columns: string[] = [...t.json, ...t.text]
  for (let i = 0; i < rows.length; i += ROWS_PER_UPDATE) {
    const chunk = rows.slice(i, i + ROWS_PER_UPDATE)
    const values = chunk.map(row => sql`(${sql.join([
      sql`${row.id}::text`,
      ...t.json.map(c => sql`${row[c] === null || row[c] === undefined ? null : JSON.stringify(row[c])}::jsonb`),
      ...t.text.map(c => sql`${(row[c] as string | null | undefined) ?? null}::text`)
    ])})`)
    const sets = columns.map(c => sql`${sql.ref(c)} = ${sql.ref(`v.${c}`)}`)
    await sql`update ${sql.table(table)} as x set ${sql.join(sets)}
      from (values ${sql.join(values)}) as v(${sql.join([sql.ref('k'), ...columns.map(c => sql.ref(c))])})
      where x.tenant_id = ${tenantId} and ${keyIs(table, 'x', sql.ref('v.k'))}`.execute(trx)
  }
}

/** Deletes notifications by id (those to the person). */
export async function deleteNotifications (trx: Tx, tenantId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await sql`delete from notification_outbox where tenant_id = ${tenantId} and id = any(${[...ids]}::bigint[])`
    .execute(trx)
}

/**
 * A notification's own naming of the person: its attendee, the contact in its payload, or the run of a rule whose
 * trigger named the person (a rule's message is rendered from the trigger's payload).
 */
export const notificationOf = (n: Needles, attendeeIds: readonly number[], executionIds: readonly string[]) =>
  sql<boolean>`(
    payload ->> 'contact_id' = any(${n.ids}::text[])
    or payload ->> 'attendee_id' = any(${attendeeIds.map(String)}::text[])
    or payload ->> 'execution_id' = any(${[...executionIds]}::text[]))`

/** Space activity about the contact (a link added or removed). */
export const spaceActivityOf = (n: Needles) =>
  sql<boolean>`(type = 'contact' and resource_id = any(${n.ids}::text[]))`

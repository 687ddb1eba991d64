/**
 * All SQL of attendees. Rows of one occurrence carry event_id (always the published row's id);
 * rows with series_id and no event_id attend every occurrence of a series (written by the series
 * module, listed here read-only).
 */
import { expressionBuilder, sql, type Expression, type SqlBool } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { digestEtag } from '../../platform/http/conditional.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { creationOrder, listScope, pageWindow, type PageParams } from '../../platform/http/cursor.ts'
import { readChanges } from '../../platform/sync/sync.repository.ts'
import type { ChangesWindow } from '../../platform/sync/sync.ts'
import { visibleTo as contactVisibleTo } from '../contacts/index.ts'
import {
  ATTENDEE_STATUSES, type AttendeeRow, type AttendeeStatus, type AttendeesTables
} from './attendees.table.ts'

export const ATTENDEE_COLUMNS = [
  'id', 'event_id', 'series_id', 'contact_id', 'org_id', 'status', 'notes', 'is_checked_in', 'checked_in_at',
  'invited_at', 'responded_at', 'created_at', 'updated_at', 'waitlist_position', 'approved_at', 'approved_by',
  'checked_in_by', 'check_in_method', 'checked_out_at', 'checked_out_by', 'check_in_token_issued_at',
  'check_in_token_revoked_at', 'source', 'invitation_sent_at', 'guest_responded_at', 'locale', 'updates_unsubscribed_at'
] as const

/** What the attendee list and its sync show besides: the guest's answers (attendees:read; docs/guests.md). */
const LISTED_COLUMNS = [...ATTENDEE_COLUMNS, 'answers', 'answers_updated_at'] as const

/** The ETag of an attendee (no revision column): a digest of its stored values (conditional.ts). */
export const attendeeEtag = (row: { [K in (typeof ATTENDEE_COLUMNS)[number]]: unknown }): string =>
  digestEtag(ATTENDEE_COLUMNS.map(c => row[c]))

/** `contact_id` is one of `ids`: one array parameter, however many ids (the statement stays the same). */
const anyContact = (ids: readonly string[]) => sql<boolean>`contact_id = any(${[...ids]}::uuid[])`

/** An occurrence (or a single event) and its series, if any: whose attendees, attachments and links are read. */
export interface OccurrenceRef {
  id: number
  seriesId: number | null
}

/**
 * The rows of an occurrence and those of its series (no event_id: they hold for every occurrence). Attendees,
 * attachments and links name their occurrence and their series alike.
 */
export function ofEventOrSeries (event: OccurrenceRef): Expression<SqlBool> {
  const eb = expressionBuilder<AttendeesTables, 'attendees'>()
  return event.seriesId === null
    ? eb('event_id', '=', event.id)
    : eb.or([
      eb('event_id', '=', event.id),
      eb.and([eb('event_id', 'is', null), eb('series_id', '=', event.seriesId)])
    ])
}

const ATTENDEE_KEYS = creationOrder('asc')

/** A page of an event's attendees (its own and its series'), oldest first; the total and the next page's cursor. */
export async function listAttendees (
  trx: Tx,
  tenantId: string,
  event: OccurrenceRef,
  o: PageParams & { status?: AttendeeStatus | undefined }
) {
  const window = pageWindow(o, listScope('attendees', { event: event.id, status: o.status }), ATTENDEE_KEYS)
  const base = trx
    .selectFrom('attendees')
    .where('tenant_id', '=', tenantId)
    .where(ofEventOrSeries(event))
    .$if(o.status !== undefined, qb => qb.where('status', '=', o.status ?? 'invited'))
  return await listPage(trx, base, qb => qb.select(LISTED_COLUMNS), ATTENDEE_KEYS, window)
}

/**
 * A page of the changes of an event's attendees list since a sync point (docs/integrations.md, "Incremental
 * sync"): the attendees of the occurrence and of its series changed above the position `since`, each once at
 * its latest change, by position; those in the list now (its status filter) as rows, the others as tombstones. The
 * caller may read the event's attendees (checked before), so every change of the list is theirs to learn.
 */
export async function listAttendeeChanges (
  trx: Tx,
  tenantId: string,
  event: OccurrenceRef,
  o: ChangesWindow & { status?: AttendeeStatus | undefined }
) {
  const parents = [`event:${event.id}`, ...(event.seriesId !== null ? [`series:${event.seriesId}`] : [])]
  return await readChanges(trx, {
    tenantId,
    kind: 'attendee',
    since: o.since,
    after: o.after,
    upto: o.upto,
    size: o.size,
    where: sql<SqlBool>`parent = any(${parents}::text[])`,
    id: Number,
    rows: async ids => await trx.selectFrom('attendees').select(LISTED_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where(ofEventOrSeries(event))
      .where('id', 'in', ids)
      .$if(o.status !== undefined, qb => qb.where('status', '=', o.status ?? 'invited'))
      .execute()
  })
}

/** Attendee counts of an event by status (index attendees_event_status). */
export async function countByStatus (
  trx: Tx,
  tenantId: string,
  eventId: number
): Promise<Record<AttendeeStatus, number>> {
  const rows = await trx
    .selectFrom('attendees')
    .select(['status', eb => eb.fn.countAll<number>().as('n')])
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .groupBy('status')
    .execute()
  const out = Object.fromEntries(ATTENDEE_STATUSES.map(s => [s, 0])) as Record<AttendeeStatus, number>
  for (const r of rows) out[r.status] = Number(r.n)
  return out
}

export async function lockAttendee (trx: Tx, tenantId: string, eventId: number, contactId: string) {
  return await trx.selectFrom('attendees').select(ATTENDEE_COLUMNS)
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('contact_id', '=', contactId)
    .forUpdate().executeTakeFirst()
}

/** Which of the ids are contacts the caller may see (contacts visibility rule). */
export async function visibleContactIds (trx: Tx, auth: AuthContext, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await trx.selectFrom('contacts').select('id')
    .where(sql<boolean>`id = any(${[...new Set(ids)]}::uuid[])`).where(eb => contactVisibleTo(eb, auth))
    .execute()
  return new Set(rows.map(r => r.id))
}

/**
 * Adds the contacts not attending yet (one already attending, or named twice, is left as it is:
 * ON CONFLICT DO NOTHING), each with the status (and waitlist position) registration gave it;
 * returns the rows created, in the order given. Multi-row
 * `INSERT … VALUES`, one row per contact in request order, one statement per chunk of rows that
 * fits PostgreSQL's 65 535 bind parameters (one for any list a request may bring). VALUES rather
 * than INSERT…SELECT from `unnest` of the ids: the service runs on Citus, where INSERT…SELECT from
 * a function becomes a COPY that row-level security refuses.
 */
export async function insertAttendees (
  trx: Tx,
  v: {
    tenantId: string
    eventId: number
    orgId: string | null
    attendees: Array<{ contactId: string, status: AttendeeStatus, position: number | null }>
    notes?: string | null
    /** a public registration: its source and the guest's language (docs/guests.md) */
    registration?: { locale: string }
  }
): Promise<AttendeeRowCreated[]> {
  const registration = v.registration === undefined
    ? {}
    : { source: 'registration' as const, locale: v.registration.locale, registrations: 1 }
  const rows = v.attendees.map(a => ({
    ...registration,
    tenant_id: v.tenantId,
    event_id: v.eventId,
    org_id: v.orgId,
    contact_id: a.contactId,
    status: a.status,
    waitlist_position: a.position,
    notes: v.notes ?? null,
    is_checked_in: a.status === 'checked_in',
    checked_in_at: a.status === 'checked_in' ? sql<Date>`now()` : null
  }))
  const created: AttendeeRowCreated[] = []
  // 9 columns (12 for a registration), each at most one bind parameter
  for (const chunk of rowChunks(rows, v.registration === undefined ? 9 : 12)) {
    created.push(
      ...(await trx
        .insertInto('attendees')
        .values(chunk)
        .onConflict(oc => oc.columns(['tenant_id', 'event_id', 'contact_id']).doNothing())
        .returning(ATTENDEE_COLUMNS)
        .execute())
    )
  }
  return created
}
export type AttendeeRowCreated = Pick<AttendeeRow, (typeof ATTENDEE_COLUMNS)[number]>

/** The attendees of an event among `contactIds`, locked for a change (in id order), by contact. */
export async function lockAttendees (trx: Tx, tenantId: string, eventId: number, contactIds: readonly string[]) {
  if (contactIds.length === 0) return new Map<string, LockedAttendee>()
  const rows = await trx
    .selectFrom('attendees')
    .select(['contact_id', 'status', 'waitlist_position', 'approved_at'])
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .where(anyContact(contactIds))
    .orderBy('id')
    .forUpdate()
    .execute()
  return new Map(rows.map(r => [r.contact_id, r]))
}
export interface LockedAttendee {
  contact_id: string
  status: AttendeeStatus
  waitlist_position: number | null
  approved_at: Date | null
}

/** One attendee's new status, as registration placed it. */
export interface StatusWrite { contactId: string, status: AttendeeStatus, position: number | null }

/**
 * Writes the statuses registration decided (one statement per chunk of 1 000 attendees) and sets responded_at.
 * `checked_in` sets is_checked_in and keeps the first checked_in_at; any other status clears the check-in and
 * check-out fields. `approvedBy` records an approval. Returns the rows written.
 */
export async function writeStatuses (
  trx: Tx,
  tenantId: string,
  eventId: number,
  writes: readonly StatusWrite[],
  o: { notes?: string | null | undefined, approvedBy?: string | undefined } = {}
) {
  const out = []
  // the time of a first check-in is a parameter: Citus refuses now() inside a CASE of a write (docs/architecture.md)
  const at = new Date()
  for (let i = 0; i < writes.length; i += 1000) {
    const values = sql.join(writes.slice(i, i + 1000).map(w =>
      sql`(${w.contactId}::uuid, ${w.status}::text, ${w.position}::int)`))
    const inside = sql<boolean>`v.status = 'checked_in'`
    const rows = await sql<AttendeeRow>`
      update attendees a set
        status = v.status, waitlist_position = v.pos, is_checked_in = ${inside},
        checked_in_at = case when ${inside} then coalesce(a.checked_in_at, ${at}::timestamptz) end,
        checked_in_by = case when ${inside} then a.checked_in_by end,
        check_in_method = case when ${inside} then a.check_in_method end,
        status_before_check_in = case when ${inside} then coalesce(a.status_before_check_in,
          case when a.status = 'checked_in' then null else a.status end) end,
        checked_out_at = case when ${inside} then a.checked_out_at end,
        checked_out_by = case when ${inside} then a.checked_out_by end,
        responded_at = now(), updated_at = now()
        ${o.approvedBy !== undefined ? sql`, approved_at = now(), approved_by = ${o.approvedBy}` : sql``}
        ${o.notes !== undefined ? sql`, notes = ${o.notes}` : sql``}
      from (values ${values}) v(contact_id, status, pos)
      where a.tenant_id = ${tenantId} and a.event_id = ${eventId} and a.contact_id = v.contact_id
      returning ${sql.join(ATTENDEE_COLUMNS.map(c => sql.ref(`a.${c}`)))}`.execute(trx)
    out.push(...rows.rows)
  }
  return out
}

/** Deletes attendees (optionally only those in a status); returns the rows removed. */
export async function deleteAttendees (
  trx: Tx,
  tenantId: string,
  eventId: number,
  contactIds: string[],
  status?: AttendeeStatus
) {
  if (contactIds.length === 0) return []
  return await trx
    .deleteFrom('attendees')
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .where(anyContact(contactIds))
    .$if(status !== undefined, qb => qb.where('status', '=', status ?? 'invited'))
    .returning(['contact_id', 'status'])
    .execute()
}

/** The attendees of an event among `contactIds`, as they are now. */
export async function attendeesOf (trx: Tx, tenantId: string, eventId: number, contactIds: readonly string[]) {
  return await trx.selectFrom('attendees').select(ATTENDEE_COLUMNS)
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where(anyContact(contactIds))
    .execute()
}

/**
 * The SQL of registration (attendees.registration.ts): settings of a series, seat counts, promotions from the
 * waitlist, and the e-mails to attendees' contacts.
 */
import { sql, type RawBuilder } from 'kysely'
import { rowChunks } from '../../platform/db/chunks.ts'
import type { Counting } from '../../platform/db/kept-counts.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { bumpRevision } from '../../platform/db/revision.ts'

/** The stored registration settings of an event row. */
export async function eventRegistration (trx: Tx, tenantId: string, eventId: number) {
  return await trx.selectFrom('events')
    .select(['series_id', 'capacity', 'waitlist_enabled', 'requires_approval', 'registration_inherited'])
    .where('tenant_id', '=', tenantId).where('id', '=', eventId)
    .executeTakeFirst()
}

export async function seriesRegistration (trx: Tx, tenantId: string, seriesId: number) {
  return await trx.selectFrom('event_series')
    .select(['capacity', 'waitlist_enabled', 'requires_approval'])
    .where('tenant_id', '=', tenantId).where('id', '=', seriesId)
    .executeTakeFirst()
}

/** Attendees of an event by what registration cares about (one index range: attendees_event_status). */
export interface SeatCounts {
  /** confirmed and checked in: the seats taken */
  confirmed: number
  waitlisted: number
  pending: number
  no_show: number
  /** the last waitlist position (0 when nobody waits) */
  last_position: number
}

export async function seatCounts (trx: Tx, tenantId: string, eventId: number): Promise<SeatCounts> {
  const r = await sql<SeatCounts>`
    select count(*) filter (where status in ('confirmed', 'checked_in'))::int as confirmed,
           count(*) filter (where status = 'waitlisted')::int as waitlisted,
           count(*) filter (where status = 'pending')::int as pending,
           count(*) filter (where status = 'no_show')::int as no_show,
           coalesce(max(waitlist_position), 0)::int as last_position
    from attendees where tenant_id = ${tenantId} and event_id = ${eventId}`.execute(trx)
  return r.rows[0] ?? { confirmed: 0, waitlisted: 0, pending: 0, no_show: 0, last_position: 0 }
}

/** The trigger that keeps the attendee counts of events in row_counts (migration 0038; absent on Citus). */
export const ATTENDEE_COUNTS_TRIGGER = 'attendees_counts_insert'

/** The stored registration settings of an event, its series' when it follows them, and its attendee counts. */
export interface StoredFigures {
  series_id: number | null
  capacity: number | null
  waitlist_enabled: boolean
  requires_approval: boolean
  registration_inherited: boolean
  /** the series' settings while the event follows them (null otherwise, or when the series is gone) */
  series: { capacity: number | null, waitlist_enabled: boolean, requires_approval: boolean } | null
  counts: Omit<SeatCounts, 'last_position'>
}

/**
 * The registration settings and attendee counts of the event whose id `root` gives, as one JSON value: a column of
 * GET /events/{id}'s own statement. The counts are read from row_counts where they are kept (`counting` 'kept'),
 * or counted over the event's attendees (Citus). The event's id reaches row_counts as a sub-select: under
 * row-level security only a leakproof condition may use an index, and a cast of a column (`id::text`) is not one.
 */
export function figuresColumn (tenantId: string, root: RawBuilder<number>, counting: Counting) {
  const counts = counting === 'kept'
    ? sql`(select json_build_object(
        'confirmed', coalesce(sum(c.n) filter (where c.k2 in ('confirmed', 'checked_in')), 0),
        'waitlisted', coalesce(sum(c.n) filter (where c.k2 = 'waitlisted'), 0),
        'pending', coalesce(sum(c.n) filter (where c.k2 = 'pending'), 0),
        'no_show', coalesce(sum(c.n) filter (where c.k2 = 'no_show'), 0))
      from row_counts c
      where c.tenant_id = ${tenantId} and c.tenant_id = r.tenant_id and c.list = 'attendees'
        and c.k1 = (select r.id::text))`
    : sql`(select json_build_object(
        'confirmed', count(*) filter (where a.status in ('confirmed', 'checked_in')),
        'waitlisted', count(*) filter (where a.status = 'waitlisted'),
        'pending', count(*) filter (where a.status = 'pending'),
        'no_show', count(*) filter (where a.status = 'no_show'))
      from attendees a where a.tenant_id = ${tenantId} and a.tenant_id = r.tenant_id and a.event_id = r.id)`
  return sql<StoredFigures | null>`(select json_build_object(
      'series_id', r.series_id, 'capacity', r.capacity, 'waitlist_enabled', r.waitlist_enabled,
      'requires_approval', r.requires_approval, 'registration_inherited', r.registration_inherited,
      'series', (select json_build_object(
          'capacity', s.capacity, 'waitlist_enabled', s.waitlist_enabled, 'requires_approval', s.requires_approval)
        from event_series s
        where s.tenant_id = ${tenantId} and s.tenant_id = r.tenant_id and s.id = r.series_id
          and r.registration_inherited),
      'counts', ${counts})
    from events r where r.tenant_id = ${tenantId} and r.id = ${root})`
}

/** Confirms the first `n` waitlisted attendees of an event, in position order; each with the position it had. */
export async function promoteWaitlisted (trx: Tx, tenantId: string, eventId: number, n: number) {
  const first = await trx.selectFrom('attendees').select(['id', 'waitlist_position'])
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('status', '=', 'waitlisted')
    .orderBy('waitlist_position').limit(n)
    .forUpdate()
    .execute()
  if (first.length === 0) return []
  const rows = await trx.updateTable('attendees')
    .set({ status: 'confirmed', waitlist_position: null, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${first.map(f => f.id)}::bigint[])`)
    .returning(['id', 'contact_id'])
    .execute()
  const position = new Map(first.map(f => [String(f.id), f.waitlist_position ?? 0]))
  return rows.map(r => ({ contact_id: r.contact_id, previous_position: position.get(String(r.id)) ?? 0 }))
}

/**
 * Numbers the waitlist 1..n in its order (closing the gaps a promotion or a departure left); the unique constraint
 * on positions is checked at commit, so the rows can move in one statement.
 */
export async function renumberWaitlist (trx: Tx, tenantId: string, eventId: number): Promise<void> {
  await sql`
    update attendees a set waitlist_position = w.n
    from (select id, row_number() over (order by waitlist_position, id)::int as n from attendees
          where tenant_id = ${tenantId} and event_id = ${eventId} and status = 'waitlisted') w
    where a.tenant_id = ${tenantId} and a.id = w.id and a.waitlist_position <> w.n`.execute(trx)
}

/**
 * Queues one e-mail per contact, to its address (stored undeliverable, with the reason, when it has none): the
 * contacts read in one statement, the mails written as multi-row VALUES (an INSERT … SELECT would be a COPY into
 * the shards on Citus, which row-level security refuses: docs/architecture.md, "Statements Citus accepts").
 */
export async function queueContactEmails (
  trx: Tx,
  tenantId: string,
  contactIds: readonly string[],
  m: { subject: string, body: string, payload: Record<string, unknown> }
): Promise<number> {
  const contacts = await trx.selectFrom('contacts').select(['id', 'email'])
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${[...new Set(contactIds)]}::uuid[])`)
    .orderBy('id')
    .execute()
  const payload = JSON.stringify(m.payload)
  for (const chunk of rowChunks(contacts, 9)) {
    await trx.insertInto('notification_outbox').values(chunk.map(c => {
      const email = c.email?.trim() ?? ''
      return {
        tenant_id: tenantId,
        channel: 'email',
        recipient: email === '' ? `contact:${c.id}` : email,
        subject: m.subject,
        body: m.body,
        priority: 'normal',
        payload: sql`${payload}::jsonb`,
        status: email === '' ? 'undeliverable' : 'pending',
        last_error: email === '' ? `the contact ${c.id} has no e-mail address` : null
      }
    })).execute()
  }
  return contacts.length
}

/** The users who actively manage an event. */
export async function activeManagerIds (trx: Tx, tenantId: string, eventId: number): Promise<string[]> {
  const rows = await trx.selectFrom('event_managers').select('user_id')
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('status', '=', 'active')
    .where('user_id', 'is not', null)
    .execute()
  return rows.flatMap(r => r.user_id === null ? [] : [r.user_id])
}

/** Confirmed attendees of an event who never checked in become no-shows; their contacts. */
export async function markNoShows (trx: Tx, tenantId: string, eventId: number): Promise<string[]> {
  const r = await sql<{ contact_id: string }>`
    update attendees set status = 'no_show', is_checked_in = false, responded_at = now(), updated_at = now()
    where tenant_id = ${tenantId} and event_id = ${eventId} and status = 'confirmed'
    returning contact_id::text as contact_id`.execute(trx)
  return r.rows.map(x => x.contact_id)
}

/** The contacts attending events (any status but declined), each once. */
export async function contactsToTell (trx: Tx, tenantId: string, eventIds: readonly number[]): Promise<string[]> {
  const r = await sql<{ contact_id: string }>`
    select distinct contact_id::text as contact_id from attendees
    where tenant_id = ${tenantId} and event_id = any(${[...eventIds]}::bigint[]) and status <> 'declined'`.execute(trx)
  return r.rows.map(x => x.contact_id)
}

/** Marks events cancelled (a new revision of each). */
export async function cancelEvents (
  trx: Tx,
  tenantId: string,
  eventIds: readonly number[],
  by: string,
  reason: string
): Promise<void> {
  await trx.updateTable('events')
    .set({
      cancelled_at: sql`now()`,
      cancelled_by: by,
      cancellation_reason: reason,
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${[...eventIds]}::bigint[])`)
    .execute()
}

/** The live, published, not yet cancelled occurrences of a series (from `fromIndex` on), in index order. */
export async function occurrencesToCancel (trx: Tx, tenantId: string, seriesId: number, fromIndex: number | null) {
  return await trx.selectFrom('events').select('id')
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId)
    .where('published_id', 'is', null).where('is_deleted', '=', false).where('status', '=', 'published')
    .where('cancelled_at', 'is', null)
    .$if(fromIndex !== null, qb => qb.where('series_index', '>=', fromIndex ?? 0))
    .orderBy('series_index').orderBy('id')
    .execute()
}

/** The public registration settings of an event or a series (docs/guests.md). */
export const GUEST_SETTINGS = [
  'public_registration', 'registration_opens_at', 'registration_closes_at', 'registration_limit_per_email',
  'double_opt_in'
] as const
export interface GuestSettings {
  public_registration: boolean
  registration_opens_at: Date | null
  registration_closes_at: Date | null
  registration_limit_per_email: number
  double_opt_in: boolean
}
/** What a PATCH may set of them. */
export type GuestSettingsInput = Partial<{
  public_registration: boolean
  registration_opens_at: string | null
  registration_closes_at: string | null
  registration_limit_per_email: number
  double_opt_in: boolean
}>

const guestValues = (v: GuestSettingsInput) => Object.fromEntries(GUEST_SETTINGS.flatMap(k =>
  v[k] === undefined ? [] : [[k, v[k]]]))

/** The public registration settings in force for an event: its own, or its series' while it follows them. */
export async function guestSettings (trx: Tx, tenantId: string, eventId: number): Promise<GuestSettings | undefined> {
  const own = await trx.selectFrom('events').select(['series_id', 'registration_inherited', ...GUEST_SETTINGS])
    .where('tenant_id', '=', tenantId).where('id', '=', eventId)
    .executeTakeFirst()
  if (own === undefined) return undefined
  const { series_id: seriesId, registration_inherited: inherited, ...settings } = own
  if (seriesId !== null && inherited) {
    const series = await trx.selectFrom('event_series').select(GUEST_SETTINGS)
      .where('tenant_id', '=', tenantId).where('id', '=', seriesId)
      .executeTakeFirst()
    if (series !== undefined) return series
  }
  return settings
}

/** The public registration settings a series' occurrences follow. */
export async function seriesGuestSettings (trx: Tx, tenantId: string, seriesId: number) {
  return await trx.selectFrom('event_series').select(GUEST_SETTINGS)
    .where('tenant_id', '=', tenantId).where('id', '=', seriesId)
    .executeTakeFirst()
}

/** Sets an event's stored registration settings (a new revision). */
export async function writeEventRegistration (
  trx: Tx,
  tenantId: string,
  eventId: number,
  v: { capacity?: number | null, waitlist_enabled?: boolean, requires_approval?: boolean, inherited: boolean } &
    GuestSettingsInput
): Promise<void> {
  await trx.updateTable('events')
    .set({
      ...v.capacity !== undefined ? { capacity: v.capacity } : {},
      ...v.waitlist_enabled !== undefined ? { waitlist_enabled: v.waitlist_enabled } : {},
      ...v.requires_approval !== undefined ? { requires_approval: v.requires_approval } : {},
      ...guestValues(v),
      registration_inherited: v.inherited,
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId).where('id', '=', eventId)
    .execute()
}

/** Sets a series' registration settings; the series as it is now. */
export async function writeSeriesRegistration (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  v: { capacity?: number | null, waitlist_enabled?: boolean, requires_approval?: boolean } & GuestSettingsInput
) {
  return await trx.updateTable('event_series')
    .set({
      ...v.capacity !== undefined ? { capacity: v.capacity } : {},
      ...v.waitlist_enabled !== undefined ? { waitlist_enabled: v.waitlist_enabled } : {},
      ...v.requires_approval !== undefined ? { requires_approval: v.requires_approval } : {},
      ...guestValues(v),
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId).where('id', '=', seriesId)
    .returning(['id', 'capacity', 'waitlist_enabled', 'requires_approval', ...GUEST_SETTINGS])
    .executeTakeFirstOrThrow()
}

/** Live occurrences of a series that follow its settings: all of them, and those with a waitlist (in id order). */
export async function followingOccurrences (trx: Tx, tenantId: string, seriesId: number) {
  const r = await sql<{ id: number, waiting: boolean }>`
    select e.id, exists (select 1 from attendees a where a.tenant_id = e.tenant_id and a.event_id = e.id
                         and a.status = 'waitlisted') as waiting
    from events e
    where e.tenant_id = ${tenantId} and e.series_id = ${seriesId} and e.published_id is null
      and not e.is_deleted and e.registration_inherited
    order by e.id`.execute(trx)
  return r.rows
}

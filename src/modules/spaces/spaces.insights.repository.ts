/**
 * SQL of what happens in a space: the events linked to it (rows of `event_spaces`, owned by the
 * events module), its activity feed and its analytics. Event titles only appear for events the
 * caller may see (`eventVisibleTo` of the events module).
 */
import {
  expressionBuilder, sql, type AliasedSelectQueryBuilder, type ExpressionBuilder, type RawBuilder, type SqlBool
} from 'kysely'
import { exactTimestamp, type Database } from '../../platform/db/database.ts'
import {
  deleteEventSpace, type EventSpacesTable, eventVisibilityFilter, eventVisibleTo, insertEventSpace
} from '../events/index.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { keptSum, type Counting } from '../../platform/db/kept-counts.ts'
import type { SpaceActivityType } from './spaces.table.ts'
import { fromCursor, listPage, orderByKeys, totalIn, totalQuery } from '../../platform/db/list-page.ts'
import { together } from '../../platform/db/together.ts'
import {
  afterKey, listScope, pageOf, pageWindow, type KeyColumn, type KeyValue, type PageParams
} from '../../platform/http/cursor.ts'

/* Linked events */

const visibleEventIds = (trx: Tx, auth: AuthContext) =>
  trx.selectFrom('events').select('events.id').where(eb => eventVisibleTo(eb, auth))

const SPACE_EVENT_KEYS: KeyColumn[] = [
  { ref: 'e.start_dt', dir: 'desc', type: 'time', nullable: true },
  { ref: 'es.id', dir: 'desc', type: 'int' }
]

export async function listSpaceEvents (trx: Tx, auth: AuthContext, spaceId: number, q: PageParams) {
  const window = pageWindow(q, listScope('space-events', { spaceId }), SPACE_EVENT_KEYS)
  const base = trx
    .selectFrom('event_spaces as es')
    .innerJoin('events as e', j => j.onRef('e.tenant_id', '=', 'es.tenant_id').onRef('e.id', '=', 'es.event_id'))
    .where('es.tenant_id', '=', auth.tenantId)
    .where('es.space_id', '=', spaceId)
    .where('es.event_id', 'in', visibleEventIds(trx, auth))
  const page = await listPage(trx, base, qb => qb.select([
    'es.id',
    'es.space_id',
    'es.event_id',
    'es.org_id',
    'es.created_at',
    'es.updated_at',
    'e.title',
    'e.status',
    'e.visibility',
    'e.timezone',
    'e.start_dt',
    'e.end_dt'
  ]), SPACE_EVENT_KEYS, window)
  return {
    ...page,
    items: page.items.map(r => ({
      id: r.id,
      space_id: r.space_id,
      event_id: r.event_id,
      org_id: r.org_id,
      created_at: r.created_at,
      updated_at: r.updated_at,
      event: {
        id: r.event_id,
        title: r.title,
        status: r.status,
        visibility: r.visibility,
        timezone: r.timezone,
        start_dt: r.start_dt,
        end_dt: r.end_dt
      }
    }))
  }
}

/** Links an event to a space: a row of `event_spaces`, as the events module writes it; undefined when linked. */
export async function insertSpaceEvent (
  trx: Tx,
  tenantId: string,
  spaceId: number,
  eventId: number,
  orgId: string | null
) {
  return await insertEventSpace(trx, tenantId, eventId, spaceId, orgId)
}

/** Unlinks an event from a space; false when it was not linked. */
export async function deleteSpaceEvent (trx: Tx, tenantId: string, spaceId: number, eventId: number): Promise<boolean> {
  return await deleteEventSpace(trx, tenantId, eventId, spaceId)
}

/* Activity */

/**
 * The feed of a space, newest first: the stored items (members joined, contacts linked) and, derived
 * from the events module's rows, "event added to the space" (each current link) and "event
 * published" (each publish of a linked event, from event_activity). Events the caller may not see
 * are left out.
 */
const ACTIVITY_KEYS: KeyColumn[] = [
  { ref: 'x.created_at', dir: 'desc', type: 'time' },
  { ref: 'x.src', dir: 'desc', type: 'int' },
  { ref: 'x.seq', dir: 'desc', type: 'int' }
]

interface FeedRow {
  created_at: Date
  message: string
  resource_id: string
  title: string
  type: SpaceActivityType
  src: number
  seq: number
}
/** one source of the feed, whatever tables it reads */
interface FeedSource { as: (alias: 'x') => AliasedSelectQueryBuilder<FeedRow, 'x'> }

/** The trigger that keeps the count of a space's stored activity items (migration 0021; none on Citus). */
export const ACTIVITY_COUNTS_TRIGGER = 'space_activity_counts_insert'

export async function listActivity (trx: Tx, auth: AuthContext, spaceId: number, q: PageParams, counting: Counting) {
  const window = pageWindow(q, listScope('space-activity', { spaceId }), ACTIVITY_KEYS)
  const t = auth.tenantId
  const storedRows = trx
    .selectFrom('space_activity as a')
    .where('a.tenant_id', '=', t)
    .where('a.space_id', '=', spaceId)
  const stored = storedRows.select([
    'a.created_at',
    'a.message',
    'a.resource_id',
    'a.title',
    sql<SpaceActivityType>`a.type`.as('type'),
    sql<number>`0`.as('src'),
    'a.id as seq'
  ])
  // each link of the space, then its event if the caller sees it (a lateral read by primary key per link, the
  // visibility filter naming `events` unaliased; its hashed subplans of the caller's spaces and managed events
  // computed once); `in (every event the caller sees)` hashed the whole tenant's events, and a plain join let
  // the planner scan them
  const visibleEvent = (eventId: 'es.event_id' | 'ea.event_id') =>
    (eb: ExpressionBuilder<Database & { es: EventSpacesTable }, 'es'>) =>
      eb
        .selectFrom('events')
        .select(['events.id', 'events.title'])
        .where('events.tenant_id', '=', t)
        .where(sql<SqlBool>`${sql.ref('events.id')} = ${sql.ref(eventId)}`)
        .where(eventVisibilityFilter(auth))
        // at most one row by key; the limit also keeps PostgreSQL from folding the lateral read into a join
        .limit(1)
        .as('v')
  const addedRows = trx
    .selectFrom('event_spaces as es')
    .innerJoinLateral(visibleEvent('es.event_id'), j => j.onTrue())
    .where('es.tenant_id', '=', t)
    .where('es.space_id', '=', spaceId)
  // the columns of an item about a linked event (`v`) between its time and its sequence: its message and source
  const eventItem = (message: string, src: number) => [
    sql<string>`${sql.lit(message)}`.as('message'),
    sql<string>`v.id::text`.as('resource_id'),
    'v.title',
    sql<SpaceActivityType>`'event'`.as('type'),
    sql<number>`${sql.lit(src)}`.as('src')
  ] as const
  const added = addedRows.select(['es.created_at', ...eventItem('event added to the space', 1), 'es.id as seq'])
  // the publishes of the space's events, then the event if the caller sees it: the lateral read names the
  // publish's event, so it runs for each publish found, not for each link (most links have none)
  const publishedRows = trx
    .selectFrom('event_spaces as es')
    .innerJoin('event_activity as ea', j =>
      j.onRef('ea.tenant_id', '=', 'es.tenant_id').onRef('ea.event_id', '=', 'es.event_id')
    )
    .innerJoinLateral(visibleEvent('ea.event_id'), j => j.onTrue())
    .where('es.tenant_id', '=', t)
    .where('es.space_id', '=', spaceId)
    .where('ea.kind', '=', 'published')
  const published = publishedRows.select(['ea.at as created_at', ...eventItem('event published', 2), 'ea.id as seq'])
  // each source in the feed's order up to the page's end (after the cursor's key), then the page from the three
  const reach = window.offset + window.limit
  // (each in a subquery of its own: a union's members cannot carry their own order and limit)
  const firstOf = (source: FeedSource) =>
    trx
      .selectFrom(
        trx
          .selectFrom(source.as('x'))
          .selectAll()
          .$call(qb => fromCursor(qb, ACTIVITY_KEYS, window))
          .limit(reach)
          .as('f')
      )
      .selectAll()
  const page = trx
    .selectFrom(firstOf(stored).unionAll(firstOf(added)).unionAll(firstOf(published)).as('x'))
    .select(['x.created_at', 'x.message', 'x.resource_id', 'x.title', 'x.type', 'x.src', 'x.seq'])
    .$call(qb => orderByKeys(qb, ACTIVITY_KEYS))
    .limit(window.limit)
    .offset(window.offset)
  // the total: each source's rows counted, without the columns of the items; the stored items from their kept
  // count (every caller who sees the space sees them all)
  const counted = [
    counting === 'kept'
      ? keptSum(t, 'space_activity', sql<boolean>`k1 = ${String(spaceId)}`)
      : storedRows.select(eb => eb.fn.countAll<number>().as('n')),
    addedRows.select(eb => eb.fn.countAll<number>().as('n')),
    publishedRows.select(eb => eb.fn.countAll<number>().as('n'))
  ]
  // one round trip (together.ts)
  const [rows, total] = await together(trx, [page, totalQuery(trx, counted)])
  const paged = pageOf(rows, window, r => [r.created_at, r.src, r.seq])
  return { ...paged, items: paged.items.map(({ src: _src, seq: _seq, ...item }) => item), total: totalIn(total) }
}

/* Analytics */

/** Upcoming published events with fewer RSVPs than this need attention (an absolute RSVP count). */
export const ATTENTION_THRESHOLD = 5
const TREND_EVENTS = 12
const PERFORMANCE_ROWS = 50
const TOP_ROWS = 5
const WEEKS = 12

export interface EventFigures {
  event_id: number
  title: string
  status: string
  start_at: Date | null
  end_at: Date | null
  upcoming: boolean
  rsvps: number
  attended: number
  no_shows: number
}

/** Whether the attendees table exists yet (it belongs to the attendees module). */
async function hasAttendees (trx: Tx): Promise<boolean> {
  const r = await sql<{ ok: boolean }>`select to_regclass('attendees') is not null as ok`.execute(trx)
  return r.rows[0]?.ok === true
}

/** The order of the figures (latest start first, no start last, then higher id): the key of the export's chunks. */
export const FIGURES_KEYS: KeyColumn[] = [
  { ref: 'e.start_dt', dir: 'desc', type: 'time', nullable: true },
  { ref: 'e.id', dir: 'desc', type: 'int' }
]

/** The key of a row of figures in FIGURES_KEYS' order. */
export const figuresKey = (f: EventFigures): KeyValue[] =>
  [f.start_at === null ? null : exactTimestamp(f.start_at), f.event_id]

/**
 * Per linked event (not deleted, not a draft clone, not a never-published draft): RSVPs (attendees
 * confirmed, tentative or checked in, or flagged checked in; never pending, waitlisted or no-shows), attended
 * (checked in) and no-shows (status no_show), counted in one pass over the attendees of those events. With `chunk`,
 * only the `limit` events after the key `after` (FIGURES_KEYS), for the export, which reads them chunk by chunk.
 */
export async function eventFigures (
  trx: Tx,
  auth: AuthContext,
  spaceId: number,
  chunk?: { after: KeyValue[] | undefined, limit: number }
): Promise<EventFigures[]> {
  const tenantId = auth.tenantId
  // Attendees of an occurrence: its own rows, plus the rows of its series (event_id null, "attends
  // every occurrence") for contacts without a row of their own for that occurrence.
  const counts = (await hasAttendees(trx))
    ? sql`select r.event_id,
             count(*) filter (
               where r.status in ('confirmed', 'tentative', 'checked_in') or r.is_checked_in
             )::int as rsvps,
             count(*) filter (where r.is_checked_in or r.status = 'checked_in')::int as attended,
             count(*) filter (where r.status = 'no_show')::int as no_shows
           from (
             select a.event_id, a.status, a.is_checked_in
             from attendees a
             where a.tenant_id = ${tenantId} and a.event_id in (select event_id from linked)
             union all
             select l.event_id, a.status, a.is_checked_in
             from linked l
             join attendees a on a.tenant_id = ${tenantId} and a.series_id = l.series_id and a.event_id is null
             where l.series_id is not null
               and not exists (
                 select 1 from attendees o
                 where o.tenant_id = ${tenantId} and o.event_id = l.event_id and o.contact_id = a.contact_id
               )
           ) r
           group by r.event_id`
    : sql`select null::bigint as event_id, 0 as rsvps, 0 as attended, 0 as no_shows where false`
  const window = chunk === undefined
    ? sql``
    : sql`and ${chunk.after === undefined
        ? sql`true`
        : afterKey(expressionBuilder<Database, 'events'>(), FIGURES_KEYS, chunk.after)}
        order by e.start_dt desc nulls last, e.id desc limit ${chunk.limit}`
  const r = await sql<EventFigures>`
    with linked as (
      select e.id as event_id, e.series_id, e.title, e.status, e.start_dt, e.end_dt
      from event_spaces es
      join events e on e.tenant_id = es.tenant_id and e.id = es.event_id
      where es.tenant_id = ${tenantId} and es.space_id = ${spaceId}
        and not e.is_deleted and e.published_id is null and e.status <> 'draft'
        -- only the events the caller sees, by the events' own rule (the outbound rule: docs/security.md)
        and exists (select from events where events.tenant_id = ${tenantId} and events.id = e.id
          and ${eventVisibilityFilter(auth)})
        ${window}
    ), counts as (${counts})
    select l.event_id, l.title, l.status, l.start_dt as start_at, l.end_dt as end_at,
           (l.start_dt is not null and l.start_dt > now()) as upcoming,
           coalesce(c.rsvps, 0)::int as rsvps, coalesce(c.attended, 0)::int as attended,
           coalesce(c.no_shows, 0)::int as no_shows
    from linked l left join counts c on c.event_id = l.event_id
    order by l.start_dt desc nulls last, l.event_id desc`.execute(trx)
  return r.rows
}

/**
 * Active members at the end of each of the last 12 weeks (Monday-based, UTC), oldest first. The space's members are
 * read once: each adds 1 in the week it joined and takes 1 away in the week it left (a week before the first counts
 * in the first), and a week's count is the running sum; a count per week read every member twelve times.
 */
export async function memberGrowth (trx: Tx, tenantId: string, spaceId: number) {
  const week = (at: RawBuilder<Date>) => sql<Date>`date_trunc('week', ${at} at time zone 'UTC') at time zone 'UTC'`
  const r = await sql<{ date: Date, members: number }>`
    with weeks as (
      select ${week(sql`now()`)} - make_interval(weeks => g) as week_start
      from generate_series(${WEEKS - 1}::int, 0, -1) g
    ), first_week as (
      select min(week_start) as at from weeks
    ), moves as (
      select greatest(${week(sql`m.created_at`)}, f.at) as week_start, 1 as d
      from space_members m cross join first_week f
      where m.tenant_id = ${tenantId} and m.space_id = ${spaceId}
      union all
      select greatest(${week(sql`m.removed_at`)}, f.at), -1
      from space_members m cross join first_week f
      where m.tenant_id = ${tenantId} and m.space_id = ${spaceId} and m.removed_at is not null
    )
    select w.week_start as date, (sum(coalesce(sum(x.d), 0)) over (order by w.week_start))::int as members
    from weeks w left join moves x on x.week_start = w.week_start
    group by w.week_start
    order by w.week_start`.execute(trx)
  return r.rows.map(row => ({
    date: row.date,
    label: new Date(row.date).toISOString().slice(0, 10),
    members: row.members
  }))
}

export async function activeMemberCount (trx: Tx, tenantId: string, spaceId: number): Promise<number> {
  const r = await trx
    .selectFrom('space_members')
    .select(eb => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('space_id', '=', spaceId)
    .where('is_active', '=', true)
    .executeTakeFirstOrThrow()
  return Number(r.n)
}

const rateOf = (attended: number, rsvps: number): number =>
  rsvps === 0 ? 0 : Math.round((attended / rsvps) * 10_000) / 10_000

/** The figures of one event as `events_performance` shows them (and the analytics export writes them). */
export function performanceOf (e: EventFigures) {
  return {
    attended: e.attended,
    event_id: e.event_id,
    needs_care: e.upcoming && e.status === 'published' && e.rsvps < ATTENTION_THRESHOLD,
    no_shows: e.no_shows,
    rate: rateOf(e.attended, e.rsvps),
    rsvps: e.rsvps,
    status: e.status,
    title: e.title,
    upcoming: e.upcoming,
    ...(e.start_at !== null ? { start_at: e.start_at } : {}),
    ...(e.end_at !== null ? { end_at: e.end_at } : {})
  }
}

/** Shapes the figures into SpaceAnalyticsResult (definitions in docs/spaces.md). */
export function analyticsOf (
  events: EventFigures[],
  growth: Awaited<ReturnType<typeof memberGrowth>>,
  activeMembers: number
) {
  const perf = performanceOf
  const started = events.filter(e => e.start_at !== null && !e.upcoming)
  const upcoming = events.filter(e => e.upcoming && e.status === 'published')
  const pastRsvps = started.reduce((n, e) => n + e.rsvps, 0)
  const pastAttended = started.reduce((n, e) => n + e.attended, 0)
  return {
    attendance_trend: started
      .slice(0, TREND_EVENTS)
      .reverse()
      .map(e => ({
        attended: e.attended,
        date: e.start_at ?? new Date(0),
        event_id: e.event_id,
        label: e.title,
        rate: rateOf(e.attended, e.rsvps),
        rsvps: e.rsvps
      })),
    attention_needed: upcoming
      .filter(e => e.rsvps < ATTENTION_THRESHOLD)
      .reverse()
      .map(e => ({
        event_id: e.event_id,
        reason: `fewer than ${ATTENTION_THRESHOLD} RSVPs`,
        rsvps: e.rsvps,
        threshold: ATTENTION_THRESHOLD,
        title: e.title,
        ...(e.start_at !== null ? { start_at: e.start_at } : {})
      })),
    events_performance: events.slice(0, PERFORMANCE_ROWS).map(perf),
    top_by_rsvp: [...events]
      .sort(
        (a, b) =>
          b.rsvps - a.rsvps || (b.start_at?.getTime() ?? 0) - (a.start_at?.getTime() ?? 0) || b.event_id - a.event_id
      )
      .slice(0, TOP_ROWS)
      .map(perf),
    member_growth: growth,
    summary: {
      active_members: activeMembers,
      avg_attendance_rate: rateOf(pastAttended, pastRsvps),
      events_published: events.filter(e => e.status === 'published').length,
      no_shows: events.reduce((n, e) => n + e.no_shows, 0),
      total_rsvps: events.reduce((n, e) => n + e.rsvps, 0),
      upcoming_events: upcoming.length
    }
  }
}

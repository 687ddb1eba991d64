/**
 * The lists of events: GET /events (its filters, the cursor, the exact total from the kept counts or row by row)
 * and the calendar, which read each row's id and version for the bodies (events.bodies.repository.ts); the
 * incremental sync reuses the list's filter (events.sync.repository.ts). Every function takes the request's
 * transaction first and names the tenant; visibility comes from events.access.repository.ts.
 */
import {
  expressionBuilder, sql, type Expression, type ExpressionBuilder, type Kysely, type SelectQueryBuilder, type SqlBool
} from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import { fromCursor, orderByKeys, sumOf, totalIn, totalQuery } from '../../platform/db/list-page.ts'
import { together } from '../../platform/db/together.ts'
import { planList, type Tx } from '../../platform/db/tenant.ts'
import { compactKeptCounts, type Counting } from '../../platform/db/kept-counts.ts'
import { eventVisibleTo, listAudience, memberSpaceIds, type ListClass } from './events.access.repository.ts'
import type { EVENT_SORT_FIELDS, STATUSES } from './events.schemas.ts'
import { likePattern } from '../../platform/db/like.ts'

export interface ListOptions {
  page: number
  size: number
  cursor?: string | undefined
  search?: string | undefined
  sortBy: typeof EVENT_SORT_FIELDS[number]
  sortDir: 'asc' | 'desc'
  status?: typeof STATUSES[number] | undefined
  visibility?: number | undefined
  startAfter?: string | undefined
  startBefore?: string | undefined
  spaceIds?: number[] | undefined
  templates?: string[] | undefined
  /** how the total is counted: from the kept counts, or row by row (countingOf, LIST_COUNTS_TRIGGER) */
  counting: Counting
}

/** The trigger that keeps the event list's counts (migrations/0019_event_list_counts.sql; absent on Citus) */
export const LIST_COUNTS_TRIGGER = 'events_list_counts_insert'

/**
 * Folds the delta rows of the event list counts into one row per bucket, tenant by tenant (the
 * retention loop, every 10 minutes); the tenants it folded. Nothing to fold on Citus (no triggers).
 */
export async function compactListCounts (db: Kysely<Database>, signal?: AbortSignal): Promise<number> {
  return await compactKeptCounts(db, 'event_list_counts', ['status', 'visibility', 'org_id', 'month'], signal)
}

type EventsWhere = Expression<SqlBool> | ((eb: ExpressionBuilder<Database, 'events'>) => Expression<SqlBool>)

const monthStart = (d: Date, add = 0): Date => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + add, 1))
const day = (d: Date): string => d.toISOString().slice(0, 10)

/**
 * Counts from the kept buckets (event_list_counts: listed events per status, visibility, organization
 * and UTC month of their start) for the whole months of the start range, and from the events index
 * for the partial months at its ends; the members-only class from the links of the caller's spaces,
 * which carry a copy of their event's visibility, status and start. Only for lists filtered by status,
 * visibility and start alone: the other filters count row by row.
 */
function keptCounts (
  trx: Tx,
  auth: AuthContext,
  o: ListOptions,
  rowCount: (where: EventsWhere) => SelectQueryBuilder<Database, 'events', { n: number }>
) {
  const statuses = o.status !== undefined ? [o.status] : ['draft', 'published']
  const after = o.startAfter !== undefined ? new Date(o.startAfter) : undefined
  const before = o.startBefore !== undefined ? new Date(o.startBefore) : undefined
  // whole months: from the month after `after`'s, to the month of `before` (excluded); the rest from the index
  const wholeFrom = after !== undefined ? monthStart(after, 1) : undefined
  const wholeTo = before !== undefined ? monthStart(before) : undefined
  const partial = wholeFrom !== undefined && wholeTo !== undefined && wholeFrom > wholeTo
  const edges: EventsWhere[] = partial
    ? [sql<boolean>`true`] // both ends in one month (or none between): the range is one index read
    : [
        ...(wholeFrom !== undefined
          ? [(eb: ExpressionBuilder<Database, 'events'>) => eb('events.start_dt', '<', wholeFrom)]
          : []),
        ...(wholeTo !== undefined
          ? [(eb: ExpressionBuilder<Database, 'events'>) => eb('events.start_dt', '>=', wholeTo)]
          : [])
      ]
  const buckets = (visibility: number | undefined, org: string | undefined) =>
    trx
      .selectFrom('event_list_counts as c')
      .select(sql<number>`coalesce(sum(c.n), 0)`.as('n'))
      .where('c.tenant_id', '=', auth.tenantId)
      .where('c.status', 'in', statuses)
      .$if(visibility !== undefined, qb => qb.where('c.visibility', '=', visibility ?? 0))
      .$if(org !== undefined, qb => qb.where('c.org_id', '=', org ?? ''))
      .$if(wholeFrom !== undefined, qb => qb.where('c.month', '>=', day(wholeFrom ?? new Date(0))))
      .$if(wholeTo !== undefined, qb =>
        qb.where('c.month', '<', day(wholeTo ?? new Date(0))).where('c.month', '>', '-infinity')
      )
  const filterVisibility = o.visibility !== undefined && o.visibility !== 0 ? o.visibility : undefined
  /** the listed rows of one visibility (and organization) that pass the filters */
  const ofVisibility = (
    visibility: number | undefined,
    org: string | undefined,
    where: EventsWhere
  ): Expression<number> =>
    sumOf([
      ...(partial ? [] : [buckets(visibility ?? filterVisibility, org)]),
      ...edges.map(edge => rowCount(where).where(edge))
    ])
  return {
    allCount: () => ofVisibility(undefined, undefined, sql<boolean>`true`),
    classCount: (c: ListClass): Expression<unknown> => {
      if (filterVisibility !== undefined && filterVisibility !== c.visibility) return sql<number>`0`
      if (c.visibility !== 20) return ofVisibility(c.visibility, c.orgId, c.where)
      return trx
        .selectFrom('event_spaces as es')
        .select(sql<number>`count(distinct es.event_id)`.as('n'))
        .where('es.tenant_id', '=', auth.tenantId)
        .where('es.space_id', '=', sql<number>`any(${memberSpaceIds(auth)})`)
        .where(sql<SqlBool>`es.event_listed`)
        .where('es.event_visibility', '=', 20)
        .where('es.event_status', 'in', statuses)
        .$if(after !== undefined, qb => qb.where('es.event_start_dt', '>=', after ?? new Date(0)))
        .$if(before !== undefined, qb => qb.where('es.event_start_dt', '<=', before ?? new Date(0)))
    }
  }
}

const NULLABLE_SORTS = new Set<string>(['start_dt', 'end_dt', 'published_at'])
const SORT_TYPES: Record<(typeof EVENT_SORT_FIELDS)[number], KeyColumn['type']> = {
  created_at: 'time',
  updated_at: 'time',
  start_dt: 'time',
  end_dt: 'time',
  published_at: 'time',
  title: 'text',
  priority: 'int',
  id: 'int'
}

type EventsQuery<O> = SelectQueryBuilder<Database, 'events', O>

/** What the events list is filtered by (ListOptions without its order and page). */
export type ListFilters = Pick<ListOptions,
  'search' | 'status' | 'visibility' | 'startAfter' | 'startBefore' | 'spaceIds' | 'templates'>

/** The events list's filters on a query over `events`: the tenant, listed rows, and the query's filters. */
export function listFilter (auth: AuthContext, o: ListFilters) {
  // `not is_deleted` as written, not a parameter: a generic plan then matches the partial list indexes
  return <O>(qb: EventsQuery<O>): EventsQuery<O> =>
    qb
      .where('events.tenant_id', '=', auth.tenantId)
      .where(sql<SqlBool>`not events.is_deleted`)
      .where('events.published_id', 'is', null)
      .where(eb =>
        o.status !== undefined ? eb('events.status', '=', o.status) : eb('events.status', 'in', ['draft', 'published'])
      )
      .$if(o.visibility !== undefined && o.visibility !== 0, qb =>
        qb.where('events.visibility', '=', o.visibility ?? 0)
      )
      .$if(o.search !== undefined && o.search !== '', qb =>
        qb.where('events.search_text', 'like', likePattern(o.search ?? ''))
      )
      .$if(o.startAfter !== undefined, qb => qb.where('events.start_dt', '>=', new Date(o.startAfter ?? 0)))
      .$if(o.startBefore !== undefined, qb => qb.where('events.start_dt', '<=', new Date(o.startBefore ?? 0)))
      .$if(o.templates !== undefined && o.templates.length > 0, qb =>
        qb.where('events.template', 'in', o.templates ?? [])
      )
      .$if(o.spaceIds !== undefined && o.spaceIds.length > 0, qb => qb.where(eb => eb.exists(
        eb.selectFrom('event_spaces as es').select(sql`1`.as('one'))
          .where('es.tenant_id', '=', auth.tenantId) // as a value too: one shard on Citus
          .whereRef('es.tenant_id', '=', 'events.tenant_id').whereRef('es.event_id', '=', 'events.id')
          .where('es.space_id', 'in', o.spaceIds ?? [])
      )))
}

/**
 * A page of the events a caller sees, its exact total and the cursor of the next page.
 *
 * A tenant admin's list is one statement over the list indexes. A member's audience is a union
 * (listAudience, events.access.repository.ts): every branch is read apart, in the list's order, up to the
 * end of the page (after the cursor's key when there is one), and the page is the first rows of
 * their union; the total is the sum of the disjoint visibility classes' counts, each one index
 * range, plus the rows the caller created or manages that no class holds. One predicate of six
 * `or`-ed branches made PostgreSQL test every row of the tenant (docs/performance.md).
 */
export async function listEvents (trx: Tx, auth: AuthContext, o: ListOptions) {
  // A text search's plan depends on how selective its term is (and counting row by row on the values): planned
  // for them. The branches' plans do not (each walks its index in the list's order): the prepared statements'
  // generic plans, since planning the page (1.4 ms) and the count (1.1 ms) for each request cost more than
  // running them (docs/performance.md).
  const forValues = (o.search ?? '') !== '' || o.counting === 'rows'
  await planList(trx, forValues)
  // A bound on the start leaves out the events without one: sorted by start, the key is then never null, and the
  // cursor's condition is one row comparison that bounds the index read (a nullable key's `or` of branches only
  // filtered it, from the range's first row: page 500 read the 50 000 rows before it)
  const startBound = o.startAfter !== undefined || o.startBefore !== undefined
  const keys: KeyColumn[] =
    o.sortBy === 'id'
      ? [{ ref: 'events.id', dir: o.sortDir, type: 'int' }]
      : [
          {
            ref: `events.${o.sortBy}`,
            dir: o.sortDir,
            type: SORT_TYPES[o.sortBy],
            nullable: NULLABLE_SORTS.has(o.sortBy) && !(o.sortBy === 'start_dt' && startBound)
          },
          { ref: 'events.id', dir: o.sortDir, type: 'int' }
        ]
  const scope = listScope('events', {
    sortBy: o.sortBy,
    sortDir: o.sortDir,
    search: o.search,
    status: o.status,
    visibility: o.visibility,
    startAfter: o.startAfter,
    startBefore: o.startBefore,
    spaceIds: o.spaceIds,
    templates: o.templates
  })
  const window = pageWindow(o, scope, keys)
  const filtered = listFilter(auth, o)
  // which rows, which version of each (the bodies come from the row cache or PostgreSQL: events.service.ts,
  // renderEvents), and the sort value for the next cursor
  const columns = [
    'events.id', sql<string>`events.xmin::text`.as('version'), 'events.published_id', 'events.series_id',
    sql<unknown>`${sql.ref(`events.${o.sortBy}`)}`.as('sort_key')
  ] as const
  const audience = listAudience(expressionBuilder<Database, 'events'>(), auth, o.counting === 'kept')
  /** the listed rows of `where` that pass the filters, counted one by one */
  const rowCount = (where: EventsWhere) =>
    filtered(trx.selectFrom('events').select(eb => eb.fn.countAll<number>().as('n'))).where(where)
  const kept =
    o.counting === 'kept' &&
    (o.search ?? '') === '' &&
    (o.templates ?? []).length === 0 &&
    (o.spaceIds ?? []).length === 0
      ? keptCounts(trx, auth, o, rowCount)
      : undefined

  // The members-only events of the caller's spaces by start, from the links' copy of their event's columns
  // (migrations/0019_event_list_counts.sql): one index read of the links of those spaces, grouped by event. Walking
  // the tenant's members-only events by start for the few linked to the caller's spaces read every one of them when
  // fewer than a page were linked. For lists by start within a start range (no row without a start) filtered by
  // nothing the links do not copy: then the page, the total and the test of the caller's own rows read them from one
  // CTE (`linked`) of one statement, where three statements each read them before (docs/performance.md).
  const statuses = o.status !== undefined ? [o.status] : ['draft', 'published']
  const linksServe = kept !== undefined && o.sortBy === 'start_dt' && o.startAfter !== undefined &&
    (o.visibility === undefined || o.visibility === 0 || o.visibility === 20)
  const linkKeys = keys.map((k, i) => ({ ...k, ref: i === 0 ? 'l.start_dt' : 'l.id', nullable: false }))
  const linkedRows = () => trx.selectFrom('event_spaces as es')
    .select(['es.event_id as id', sql<Date>`min(es.event_start_dt)`.as('start_dt')])
    .where('es.tenant_id', '=', auth.tenantId)
    .where('es.space_id', '=', sql<number>`any(${memberSpaceIds(auth)})`)
    .where(sql<SqlBool>`es.event_listed`)
    .where('es.event_visibility', '=', 20)
    .where('es.event_status', 'in', statuses)
    .where('es.event_start_dt', '>=', new Date(o.startAfter ?? 0))
    .$if(o.startBefore !== undefined, qb => qb.where('es.event_start_dt', '<=', new Date(o.startBefore ?? 0)))
    .groupBy('es.event_id')
  /** the rows of the statement's CTE `linked` (`linkedRows`) */
  const linked = () => trx.selectFrom(sql<{ id: number, start_dt: Date }>`linked`.as('l'))

  if (audience === undefined) {
    const [rows, counted] = await together(trx, [
      fromCursor(filtered(trx.selectFrom('events').select(columns)), keys, window)
        .limit(window.limit)
        .offset(window.offset),
      totalQuery(trx, [kept !== undefined ? kept.allCount() : rowCount(sql<boolean>`true`)])
    ])
    return { ...pageOf(rows, window, keyOf(o.sortBy)), total: totalIn(counted) }
  }

  // each branch's first rows of the page's end, then the page from their union
  const reach = window.offset + window.limit
  const pickOf = (branch: Expression<SqlBool>) => trx.selectFrom(
    fromCursor(filtered(trx.selectFrom('events').select('events.id')).where(branch), keys, window).limit(reach).as('b')
  ).select('b.id')
  const linkedPick = () => trx.selectFrom(
    linked().select('l.id').$call(qb => fromCursor(qb, linkKeys, window)).limit(reach).as('b')
  ).select('b.id')
  const picks = [
    ...audience.classes.map(c => c.visibility === 20 && linksServe ? linkedPick() : pickOf(c.where)),
    ...audience.owned.map(pickOf)
  ]
  const union = picks.reduce((all, pick) => all.union(pick))
  // the classes are disjoint: their counts add; the caller's own rows count where no class holds them
  const counts: Array<Expression<unknown>> = audience.classes.map(c =>
    c.visibility === 20 && linksServe
      ? linked().select(eb => eb.fn.countAll<number>().as('n'))
      : kept !== undefined ? kept.classCount(c) : rowCount(c.where)
  )
  // whether a row is in a class; the members-only class from `linked` when it serves (the caller's own rows pass the
  // list's filters, which the links copy: such a row is linked to a space of the caller's exactly when it is there)
  const ev = expressionBuilder<Database, 'events'>()
  const inClasses = linksServe
    ? ev.or(audience.classes.map(c => c.visibility !== 20
      ? c.where
      : ev.and([ev('events.visibility', '=', 20), ev('events.id', 'in', linked().select('l.id'))])))
    : audience.inClasses
  // The caller's own rows, each kind from its index (an `or` of the three let a generic plan walk every event of
  // the range), then the few that no class holds; coalesce: a class test that is null (an organization-wide
  // event without an organization) holds no row
  const ownedIds = audience.owned
    .map(o => filtered(trx.selectFrom('events').select('events.id')).where(o))
    .reduce((all, ids) => all.union(ids))
  counts.push(trx.selectFrom('events').select(eb => eb.fn.countAll<number>().as('n'))
    .where('events.tenant_id', '=', auth.tenantId)
    .where('events.id', 'in', ownedIds)
    .where(eb => eb.not(sql<SqlBool>`coalesce(${inClasses}, false)`)))
  const page = orderByKeys(
    trx
      .selectFrom('events')
      .select(columns)
      .where('events.tenant_id', '=', auth.tenantId)
      .where('events.id', 'in', union),
    keys
  )
    .limit(window.limit)
    .offset(window.offset)
  if (!linksServe) {
    const [rows, counted] = await together(trx, [page, totalQuery(trx, counts)])
    return { ...pageOf(rows, window, keyOf(o.sortBy)), total: totalIn(counted) }
  }
  // one statement: the total (one row), then the page beside it (none when the page is empty)
  const rows = await trx
    .with(cte => cte('linked').materialized(), linkedRows)
    .selectFrom(totalQuery(trx, counts).as('t'))
    .leftJoinLateral(page.as('p'), join => join.onTrue())
    .select(['p.id', 'p.version', 'p.published_id', 'p.series_id', 'p.sort_key', 't.total'])
    .orderBy('p.sort_key', o.sortDir)
    .orderBy('p.id', o.sortDir)
    .execute()
  const found = rows.flatMap(({ total: _total, ...r }) =>
    r.id === null ? [] : [{ ...r, id: r.id, version: r.version ?? '' }])
  return { ...pageOf(found, window, keyOf(o.sortBy)), total: totalIn(rows) }
}

/** The sort key of a row of the events list: its sort column, then its id. */
const keyOf = (sortBy: typeof EVENT_SORT_FIELDS[number]) => (row: { id: number, sort_key: unknown }): unknown[] =>
  sortBy === 'id' ? [row.id] : [row.sort_key, row.id]

/** An event as a list reads it first: which row, which version of it (row-json-cache.ts), its series. */
export interface VersionedEvent {
  id: number
  /** PostgreSQL's xmin: changes with every update of the row */
  version: string
  published_id: number | null
  series_id: number | null
}

/**
 * Events (published or draft) overlapping [from, to): start before `to`, end (or start) at or after
 * `from`, in one statement. An event that overlaps the range started at most the tenant's longest
 * event before `from` (one descent of events_duration, migrations/0010_calendar_bound.sql), so the
 * start index reads only [from − longest, to), not every earlier event. The plan does not depend
 * on the values (the bound is computed when the statement runs), so the prepared statement's
 * generic plan serves: planning it for each request's values cost more than running it.
 */
export async function calendarEvents (
  trx: Tx,
  auth: AuthContext,
  from: Date,
  to: Date,
  sortBy: 'start_dt' | 'title',
  sortDir: 'asc' | 'desc',
  limit: number
): Promise<VersionedEvent[]> {
  // how long the tenant's longest event lasts: its end (or start) minus its start
  const longestSpan = sql`coalesce(max(coalesce(longest.end_dt, longest.start_dt) - longest.start_dt), interval '0')`
  return await trx
    .selectFrom('events')
    .select(['events.id', sql<string>`events.xmin::text`.as('version'), 'events.published_id', 'events.series_id'])
    .where(eb => eventVisibleTo(eb, auth))
    .where('events.status', 'in', ['draft', 'published'])
    .where('events.start_dt', 'is not', null)
    .where('events.start_dt', '<', to)
    .where('events.start_dt', '>=', eb =>
      eb
        .selectFrom('events as longest')
        .select(sql<Date>`${from}::timestamptz - ${longestSpan}`.as('since'))
        .where('longest.tenant_id', '=', auth.tenantId)
        .where('longest.is_deleted', '=', false)
        .where('longest.published_id', 'is', null)
        .where('longest.start_dt', 'is not', null)
    )
    .where(sql<Date>`coalesce(events.end_dt, events.start_dt)`, '>=', from)
    .orderBy(`events.${sortBy}`, sortDir)
    .orderBy('events.id', sortDir)
    .limit(limit)
    .execute()
}

/**
 * All SQL of events, their activity rows and their spaces. Every function takes the request's
 * transaction first and names the tenant; visibility comes from events.access.repository.ts.
 */
import {
  expressionBuilder, sql, type Expression, type ExpressionBuilder, type Insertable, type Kysely,
  type SelectQueryBuilder, type SqlBool, type Updateable
} from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import {
  creationOrder, listScope, pageOf, pageWindow, type KeyColumn, type PageParams
} from '../../platform/http/cursor.ts'
import { fromCursor, listPage, orderByKeys, sumOf, totalOf } from '../../platform/db/list-page.ts'
import { deleteRows } from '../../platform/db/match.ts'
import { planList, type Tx } from '../../platform/db/tenant.ts'
import { compactKeptCounts, type Counting } from '../../platform/db/kept-counts.ts'
import { eventVisibleTo, listAudience, memberSpaceIds, type ListClass } from './events.access.repository.ts'
import type { EVENT_SORT_FIELDS, STATUSES } from './events.schemas.ts'
import { EVENT_COLUMNS, type EventRow, type EventsTable } from './events.table.ts'
import { bumpRevision } from '../../platform/db/revision.ts'
import { likePattern } from '../../platform/db/like.ts'

export type EventInsert = Omit<Insertable<EventsTable>, 'tenant_id'>
export type EventUpdate = Updateable<EventsTable>

/** Fields a draft clone carries and publishing promotes onto the published row. */
export const CONTENT_FIELDS = [
  'title',
  'description',
  'address',
  'latitude',
  'longitude',
  'start_dt',
  'end_dt',
  'timezone',
  'keywords',
  'metadata',
  'visibility',
  'priority',
  'title_override',
  'description_override',
  'metadata_override',
  'cover_image_key',
  'parent_event_id'
] as const satisfies ReadonlyArray<keyof EventRow>

/** jsonb values are written as JSON text. */
const jsonb = (v: unknown) => JSON.stringify(v)

export function contentOf (row: EventRow): EventUpdate {
  return {
    title: row.title,
    description: row.description,
    address: row.address,
    latitude: row.latitude,
    longitude: row.longitude,
    start_dt: row.start_dt,
    end_dt: row.end_dt,
    timezone: row.timezone,
    keywords: row.keywords,
    metadata: jsonb(row.metadata),
    visibility: row.visibility,
    priority: row.priority,
    title_override: row.title_override,
    description_override: row.description_override,
    metadata_override: row.metadata_override === null ? null : jsonb(row.metadata_override),
    cover_image_key: row.cover_image_key,
    parent_event_id: row.parent_event_id
  }
}

export async function insertEvent (trx: Tx, tenantId: string, values: EventInsert): Promise<EventRow> {
  return await trx
    .insertInto('events')
    .values({ ...values, tenant_id: tenantId })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function updateEvent (trx: Tx, tenantId: string, id: number, values: EventUpdate): Promise<EventRow> {
  return await trx.updateTable('events')
    .set({ ...values, ...bumpRevision() })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function lockDraftClone (trx: Tx, tenantId: string, publishedId: number): Promise<EventRow | undefined> {
  return await trx.selectFrom('events').select(EVENT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('published_id', '=', publishedId)
    .forUpdate()
    .executeTakeFirst()
}

export async function findDraftClone (trx: Tx, tenantId: string, publishedId: number): Promise<EventRow | undefined> {
  return await trx.selectFrom('events').select(EVENT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('published_id', '=', publishedId)
    .executeTakeFirst()
}

export async function lockById (trx: Tx, tenantId: string, id: number): Promise<EventRow> {
  return await trx.selectFrom('events').select(EVENT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .forUpdate()
    .executeTakeFirstOrThrow()
}

export async function deleteRow (trx: Tx, tenantId: string, id: number): Promise<void> {
  await trx.deleteFrom('events').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

/** Whether an event exists (not deleted) in the tenant and the caller may see it. */
export async function visibleEventExists (trx: Tx, auth: AuthContext, id: number): Promise<boolean> {
  const row = await trx
    .selectFrom('events')
    .select('id')
    .where('id', '=', id)
    .where(eb => eventVisibleTo(eb, auth))
    .executeTakeFirst()
  return row !== undefined
}

export interface SpaceRef { id: number, title: string }

/** The (not deleted) spaces of each event, keyed by the event's id; a draft clone gets its published row's. */
export async function spacesOf (
  trx: Tx,
  tenantId: string,
  rows: Array<Pick<EventRow, 'id' | 'published_id'>>
): Promise<Map<number, SpaceRef[]>> {
  const out = new Map<number, SpaceRef[]>()
  if (rows.length === 0) return out
  const roots = [...new Set(rows.map(r => r.published_id ?? r.id))]
  // The events' links first, by (tenant_id, event_id), then their spaces. As one join, the planner
  // could walk every space of the tenant and scan its links for the ids (15 ms for a calendar month,
  // against 1.7 ms this way). One array parameter: the same prepared statement for any number of events.
  const found = await trx
    .with(
      cte => cte('es').materialized(),
      db =>
        db
          .selectFrom('event_spaces')
          .select(['event_id', 'space_id'])
          .where('tenant_id', '=', tenantId)
          .where(sql<boolean>`event_id = any(${roots}::bigint[])`)
    )
    .selectFrom('es')
    .innerJoin('spaces as s', join => join.on('s.tenant_id', '=', tenantId).onRef('s.id', '=', 'es.space_id'))
    .select(['es.event_id', 's.id', 's.title'])
    .where('s.is_deleted', '=', false)
    .orderBy('es.event_id')
    .orderBy('s.id')
    .execute()
  const byRoot = new Map<number, SpaceRef[]>()
  for (const f of found) {
    const list = byRoot.get(f.event_id) ?? []
    list.push({ id: f.id, title: f.title })
    byRoot.set(f.event_id, list)
  }
  for (const r of rows) out.set(r.id, byRoot.get(r.published_id ?? r.id) ?? [])
  return out
}

/**
 * An event the caller may see (draft clones included, judged by their published row), with its
 * spaces and its series' title, in one statement (GET one event); undefined when hidden or gone.
 */
export async function findEventJoined (trx: Tx, auth: AuthContext, id: number) {
  const t = auth.tenantId
  return await trx
    .selectFrom('events')
    .select(EVENT_COLUMNS.map(c => `events.${c}` as const))
    // the tenant as a value in each subquery too: one shard on Citus
    .select(
      sql<
        SpaceRef[]
      >`(select coalesce(json_agg(json_build_object('id', s.id, 'title', s.title) order by s.id), '[]'::json)
      from event_spaces es join spaces s on s.tenant_id = ${t} and s.id = es.space_id
      where es.tenant_id = ${t} and es.tenant_id = events.tenant_id and es.event_id = coalesce(events.published_id, events.id)
        and not s.is_deleted)`.as('spaces')
    )
    .select(
      sql<string | null>`(select es.title from event_series es
      where es.tenant_id = ${t} and es.tenant_id = events.tenant_id and es.id = events.series_id)`.as('series_title')
    )
    .where('events.id', '=', id)
    .where(eb => eventVisibleTo(eb, auth, { includeDraftClones: true }))
    .executeTakeFirst()
}

/** The master titles of the series the rows belong to, keyed by series id. */
export async function seriesTitlesOf (
  trx: Tx,
  tenantId: string,
  rows: Array<Pick<EventRow, 'series_id'>>
): Promise<Map<number, string>> {
  const ids = [...new Set(rows.flatMap(r => (r.series_id === null ? [] : [r.series_id])))]
  if (ids.length === 0) return new Map()
  const found = await trx
    .selectFrom('event_series')
    .select(['id', 'title'])
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${ids}::bigint[])`)
    .execute()
  return new Map(found.map(f => [f.id, f.title]))
}

/** `%`, `_` and `\` are literal in a search term. */

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
  // (migrations/0019_event_list_counts.sql): one index read of the links of those spaces, grouped by event, in
  // the list's order. Walking the tenant's members-only events by start for the few linked to the caller's
  // spaces read every one of them when fewer than a page were linked. For lists by start within a start
  // range (no row without a start) filtered by nothing the links do not copy.
  const statuses = o.status !== undefined ? [o.status] : ['draft', 'published']
  const linksServe = kept !== undefined && o.sortBy === 'start_dt' && o.startAfter !== undefined &&
    (o.visibility === undefined || o.visibility === 0 || o.visibility === 20)
  const linkKeys = keys.map((k, i) => ({ ...k, ref: i === 0 ? 'l.start_dt' : 'l.id', nullable: false }))
  const cursorStart = linksServe ? window.after?.[0] ?? undefined : undefined
  const linkedPick = (reach: number) => trx.selectFrom(trx.selectFrom('event_spaces as es')
    .select(['es.event_id as id', sql<Date>`min(es.event_start_dt)`.as('start_dt')])
    .where('es.tenant_id', '=', auth.tenantId)
    .where('es.space_id', '=', sql<number>`any(${memberSpaceIds(auth)})`)
    .where(sql<SqlBool>`es.event_listed`)
    .where('es.event_visibility', '=', 20)
    .where('es.event_status', 'in', statuses)
    .where('es.event_start_dt', '>=', new Date(o.startAfter ?? 0))
    .$if(o.startBefore !== undefined, qb => qb.where('es.event_start_dt', '<=', new Date(o.startBefore ?? 0)))
    // after a cursor, only the links from its start on (every link of an event copies the event's start): the
    // grouping then reads the links of the page's range, not of every page before it
    .$if(cursorStart !== undefined, qb => qb.where('es.event_start_dt', o.sortDir === 'asc' ? '>=' : '<=',
      sql<Date>`${cursorStart}::timestamptz`))
    .groupBy('es.event_id')
    .as('l'))
    .select('l.id')
    .$call(qb => fromCursor(qb, linkKeys, window))
    .limit(reach)

  if (audience === undefined) {
    const [rows, total] = await Promise.all([
      fromCursor(filtered(trx.selectFrom('events').select(columns)), keys, window)
        .limit(window.limit)
        .offset(window.offset)
        .execute(),
      totalOf(trx, [kept !== undefined ? kept.allCount() : rowCount(sql<boolean>`true`)])
    ])
    return { ...pageOf(rows, window, keyOf(o.sortBy)), total }
  }

  // each branch's first rows of the page's end, then the page from their union
  const reach = window.offset + window.limit
  const pickOf = (branch: Expression<SqlBool>) => trx.selectFrom(
    fromCursor(filtered(trx.selectFrom('events').select('events.id')).where(branch), keys, window).limit(reach).as('b')
  ).select('b.id')
  const picks = [
    ...audience.classes.map(c =>
      c.visibility === 20 && linksServe ? trx.selectFrom(linkedPick(reach).as('b')).select('b.id') : pickOf(c.where)
    ),
    ...audience.owned.map(pickOf)
  ]
  const union = picks.reduce((all, pick) => all.union(pick))
  // the classes are disjoint: their counts add; the caller's own rows count where no class holds them
  const counts: Array<Expression<unknown>> = audience.classes.map(c =>
    kept !== undefined ? kept.classCount(c) : rowCount(c.where)
  )
  // The caller's own rows, each kind from its index (an `or` of the three let a generic plan walk every event of
  // the range), then the few that no class holds; coalesce: a class test that is null (an organization-wide
  // event without an organization) holds no row
  const ownedIds = audience.owned
    .map(o => filtered(trx.selectFrom('events').select('events.id')).where(o))
    .reduce((all, ids) => all.union(ids))
  counts.push(trx.selectFrom('events').select(eb => eb.fn.countAll<number>().as('n'))
    .where('events.tenant_id', '=', auth.tenantId)
    .where('events.id', 'in', ownedIds)
    .where(eb => eb.not(sql<SqlBool>`coalesce(${audience.inClasses}, false)`)))
  const [rows, total] = await Promise.all([
    orderByKeys(
      trx
        .selectFrom('events')
        .select(columns)
        .where('events.tenant_id', '=', auth.tenantId)
        .where('events.id', 'in', union),
      keys
    )
      .limit(window.limit)
      .offset(window.offset)
      .execute(),
    totalOf(trx, counts)
  ])
  return { ...pageOf(rows, window, keyOf(o.sortBy)), total }
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
        .select(
          sql<Date>`${from}::timestamptz - coalesce(max(coalesce(longest.end_dt, longest.start_dt) - longest.start_dt), interval '0')`.as(
            'since'
          )
        )
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

export async function insertActivity (
  trx: Tx,
  values: {
    tenantId: string
    eventId: number
    orgId: string | null
    actorId: string | null
    kind: string
    payload: Record<string, unknown>
  }
) {
  return await trx
    .insertInto('event_activity')
    .values({
      tenant_id: values.tenantId,
      event_id: values.eventId,
      org_id: values.orgId,
      actor_id: values.actorId,
      kind: values.kind,
      payload: jsonb(values.payload)
    })
    .returning(['id', 'event_id', 'org_id', 'actor_id', 'kind', 'payload', 'at'])
    .executeTakeFirstOrThrow()
}

const ACTIVITY_KEYS: KeyColumn[] = [{ ref: 'at', dir: 'desc', type: 'time' }, { ref: 'id', dir: 'desc', type: 'int' }]

/** Activity rows of an event, newest first, `limit` of them after the cursor's row; the cursor of the next ones. */
export async function listActivity (
  trx: Tx,
  tenantId: string,
  eventId: number,
  kind: string | undefined,
  limit: number,
  cursor: string | undefined
) {
  const window = pageWindow(
    { size: limit, cursor },
    listScope('event-activity', { eventId, kind: kind ?? '' }),
    ACTIVITY_KEYS
  )
  const rows = await trx
    .selectFrom('event_activity')
    .select(['id', 'event_id', 'org_id', 'actor_id', 'kind', 'payload', 'at'])
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .$if(kind !== undefined && kind !== '', qb => qb.where('kind', '=', kind ?? ''))
    .$call(qb => fromCursor(qb, ACTIVITY_KEYS, window))
    .limit(window.limit)
    .execute()
  const { items, next_cursor: nextCursor } = pageOf(rows, window, r => [r.at, r.id])
  return { items, next_cursor: nextCursor }
}

const EVENT_SPACE_COLUMNS = [
  'es.id',
  'es.event_id',
  'es.space_id',
  'es.org_id',
  'es.created_at',
  'es.updated_at'
] as const
const EVENT_SPACE_KEYS = creationOrder('asc', 'es')

export async function listEventSpaces (trx: Tx, tenantId: string, eventId: number, q: PageParams) {
  const window = pageWindow(q, listScope('event-spaces', { eventId }), EVENT_SPACE_KEYS)
  const base = trx
    .selectFrom('event_spaces as es')
    .innerJoin('spaces as s', join => join.onRef('s.tenant_id', '=', 'es.tenant_id').onRef('s.id', '=', 'es.space_id'))
    .where('es.tenant_id', '=', tenantId)
    .where('es.event_id', '=', eventId)
    .where('s.is_deleted', '=', false)
  return await listPage(base, qb => qb.select(EVENT_SPACE_COLUMNS), EVENT_SPACE_KEYS, window)
}

export async function insertEventSpace (
  trx: Tx,
  tenantId: string,
  eventId: number,
  spaceId: number,
  orgId: string | null
) {
  return await trx
    .insertInto('event_spaces')
    .values({ tenant_id: tenantId, event_id: eventId, space_id: spaceId, org_id: orgId })
    .onConflict(oc => oc.columns(['tenant_id', 'event_id', 'space_id']).doNothing())
    .returning(['id', 'event_id', 'space_id', 'org_id', 'created_at', 'updated_at'])
    .executeTakeFirst()
}

export async function deleteEventSpace (trx: Tx, tenantId: string, eventId: number, spaceId: number): Promise<boolean> {
  return await deleteRows(trx, 'event_spaces', { tenant_id: tenantId, event_id: eventId, space_id: spaceId }) > 0
}

/**
 * All SQL of events, their activity rows and their spaces. Every function takes the request's
 * transaction first and names the tenant; visibility comes from events.access.ts.
 */
import { sql, type Insertable, type Updateable } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { jsonFields } from '../../platform/db/json-render.ts'
import { planForValues, type Tx } from '../../platform/db/tenant.ts'
import { eventVisibleTo } from './events.access.ts'
import { Event, type EVENT_SORT_FIELDS, type STATUSES } from './events.schemas.ts'
import { EVENT_COLUMNS, type EventRow, type EventsTable } from './events.table.ts'

export type EventInsert = Omit<Insertable<EventsTable>, 'tenant_id'>
export type EventUpdate = Updateable<EventsTable>

/** Fields a draft clone carries and publishing promotes onto the published row. */
export const CONTENT_FIELDS = [
  'title', 'description', 'address', 'latitude', 'longitude', 'start_dt', 'end_dt', 'timezone', 'keywords', 'metadata',
  'visibility', 'priority', 'title_override', 'description_override', 'metadata_override', 'cover_image_key', 'parent_event_id'
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
  return await trx.insertInto('events').values({ ...values, tenant_id: tenantId }).returningAll().executeTakeFirstOrThrow()
}

export async function updateEvent (trx: Tx, tenantId: string, id: number, values: EventUpdate): Promise<EventRow> {
  return await trx.updateTable('events')
    .set({ ...values, revision: sql`revision + 1`, updated_at: sql`now()` })
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
  const row = await trx.selectFrom('events').select('id').where('id', '=', id).where(eb => eventVisibleTo(eb, auth)).executeTakeFirst()
  return row !== undefined
}

export interface SpaceRef { id: number, title: string }

/** The (not deleted) spaces of each event, keyed by the event's id; a draft clone gets its published row's. */
export async function spacesOf (trx: Tx, tenantId: string, rows: Array<Pick<EventRow, 'id' | 'published_id'>>): Promise<Map<number, SpaceRef[]>> {
  const out = new Map<number, SpaceRef[]>()
  if (rows.length === 0) return out
  const roots = [...new Set(rows.map(r => r.published_id ?? r.id))]
  // The events' links first, by (tenant_id, event_id), then their spaces. As one join, the planner
  // could walk every space of the tenant and scan its links for the ids (15 ms for a calendar month,
  // against 1.7 ms this way). One array parameter: the same prepared statement for any number of events.
  const found = await trx
    .with(cte => cte('es').materialized(), db => db.selectFrom('event_spaces')
      .select(['event_id', 'space_id'])
      .where('tenant_id', '=', tenantId)
      .where(sql<boolean>`event_id = any(${roots}::bigint[])`))
    .selectFrom('es')
    .innerJoin('spaces as s', join => join.on('s.tenant_id', '=', tenantId).onRef('s.id', '=', 'es.space_id'))
    .select(['es.event_id', 's.id', 's.title'])
    .where('s.is_deleted', '=', false)
    .orderBy('es.event_id').orderBy('s.id')
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

/** The master titles of the series the rows belong to, keyed by series id. */
export async function seriesTitlesOf (trx: Tx, tenantId: string, rows: Array<Pick<EventRow, 'series_id'>>): Promise<Map<number, string>> {
  const ids = [...new Set(rows.flatMap(r => r.series_id === null ? [] : [r.series_id]))]
  if (ids.length === 0) return new Map()
  const found = await trx.selectFrom('event_series').select(['id', 'title'])
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${ids}::bigint[])`)
    .execute()
  return new Map(found.map(f => [f.id, f.title]))
}

/** `%`, `_` and `\` are literal in a search term. */
export const likePattern = (term: string): string => `%${term.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`

export interface ListOptions {
  page: number
  size: number
  search?: string | undefined
  sortBy: typeof EVENT_SORT_FIELDS[number]
  sortDir: 'asc' | 'desc'
  status?: typeof STATUSES[number] | undefined
  visibility?: number | undefined
  startAfter?: string | undefined
  startBefore?: string | undefined
  spaceIds?: number[] | undefined
  templates?: string[] | undefined
}

const NULLABLE_SORTS = new Set<string>(['start_dt', 'end_dt', 'published_at'])

export async function listEvents (trx: Tx, auth: AuthContext, o: ListOptions) {
  // the plan depends on how selective the filters' values are (dates, status, text)
  await planForValues(trx)
  const base = trx.selectFrom('events')
    .where(eb => eventVisibleTo(eb, auth))
    .where(eb => o.status !== undefined ? eb('events.status', '=', o.status) : eb('events.status', 'in', ['draft', 'published']))
    .$if(o.visibility !== undefined && o.visibility !== 0, qb => qb.where('events.visibility', '=', o.visibility ?? 0))
    .$if(o.search !== undefined && o.search !== '', qb => qb.where('events.search_text', 'like', likePattern(o.search ?? '')))
    .$if(o.startAfter !== undefined, qb => qb.where('events.start_dt', '>=', new Date(o.startAfter ?? 0)))
    .$if(o.startBefore !== undefined, qb => qb.where('events.start_dt', '<=', new Date(o.startBefore ?? 0)))
    .$if(o.templates !== undefined && o.templates.length > 0, qb => qb.where('events.template', 'in', o.templates ?? []))
    .$if(o.spaceIds !== undefined && o.spaceIds.length > 0, qb => qb.where(eb => eb.exists(eb.selectFrom('event_spaces as es')
      .select(sql`1`.as('one'))
      .where('es.tenant_id', '=', auth.tenantId) // as a value too: one shard on Citus
      .whereRef('es.tenant_id', '=', 'events.tenant_id')
      .whereRef('es.event_id', '=', 'events.id')
      .where('es.space_id', 'in', o.spaceIds ?? []))))
  const [items, count] = await Promise.all([
    base.select(EVENT_COLUMNS.map(c => `events.${c}` as const))
      // `nulls last` only where a column can be null, so the other sorts follow the list indexes
      .orderBy(`events.${o.sortBy}`, (ob) => {
        const dir = o.sortDir === 'asc' ? ob.asc() : ob.desc()
        return NULLABLE_SORTS.has(o.sortBy) ? dir.nullsLast() : dir
      })
      .orderBy('events.id', o.sortDir)
      .limit(o.size).offset((o.page - 1) * o.size)
      .execute(),
    base.select(eb => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return { items, total: Number(count.total) }
}

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
export async function calendarEvents (trx: Tx, auth: AuthContext, from: Date, to: Date, sortBy: 'start_dt' | 'title', sortDir: 'asc' | 'desc', limit: number): Promise<VersionedEvent[]> {
  return await trx.selectFrom('events')
    .select(['events.id', sql<string>`events.xmin::text`.as('version'), 'events.published_id', 'events.series_id'])
    .where(eb => eventVisibleTo(eb, auth))
    .where('events.status', 'in', ['draft', 'published'])
    .where('events.start_dt', 'is not', null)
    .where('events.start_dt', '<', to)
    .where('events.start_dt', '>=', eb => eb.selectFrom('events as longest')
      .select(sql<Date>`${from}::timestamptz - coalesce(max(coalesce(longest.end_dt, longest.start_dt) - longest.start_dt), interval '0')`.as('since'))
      .where('longest.tenant_id', '=', auth.tenantId)
      .where('longest.is_deleted', '=', false)
      .where('longest.published_id', 'is', null)
      .where('longest.start_dt', 'is not', null))
    .where(sql<Date>`coalesce(events.end_dt, events.start_dt)`, '>=', from)
    .orderBy(`events.${sortBy}`, sortDir)
    .orderBy('events.id', sortDir)
    .limit(limit)
    .execute()
}

/** Fields of the Event body that other tables supply; the rendered JSON ends before them. */
export const EVENT_JOINED_FIELDS = ['series_title', 'spaces'] as const

const EVENT_JSON_FIELDS = jsonFields(Event, 'events', EVENT_JOINED_FIELDS)

/**
 * The Event bodies of rows as PostgreSQL renders them (json-render.ts), without the fields of
 * EVENT_JOINED_FIELDS, each with the version it was rendered from. Rows gone since the caller
 * read their ids are missing.
 */
export async function eventsJson (trx: Tx, tenantId: string, ids: number[]): Promise<Array<{ id: number, version: string, json: string }>> {
  const { rows } = await sql<{ id: number, version: string, json: string }>`select events.id, events.xmin::text as version, to_json(r)::text as json
    from events cross join lateral (select ${sql.join(EVENT_JSON_FIELDS)}) r
    where events.tenant_id = ${tenantId} and events.id = any(${ids}::bigint[])`.execute(trx)
  return rows
}

export async function insertActivity (trx: Tx, values: { tenantId: string, eventId: number, orgId: string | null, actorId: string | null, kind: string, payload: Record<string, unknown> }) {
  return await trx.insertInto('event_activity').values({
    tenant_id: values.tenantId,
    event_id: values.eventId,
    org_id: values.orgId,
    actor_id: values.actorId,
    kind: values.kind,
    payload: jsonb(values.payload)
  }).returning(['id', 'event_id', 'org_id', 'actor_id', 'kind', 'payload', 'at']).executeTakeFirstOrThrow()
}

export async function listActivity (trx: Tx, tenantId: string, eventId: number, kind: string | undefined, limit: number) {
  return await trx.selectFrom('event_activity')
    .select(['id', 'event_id', 'org_id', 'actor_id', 'kind', 'payload', 'at'])
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId)
    .$if(kind !== undefined && kind !== '', qb => qb.where('kind', '=', kind ?? ''))
    .orderBy('at', 'desc').orderBy('id', 'desc')
    .limit(limit)
    .execute()
}

const EVENT_SPACE_COLUMNS = ['es.id', 'es.event_id', 'es.space_id', 'es.org_id', 'es.created_at', 'es.updated_at'] as const

export async function listEventSpaces (trx: Tx, tenantId: string, eventId: number, page: number, size: number) {
  const base = trx.selectFrom('event_spaces as es')
    .innerJoin('spaces as s', join => join.onRef('s.tenant_id', '=', 'es.tenant_id').onRef('s.id', '=', 'es.space_id'))
    .where('es.tenant_id', '=', tenantId).where('es.event_id', '=', eventId).where('s.is_deleted', '=', false)
  const [items, count] = await Promise.all([
    base.select(EVENT_SPACE_COLUMNS).orderBy('es.created_at').orderBy('es.id').limit(size).offset((page - 1) * size).execute(),
    base.select(eb => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return { items, total: Number(count.total) }
}

export async function insertEventSpace (trx: Tx, tenantId: string, eventId: number, spaceId: number, orgId: string | null) {
  return await trx.insertInto('event_spaces')
    .values({ tenant_id: tenantId, event_id: eventId, space_id: spaceId, org_id: orgId })
    .onConflict(oc => oc.columns(['tenant_id', 'event_id', 'space_id']).doNothing())
    .returning(['id', 'event_id', 'space_id', 'org_id', 'created_at', 'updated_at'])
    .executeTakeFirst()
}

export async function deleteEventSpace (trx: Tx, tenantId: string, eventId: number, spaceId: number): Promise<boolean> {
  const res = await trx.deleteFrom('event_spaces')
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('space_id', '=', spaceId)
    .executeTakeFirst()
  return Number(res.numDeletedRows) > 0
}

/**
 * SQL of one event at a time: its row (insert, update, lock, draft clone), GET of one event with its spaces and
 * series title, the spaces and series titles of given rows, its activity rows and its links to spaces. The lists
 * of events (GET /events, its filters and counts, the calendar) are events.list.repository.ts. Every function takes
 * the request's transaction first and names the tenant; visibility comes from events.access.repository.ts.
 */
import { sql, type Insertable, type RawBuilder, type Updateable } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import {
  creationOrder, listScope, pageOf, pageWindow, type KeyColumn, type PageParams
} from '../../platform/http/cursor.ts'
import { fromCursor, listPage } from '../../platform/db/list-page.ts'
import { deleteRows } from '../../platform/db/match.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { eventVisibleTo, rootIdOf } from './events.access.repository.ts'
import { EVENT_COLUMNS, type EventRow, type EventsTable } from './events.table.ts'
import { bumpRevision } from '../../platform/db/revision.ts'

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

/**
 * The statement of the (not deleted) spaces of events (`spacesByEvent` reads its rows). The events' links first,
 * by (tenant_id, event_id), then their spaces. As one join, the planner could walk every space of the tenant and
 * scan its links for the ids (15 ms for a calendar month, against 1.7 ms this way). One array parameter: the same
 * prepared statement for any number of events.
 */
export function spacesQuery (trx: Tx, tenantId: string, rows: Array<Pick<EventRow, 'id' | 'published_id'>>) {
  const roots = [...new Set(rows.map(r => r.published_id ?? r.id))]
  return trx
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
}

/** The spaces of each event from the rows of `spacesQuery`, keyed by the event's id; a draft clone gets its root's. */
export function spacesByEvent (
  rows: Array<Pick<EventRow, 'id' | 'published_id'>>,
  found: Array<{ event_id: number, id: number, title: string }>
): Map<number, SpaceRef[]> {
  const byRoot = new Map<number, SpaceRef[]>()
  for (const f of found) {
    const list = byRoot.get(f.event_id) ?? []
    list.push({ id: f.id, title: f.title })
    byRoot.set(f.event_id, list)
  }
  const out = new Map<number, SpaceRef[]>()
  for (const r of rows) out.set(r.id, byRoot.get(r.published_id ?? r.id) ?? [])
  return out
}

/**
 * An event the caller may see (draft clones included, judged by their published row), with its spaces, its series'
 * title and `extra` (a column of the event whose id it is given: the root, the published row of a draft clone), in one
 * statement (GET one event); undefined when hidden or gone.
 */
export async function findEventJoined (
  trx: Tx, auth: AuthContext, id: number, extra: (root: RawBuilder<number>) => RawBuilder<unknown>
) {
  const t = auth.tenantId
  const root = rootIdOf('events')
  return await trx
    .selectFrom('events')
    .select(EVENT_COLUMNS.map(c => `events.${c}` as const))
    // the tenant as a value in each subquery too: one shard on Citus
    .select(
      sql<
        SpaceRef[]
      >`(select coalesce(json_agg(json_build_object('id', s.id, 'title', s.title) order by s.id), '[]'::json)
      from event_spaces es join spaces s on s.tenant_id = ${t} and s.id = es.space_id
      where es.tenant_id = ${t} and es.tenant_id = events.tenant_id and es.event_id = ${root}
        and not s.is_deleted)`.as('spaces')
    )
    .select(
      sql<string | null>`(select es.title from event_series es
      where es.tenant_id = ${t} and es.tenant_id = events.tenant_id and es.id = events.series_id)`.as('series_title')
    )
    .select(extra(root).as('extra'))
    .where('events.id', '=', id)
    .where(eb => eventVisibleTo(eb, auth, { includeDraftClones: true }))
    .executeTakeFirst()
}

/** The statement of the master titles of the series the rows belong to. */
export function seriesTitlesQuery (trx: Tx, tenantId: string, rows: Array<Pick<EventRow, 'series_id'>>) {
  const ids = [...new Set(rows.flatMap(r => (r.series_id === null ? [] : [r.series_id])))]
  return trx
    .selectFrom('event_series')
    .select(['id', 'title'])
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${ids}::bigint[])`)
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
  return await listPage(trx, base, qb => qb.select(EVENT_SPACE_COLUMNS), EVENT_SPACE_KEYS, window)
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

/**
 * Events by id, locked (`for update`) in id order, as registration's callers lock an event before they change its
 * attendees (attendees.registration.ts): seat counts and waitlist positions read under the lock stay true.
 */
export async function lockEventsById (trx: Tx, tenantId: string, ids: readonly number[]): Promise<EventRow[]> {
  if (ids.length === 0) return []
  return await trx.selectFrom('events').select(EVENT_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .orderBy('id')
    .forUpdate()
    .execute()
}

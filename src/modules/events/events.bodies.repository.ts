/**
 * The events lists' fast path (the calendar and GET /events): Event bodies rendered by PostgreSQL and kept per row
 * version, so that a list of 400 wide rows is neither parsed into JavaScript values nor serialized again
 * (docs/performance.md). Everything it relies on is in this file.
 *
 * How a list is answered: the list's query reads each row's id and version (`xmin`); `renderEvents` takes the body
 * of every row from the cache when it holds that very version, has PostgreSQL render the others
 * (`eventsJsonQuery`, the fields of the Event schema as its serializer would write them: platform/db/json-render.ts),
 * reads the fields other tables supply (EVENT_JOINED_FIELDS) for every row, and the route sends the pieces
 * (`sendJsonFields`).
 *
 * The contract, and what enforces each rule:
 * 1. A body is rendered only in a transaction that has written nothing. All the row versions one transaction writes
 *    share its `xmin`, so a body rendered after the request's own write could be changed again by the same
 *    transaction under the same version, and stay in the cache stale. `eventsJsonQuery` asks PostgreSQL whether the
 *    transaction has an id (it gets one at its first write) and throws before caching anything
 *    (events.bodies.test.ts).
 * 2. No JavaScript-side transform of a cached column: the cached text is the column as PostgreSQL renders it, so
 *    GET /events/{id} (the serializer, through `toEvent`) must answer the same; events.list.test.ts compares every
 *    item of the calendar with GET of the same event, before and after changes.
 * 3. No per-caller field in the cached part: a body is cached per tenant and row, served to every caller who may
 *    see the row (which rows a caller sees is the list query's business, never the cache's). The cached fields are
 *    the events table's own columns (`jsonFields` fails the query on a field without a column); the fields other
 *    tables supply come last in the schema (checked when this module loads) and are read on every request.
 *    events.bodies.test.ts renders one event for callers of different rights and compares the bytes.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { jsonFields } from '../../platform/db/json-render.ts'
import { RowJsonCache } from '../../platform/db/row-json-cache.ts'
import type { JsonChunks } from '../../platform/http/schema-links.ts'
import { Event } from './events.schemas.ts'
import { seriesTitlesQuery, spacesByEvent, spacesQuery, type SpaceRef } from './events.repository.ts'
import { together } from '../../platform/db/together.ts'
import type { VersionedEvent } from './events.list.repository.ts'
import type { EventRow } from './events.table.ts'

/** Fields of the Event body that other tables supply; the rendered JSON ends before them. */
export const EVENT_JOINED_FIELDS = ['series_title', 'spaces'] as const

const joinedLast = Object.keys(Event.properties).slice(-EVENT_JOINED_FIELDS.length)
if (joinedLast.join() !== EVENT_JOINED_FIELDS.join()) {
  throw new Error(`Event schema: ${EVENT_JOINED_FIELDS.join(', ')} must be its last fields (events.bodies.repository)`)
}

/**
 * Fields of GET /events/{id} alone: registration settings in force and attendee counts (attendees.registration.ts),
 * read on each request; lists leave them out.
 */
export const EVENT_DETAIL_FIELDS = [
  'capacity', 'waitlist_enabled', 'requires_approval', 'registration_inherited', 'confirmed_count', 'waitlist_count',
  'pending_count', 'no_show_count', 'seats_left'
] as const

const EVENT_JSON_FIELDS = jsonFields(Event, 'events', [...EVENT_JOINED_FIELDS, ...EVENT_DETAIL_FIELDS])

/** The cache of rendered Event bodies, one per app (AppContext.eventBodies); 16 MiB holds some 18 000 events. */
export const newEventBodyCache = (): RowJsonCache => new RowJsonCache(16 << 20)

/**
 * The Event bodies of rows as PostgreSQL renders them, without the fields of EVENT_JOINED_FIELDS, each with the
 * version it was rendered from, and whether the transaction has written (rule 1: `unwritten` throws then). Rows gone
 * since the caller read their ids are missing.
 */
const eventsJsonQuery = (trx: Tx, tenantId: string, ids: number[]) =>
  sql<{ id: number; version: string; json: string; written: boolean }>`
    select events.id, events.xmin::text as version, to_json(r)::text as json,
      pg_current_xact_id_if_assigned() is not null as written
    from events cross join lateral (select ${sql.join(EVENT_JSON_FIELDS)}) r
    where events.tenant_id = ${tenantId} and events.id = any(${ids}::bigint[])`

/** The rows of `eventsJsonQuery`, unless they were rendered in a transaction that has written (rule 1). */
function unwritten (
  rows: Array<{ id: number; version: string; json: string; written: boolean }>
): Array<{ id: number; version: string; json: string }> {
  if (rows[0]?.written === true) {
    throw new Error('Event bodies rendered in a transaction that has written: they could be cached stale')
  }
  return rows.map(({ written: _written, ...row }) => row)
}

type JoinedRow = Pick<EventRow, 'id' | 'published_id' | 'series_id'>

/** What an event shows of other tables (the Event fields of EVENT_JOINED_FIELDS), for many rows at once. */
export interface Joined {
  spaces: (row: JoinedRow) => SpaceRef[]
  seriesTitle: (row: JoinedRow) => string | null
}

/** What an event shows of other tables, from the rows of `spacesQuery` and `seriesTitlesQuery`. */
function joinedFrom (
  rows: JoinedRow[],
  links: Array<{ event_id: number, id: number, title: string }>,
  series: Array<{ id: number, title: string }>
): Joined {
  const spaces = spacesByEvent(rows, links)
  const titles = new Map(series.map(f => [f.id, f.title]))
  return {
    spaces: r => spaces.get(r.id) ?? [],
    seriesTitle: r => r.series_id === null ? null : titles.get(r.series_id) ?? null
  }
}

/** The statement of the series titles of rows, when any belongs to a series. */
const seriesTitlesIf = (trx: Tx, tenantId: string, rows: JoinedRow[]) =>
  rows.some(r => r.series_id !== null) ? seriesTitlesQuery(trx, tenantId, rows) : undefined

/** The spaces and series titles of rows: two statements whatever the number of rows, sent together. */
export async function joinedOf (trx: Tx, tenantId: string, rows: JoinedRow[]): Promise<Joined> {
  if (rows.length === 0) return joinedFrom(rows, [], [])
  const [links, series] = await together(trx, [spacesQuery(trx, tenantId, rows), seriesTitlesIf(trx, tenantId, rows)])
  return joinedFrom(rows, links, series)
}

/**
 * The Event bodies of rows, in their order, as one JSON array in pieces: what `withSpacesAll` and the compiled
 * serializer give. The columns come from `cache` when the row's version is the one cached, else rendered by
 * PostgreSQL (in the same round trip as the spaces and series titles, which are read every time).
 */
export async function renderEvents (
  trx: Tx,
  cache: RowJsonCache,
  tenantId: string,
  rows: VersionedEvent[]
): Promise<JsonChunks> {
  const key = (id: number) => `${tenantId}:${id}`
  const heads = rows.map(r => cache.get(key(r.id), r.version))
  const missing = rows.flatMap((r, i) => heads[i] === undefined ? [r.id] : [])
  // the spaces, the series titles and the bodies not cached, in one round trip
  const [links, series, bodies] = await together(trx, [
    rows.length > 0 ? spacesQuery(trx, tenantId, rows) : undefined,
    seriesTitlesIf(trx, tenantId, rows),
    missing.length > 0 ? eventsJsonQuery(trx, tenantId, missing) : undefined
  ])
  const joined = joinedFrom(rows, links, series)
  const rendered = unwritten(bodies)
  const fresh = new Map<number, Buffer>()
  for (const r of rendered) {
    // the object without its closing brace: the joined fields follow
    const head = Buffer.from(r.json.slice(0, -1))
    cache.set(key(r.id), r.version, head)
    fresh.set(r.id, head)
  }
  const chunks: JsonChunks = []
  rows.forEach((r, i) => {
    const head = heads[i] ?? fresh.get(r.id)
    if (head === undefined) return // deleted between the two statements
    chunks.push(
      chunks.length === 0 ? '[' : ',',
      head,
      `,"series_title":${JSON.stringify(joined.seriesTitle(r))},"spaces":${JSON.stringify(joined.spaces(r))}}`
    )
  })
  chunks.push(chunks.length === 0 ? '[]' : ']')
  return chunks
}

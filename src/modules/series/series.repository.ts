/**
 * All SQL of series: the `event_series` rows, their occurrences (rows of `events` with
 * series_id), attendee counts and the rolling-window directory. Every function takes the
 * transaction first and names the tenant.
 */
import { sql, type Insertable, type Updateable } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { afterKey, listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import { eventVisibleTo } from '../events/events.access.ts'
import type { EventInsert } from '../events/events.repository.ts'
import type { EventRow } from '../events/events.table.ts'
import type { Occurrence } from './recurrence.ts'
import type { EventSeriesTable, SeriesRow } from './series.table.ts'
import { ATTENDEE_STATUSES } from './series.schemas.ts'

export type SeriesInsert = Omit<Insertable<EventSeriesTable>, 'tenant_id'>
export type SeriesUpdate = Updateable<EventSeriesTable>

export async function insertSeries (trx: Tx, tenantId: string, values: SeriesInsert): Promise<SeriesRow> {
  return await trx
    .insertInto('event_series')
    .values({ ...values, tenant_id: tenantId })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function updateSeries (trx: Tx, tenantId: string, id: number, values: SeriesUpdate): Promise<SeriesRow> {
  return await trx.updateTable('event_series')
    .set({ ...values, revision: sql`revision + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returningAll().executeTakeFirstOrThrow()
}

export async function findSeries (
  trx: Tx, tenantId: string, id: number, lock: boolean
): Promise<SeriesRow | undefined> {
  return await trx
    .selectFrom('event_series')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('is_deleted', '=', false)
    .$if(lock, qb => qb.forUpdate())
    .executeTakeFirst()
}

/**
 * Live rows of a series (not deleted, no draft clones) from position `fromIndex` on (and rows without one), by
 * position.
 */
export async function lockOccurrenceRows (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  fromIndex = 0
): Promise<EventRow[]> {
  return await trx
    .selectFrom('events')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('series_id', '=', seriesId)
    .where('is_deleted', '=', false)
    .where('published_id', 'is', null)
    .$if(fromIndex > 0, qb =>
      qb.where(eb => eb.or([eb('series_index', '>=', fromIndex), eb('series_index', 'is', null)]))
    )
    .orderBy('series_index')
    .orderBy('id')
    .forUpdate()
    .execute()
}

/** What every new occurrence of a series shares: the series' content (the times and position vary). */
export type OccurrenceContent = Omit<EventInsert, 'start_dt' | 'end_dt' | 'series_index'>

/**
 * Inserts one occurrence row per slot (in the slots' order), each with the shared content and its
 * slot's times and position: multi-row `INSERT … VALUES`, one statement per chunk of rows that fits
 * PostgreSQL's 65 535 bind parameters (one for any window a series may materialise). Returns the
 * rows, in the slots' order. VALUES rather than INSERT…SELECT from `unnest` of the times: the
 * service runs on Citus, where INSERT…SELECT from a function becomes a COPY that row-level security
 * refuses.
 */
export async function insertOccurrences (
  trx: Tx,
  tenantId: string,
  content: OccurrenceContent,
  slots: readonly Occurrence[]
): Promise<EventRow[]> {
  // as in the single-row insert, a column whose value is undefined is left to its default
  const rows = slots.map(p => ({
    ...content,
    tenant_id: tenantId,
    start_dt: p.start.toISOString(),
    end_dt: p.end.toISOString(),
    series_index: p.index
  }))
  const inserted: EventRow[] = []
  // every column at most one bind parameter
  for (const chunk of rowChunks(rows, Object.keys(rows[0] ?? {}).length)) {
    inserted.push(...(await trx.insertInto('events').values(chunk).returningAll().execute()))
  }
  return inserted
}

/** Soft-deletes occurrence rows (one statement). */
export async function deleteOccurrences (trx: Tx, tenantId: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return
  await trx.updateTable('events')
    .set({ is_deleted: true, revision: sql`revision + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .execute()
}

export interface SlotMove {
  id: number
  seriesIndex: number
  /** new times of a row that keeps its slot's times (a moved row keeps its own) */
  times?: { start: Date, end: Date, timezone: string } | undefined
}

/** Gives occurrence rows their new positions (and times), one statement; returns the rows. */
export async function moveOccurrences (trx: Tx, tenantId: string, moves: readonly SlotMove[]): Promise<EventRow[]> {
  if (moves.length === 0) return []
  const { rows } = await sql<EventRow>`
    update events e set
      series_index = m.series_index,
      start_dt = case when m.retime then m.start_dt else e.start_dt end,
      end_dt = case when m.retime then m.end_dt else e.end_dt end,
      timezone = case when m.retime then m.timezone else e.timezone end,
      revision = e.revision + 1,
      updated_at = now()
    from unnest(${moves.map(m => m.id)}::bigint[], ${moves.map(m => m.seriesIndex)}::int[], ${moves.map(m => m.times !== undefined)}::boolean[],
                ${moves.map(m => m.times?.start.toISOString() ?? null)}::timestamptz[], ${moves.map(m => m.times?.end.toISOString() ?? null)}::timestamptz[],
                ${moves.map(m => m.times?.timezone ?? null)}::text[])
      as m (id, series_index, retime, start_dt, end_dt, timezone)
    where e.tenant_id = ${tenantId} and e.id = m.id
    returning e.*`.execute(trx)
  return rows
}

const OCCURRENCE_KEYS: KeyColumn[] = [
  { ref: 'events.start_dt', dir: 'asc', type: 'time', nullable: true },
  { ref: 'events.series_index', dir: 'asc', type: 'int', nullable: true },
  { ref: 'events.id', dir: 'asc', type: 'int' }
]

/** The occurrences a caller may see, by start, one page (after the cursor's occurrence when there is one). */
export async function pageOccurrences (
  trx: Tx,
  auth: AuthContext,
  seriesId: number,
  q: { page: number; limit: number; cursor?: string | undefined }
) {
  const window = pageWindow(
    { page: q.page, size: q.limit, cursor: q.cursor },
    listScope('occurrences', { seriesId }),
    OCCURRENCE_KEYS
  )
  const base = trx
    .selectFrom('events')
    .where(eb => eventVisibleTo(eb, auth))
    .where('events.series_id', '=', seriesId)
  const [rows, count] = await Promise.all([
    base
      .selectAll('events')
      .$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, OCCURRENCE_KEYS, window.after ?? [])))
      .orderBy('events.start_dt')
      .orderBy('events.series_index')
      .orderBy('events.id')
      .limit(window.limit)
      .offset(window.offset)
      .execute(),
    base.select(eb => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return { ...pageOf(rows, window, r => [r.start_dt, r.series_index, r.id]), total: Number(count.total) }
}

/**
 * Attendees by status and unique contacts, counted in SQL: the series-level rows (index
 * attendees_series_status) and the rows of live occurrences (attendees_event_status), one row of
 * counts whatever the number of occurrences and attendees.
 */
export async function attendeeCounts (trx: Tx, tenantId: string, seriesId: number) {
  const seriesLevel = trx.selectFrom('attendees').select(['status', 'contact_id'])
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('event_id', 'is', null)
  const ofOccurrences = trx.selectFrom('attendees').select(['status', 'contact_id'])
    .where('tenant_id', '=', tenantId)
    .where('event_id', 'in', trx.selectFrom('events').select('events.id')
      .where('events.tenant_id', '=', tenantId).where('events.series_id', '=', seriesId)
      .where('events.is_deleted', '=', false).where('events.published_id', 'is', null))
  const row = await trx.selectFrom(seriesLevel.unionAll(ofOccurrences).as('a'))
    .select(eb => [
      ...ATTENDEE_STATUSES.map(status => eb.fn.countAll<string>().filterWhere('a.status', '=', status).as(status)),
      eb.fn.count<string>('a.contact_id').distinct().as('contacts')
    ])
    .executeTakeFirstOrThrow()
  const counts = Object.fromEntries(ATTENDEE_STATUSES.map(s => [s, Number(row[s])])) as Record<
    (typeof ATTENDEE_STATUSES)[number],
    number
  >
  return { attendee_counts: counts, total_attendees: Number(row.contacts) }
}

/** The caller's active series-level manager rows of a series (event_managers.series_id): their role and permissions. */
export async function activeSeriesGrants (trx: Tx, tenantId: string, seriesId: number, userId: string) {
  return await trx.selectFrom('event_managers').select(['role', 'permissions'])
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId)
    .where('user_id', '=', userId).where('status', '=', 'active')
    .execute()
}

/** The newest series-manager invite of a series (the accept flow may have activated it). */
export async function latestSeriesManager (trx: Tx, tenantId: string, seriesId: number) {
  return await trx.selectFrom('event_managers')
    .select(['id', 'user_id', 'status', 'invited_email', 'invited_by', 'invited_at', 'expires_at', 'accepted_at'])
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('invited_email', 'is not', null)
    .orderBy('id', 'desc')
    .executeTakeFirst()
}

export async function setWindow (trx: Tx, tenantId: string, seriesId: number, windowEnd: Date | null): Promise<void> {
  if (windowEnd === null) {
    await trx.deleteFrom('series_windows').where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).execute()
    return
  }
  await trx.insertInto('series_windows').values({ tenant_id: tenantId, series_id: seriesId, window_end: windowEnd })
    .onConflict(oc => oc.columns(['tenant_id', 'series_id']).doUpdateSet({ window_end: windowEnd }))
    .execute()
}

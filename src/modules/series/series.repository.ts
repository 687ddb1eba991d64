/**
 * All SQL of series: the `event_series` rows, their occurrences (rows of `events` with
 * series_id), attendee counts and the rolling-window directory. Every function takes the
 * transaction first and names the tenant.
 */
import { sql, type Insertable, type Updateable } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { eventVisibleTo } from '../events/events.access.ts'
import type { EventRow } from '../events/events.table.ts'
import type { EventSeriesTable, SeriesRow } from './series.table.ts'
import { ATTENDEE_STATUSES } from './series.schemas.ts'

export type SeriesInsert = Omit<Insertable<EventSeriesTable>, 'tenant_id'>
export type SeriesUpdate = Updateable<EventSeriesTable>

export async function insertSeries (trx: Tx, tenantId: string, values: SeriesInsert): Promise<SeriesRow> {
  return await trx.insertInto('event_series').values({ ...values, tenant_id: tenantId }).returningAll().executeTakeFirstOrThrow()
}

export async function updateSeries (trx: Tx, tenantId: string, id: number, values: SeriesUpdate): Promise<SeriesRow> {
  return await trx.updateTable('event_series')
    .set({ ...values, revision: sql`revision + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returningAll().executeTakeFirstOrThrow()
}

export async function findSeries (trx: Tx, tenantId: string, id: number, lock: boolean): Promise<SeriesRow | undefined> {
  return await trx.selectFrom('event_series').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', id).where('is_deleted', '=', false)
    .$if(lock, qb => qb.forUpdate())
    .executeTakeFirst()
}

/** Live rows of a series (not deleted, no draft clones), by position. */
export async function lockOccurrenceRows (trx: Tx, tenantId: string, seriesId: number): Promise<EventRow[]> {
  return await trx.selectFrom('events').selectAll()
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId)
    .where('is_deleted', '=', false).where('published_id', 'is', null)
    .orderBy('series_index').orderBy('id')
    .forUpdate()
    .execute()
}

/** The occurrences a caller may see, by start, one page. */
export async function pageOccurrences (trx: Tx, auth: AuthContext, seriesId: number, page: number, limit: number) {
  const base = trx.selectFrom('events')
    .where(eb => eventVisibleTo(eb, auth))
    .where('events.series_id', '=', seriesId)
  const [items, count] = await Promise.all([
    base.selectAll('events').orderBy('events.start_dt').orderBy('events.series_index').orderBy('events.id')
      .limit(limit).offset((page - 1) * limit).execute(),
    base.select(eb => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return { items, total: Number(count.total) }
}

/** Attendee rows by status and unique contacts: rows of live occurrences and series-level rows. */
export async function attendeeCounts (trx: Tx, tenantId: string, seriesId: number) {
  const rows = await trx.selectFrom('attendees as a')
    .select(['a.status', 'a.contact_id'])
    .where('a.tenant_id', '=', tenantId)
    .where(eb => eb.or([
      eb.and([eb('a.series_id', '=', seriesId), eb('a.event_id', 'is', null)]),
      eb('a.event_id', 'in', eb.selectFrom('events').select('events.id')
        .where('events.tenant_id', '=', tenantId).where('events.series_id', '=', seriesId)
        .where('events.is_deleted', '=', false).where('events.published_id', 'is', null))
    ]))
    .execute()
  const counts = Object.fromEntries(ATTENDEE_STATUSES.map(s => [s, 0])) as Record<typeof ATTENDEE_STATUSES[number], number>
  const contacts = new Set<string>()
  for (const r of rows) {
    if (Object.hasOwn(counts, r.status)) counts[r.status] += 1
    contacts.add(r.contact_id)
  }
  return { attendee_counts: counts, total_attendees: contacts.size }
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

/**
 * All SQL of series except that of its occurrences (series.occurrences.repository.ts): the
 * `event_series` rows, the rolling-window directory, series-level managers and invites, and
 * series-level attendees (their counts, copies at a split). Every function takes the transaction
 * first and names the tenant; only the window job's directory read spans tenants.
 */
import { sql, type Insertable, type Updateable } from 'kysely'
import { rowChunks } from '../../platform/db/chunks.ts'
import { bumpRevision } from '../../platform/db/revision.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { selectRows } from '../../platform/db/match.ts'
import type { EventManagersTable } from '../event-managers/index.ts'
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
    .set({ ...values, ...bumpRevision() })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returningAll().executeTakeFirstOrThrow()
}

export async function findSeries (
  trx: Tx, tenantId: string, id: number, lock: boolean
): Promise<SeriesRow | undefined> {
  return await selectRows(trx, 'event_series', { tenant_id: tenantId, id, is_deleted: false })
    .selectAll()
    .$if(lock, qb => qb.forUpdate())
    .executeTakeFirst()
}

/** Series of a tenant by id, deleted ones too (their occurrences may still show, cancelled). */
export async function seriesByIds (
  trx: Tx, tenantId: string, ids: readonly number[]
): Promise<Array<SeriesRow & { uid: string | null }>> {
  if (ids.length === 0) return []
  return await trx.selectFrom('event_series').selectAll().select(sql<string | null>`ical_uid`.as('uid'))
    .where('tenant_id', '=', tenantId).where('id', 'in', ids)
    .execute()
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

/** The newest series-manager invite of a series (the accept flow may have activated it). */
export async function latestSeriesManager (trx: Tx, tenantId: string, seriesId: number) {
  return await trx.selectFrom('event_managers')
    .select(['id', 'user_id', 'status', 'invited_email', 'invited_by', 'invited_at', 'expires_at', 'accepted_at'])
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('invited_email', 'is not', null)
    .orderBy('id', 'desc')
    .executeTakeFirst()
}

/** A series-manager invite: an `event_managers` row with series_id and event_id (the anchor) set. */
export type SeriesInvite = Omit<Insertable<EventManagersTable>, 'tenant_id'>

/** Revokes the pending e-mail invites of a series (a new invite replaces them). */
export async function revokePendingSeriesInvites (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  at: Date
): Promise<void> {
  await trx
    .updateTable('event_managers')
    .set({ status: 'revoked', updated_at: at })
    .where('tenant_id', '=', tenantId)
    .where('series_id', '=', seriesId)
    .where('status', '=', 'pending')
    .where('invited_email', 'is not', null)
    .execute()
}

export async function insertSeriesInvite (trx: Tx, tenantId: string, values: SeriesInvite): Promise<void> {
  await trx.insertInto('event_managers').values({ tenant_id: tenantId, ...values }).execute()
}

/**
 * Copies the active series-level managers of a series to another series (on its anchor `anchorId`): read,
 * then written as VALUES (an INSERT … SELECT into a table with an identity column runs as a COPY on Citus,
 * which row-level security refuses).
 */
export async function copySeriesManagers (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  toSeriesId: number,
  anchorId: number
): Promise<void> {
  const managers = await trx
    .selectFrom('event_managers')
    .select([
      'tenant_id',
      'org_id',
      'user_id',
      'permissions',
      'role',
      'status',
      'invited_email',
      'invited_by',
      'invited_at',
      'accepted_at'
    ])
    .where('tenant_id', '=', tenantId)
    .where('series_id', '=', seriesId)
    .where('status', '=', 'active')
    .execute()
  for (const chunk of rowChunks(managers.map(m => ({ ...m, event_id: anchorId, series_id: toSeriesId })), 12)) {
    // a user already managing the new anchor directly keeps that row
    await trx.insertInto('event_managers').values(chunk).onConflict(oc => oc.doNothing()).execute()
  }
}

/** Copies the series-level attendees (event_id null) of a series to another series (see copySeriesManagers). */
export async function copySeriesAttendees (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  toSeriesId: number
): Promise<void> {
  const attendees = await trx.selectFrom('attendees')
    .select(['tenant_id', 'contact_id', 'org_id', 'status', 'notes', 'invited_at'])
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('event_id', 'is', null)
    .execute()
  for (const chunk of rowChunks(attendees.map(a => ({ ...a, series_id: toSeriesId })), 7)) {
    await trx.insertInto('attendees').values(chunk).execute()
  }
}

/** Every tenant's series whose window ends before `before`, the soonest first (the window job; no tenant scope). */
export async function dueWindows (trx: Tx, before: Date, limit: number) {
  return await trx
    .selectFrom('series_windows')
    .select(['tenant_id', 'series_id', 'window_end'])
    .where('window_end', '<', before)
    .orderBy('window_end')
    .limit(limit)
    .execute()
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

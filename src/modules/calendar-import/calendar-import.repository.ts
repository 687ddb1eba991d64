/**
 * All SQL of the calendar import: the UIDs of imported events and series (`ical_uid` of `events` and
 * `event_series`, migration 0041; the column is read here only, so the tables' row types leave it out), and what
 * the import reads of a series' occurrences and of the links of events to a space. Every write of an event or a
 * series itself goes through the events and series modules.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { selectRows, updateRows } from '../../platform/db/match.ts'

/** An event an earlier import made, by UID (deleted ones too: the import reports them). */
export interface ImportedEvent {
  id: number
  uid: string
  is_deleted: boolean
  status: string
  series_id: number | null
}

export async function eventsByUid (trx: Tx, tenantId: string, uids: readonly string[]): Promise<ImportedEvent[]> {
  if (uids.length === 0) return []
  return await selectRows(trx, 'events', { tenant_id: tenantId })
    .where(sql<boolean>`ical_uid = any(${uids}::text[])`)
    .select(['id', 'is_deleted', 'status', 'series_id', sql<string>`ical_uid`.as('uid')])
    .execute()
}

/** A series an earlier import made, by UID (deleted ones too). */
export interface ImportedSeries {
  id: number
  uid: string
  is_deleted: boolean
}

export async function seriesByUid (trx: Tx, tenantId: string, uids: readonly string[]): Promise<ImportedSeries[]> {
  if (uids.length === 0) return []
  return await selectRows(trx, 'event_series', { tenant_id: tenantId })
    .where(sql<boolean>`ical_uid = any(${uids}::text[])`)
    .select(['id', 'is_deleted', sql<string>`ical_uid`.as('uid')])
    .execute()
}

export async function setEventUid (trx: Tx, tenantId: string, id: number, uid: string): Promise<void> {
  await updateRows(trx, 'events', { tenant_id: tenantId, id }).set({ ical_uid: uid }).execute()
}

export async function setSeriesUid (trx: Tx, tenantId: string, id: number, uid: string): Promise<void> {
  await updateRows(trx, 'event_series', { tenant_id: tenantId, id }).set({ ical_uid: uid }).execute()
}

/** The live occurrences of a series (not draft clones), by position: what an override (RECURRENCE-ID) addresses. */
export async function liveOccurrences (trx: Tx, tenantId: string, seriesId: number) {
  return await selectRows(trx, 'events', { tenant_id: tenantId, series_id: seriesId, is_deleted: false })
    .where('published_id', 'is', null)
    .select(['id', 'series_index', 'start_dt', 'end_dt', 'title', 'description', 'address'])
    .orderBy('series_index')
    .execute()
}

/** The series row as the series module reads it (its rule, for the positions of its occurrences). */
export async function findSeries (trx: Tx, tenantId: string, id: number) {
  return await selectRows(trx, 'event_series', { tenant_id: tenantId, id, is_deleted: false })
    .selectAll()
    .executeTakeFirstOrThrow()
}

/** Of `eventIds`, those not linked to the space. */
export async function notInSpace (
  trx: Tx,
  tenantId: string,
  spaceId: number,
  eventIds: readonly number[]
): Promise<number[]> {
  if (eventIds.length === 0) return []
  const linked = await selectRows(trx, 'event_spaces', { tenant_id: tenantId, space_id: spaceId })
    .where(sql<boolean>`event_id = any(${eventIds}::bigint[])`)
    .select('event_id')
    .execute()
  const have = new Set(linked.map(l => Number(l.event_id)))
  return eventIds.filter(id => !have.has(id))
}

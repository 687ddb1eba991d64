/**
 * All SQL of series on its occurrences: rows of `events` with series_id (the live ones: not
 * deleted, no draft clones). Reading and paging them, materialising them from the rule, cascading the
 * series' content, publishing, deleting and moving them to another series. Every function takes the
 * transaction first and names the tenant.
 */
import { sql } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import { bumpRevision, bumpRevisionSql } from '../../platform/db/revision.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { selectRows } from '../../platform/db/match.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import { EVENT_COLUMNS, type EventInsert, type EventRow, type EventUpdate, eventVisibleTo } from '../events/index.ts'
import type { Occurrence } from './series.recurrence.ts'
import { STORAGE_METADATA_KEYS } from './series.schemas.ts'

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
  return await selectRows(trx, 'events', { tenant_id: tenantId, series_id: seriesId, is_deleted: false })
    .selectAll()
    .where('published_id', 'is', null)
    .$if(fromIndex > 0, qb =>
      qb.where(eb => eb.or([eb('series_index', '>=', fromIndex), eb('series_index', 'is', null)]))
    )
    .orderBy('series_index')
    .orderBy('id')
    .forUpdate()
    .execute()
}

/** The id of the live occurrence at position `index` (it exists: its slot was just read). */
export async function occurrenceIdAt (trx: Tx, tenantId: string, seriesId: number, index: number): Promise<number> {
  const row = await trx.selectFrom('events').select('id')
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('series_index', '=', index)
    .where('is_deleted', '=', false).where('published_id', 'is', null)
    .executeTakeFirstOrThrow()
  return row.id
}

/** The anchor of a series: its lowest live position (a deleted one when none is live). */
export async function anchorIdOf (trx: Tx, tenantId: string, seriesId: number): Promise<number> {
  const row = await trx.selectFrom('events').select('id')
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('published_id', 'is', null)
    .orderBy('is_deleted').orderBy('series_index').limit(1).executeTakeFirstOrThrow()
  return row.id
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
    .set({ is_deleted: true, ...bumpRevision() })
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
      ${bumpRevisionSql('e')}
    from unnest(${moves.map(m => m.id)}::bigint[], ${moves.map(m => m.seriesIndex)}::int[],
                ${moves.map(m => m.times !== undefined)}::boolean[],
                ${moves.map(m => m.times?.start.toISOString() ?? null)}::timestamptz[],
                ${moves.map(m => m.times?.end.toISOString() ?? null)}::timestamptz[],
                ${moves.map(m => m.times?.timezone ?? null)}::text[])
      as m (id, series_index, retime, start_dt, end_dt, timezone)
    where e.tenant_id = ${tenantId} and e.id = m.id
    returning e.*`.execute(trx)
  return rows
}

/** The live occurrences of a series, for an update. */
function liveOccurrences (trx: Tx, tenantId: string, seriesId: number) {
  return trx.updateTable('events')
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId)
    .where('is_deleted', '=', false).where('published_id', 'is', null)
}

/** Writes `values` onto every live occurrence of a series (one statement). */
export async function updateLiveOccurrences (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  values: EventUpdate
): Promise<void> {
  await liveOccurrences(trx, tenantId, seriesId).set({ ...values, ...bumpRevision() }).execute()
}

/** The series' title onto its live occurrences without a title of their own. */
export async function setTitleUnlessOverridden (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  title: string
): Promise<void> {
  await liveOccurrences(trx, tenantId, seriesId).where('title_override', 'is', null)
    .set({ title, ...bumpRevision() }).execute()
}

/** The series' description onto its live occurrences without a description of their own. */
export async function setDescriptionUnlessOverridden (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  description: string | null
): Promise<void> {
  await liveOccurrences(trx, tenantId, seriesId).where('description_override', 'is', null)
    .set({ description, ...bumpRevision() }).execute()
}

/**
 * A metadata object holding the row's own storage-key entries (`cover_image`), to keep them through
 * a metadata cascade: a cover and its key belong to one event and are never copied to another.
 * Built from immutable functions only (`jsonb_set`, not `jsonb_build_object`): Citus runs the update
 * on the shards and refuses a CASE or COALESCE over a function that is not immutable.
 */
const ownStorageEntries = sql.join(
  STORAGE_METADATA_KEYS.map(
    k => sql`coalesce(jsonb_set('{}'::jsonb, array[${sql.lit(k)}]::text[], metadata -> ${sql.lit(k)}), '{}'::jsonb)`
  ),
  sql` || `
)

/**
 * The series' metadata (`shared`, JSON without storage keys) onto its live occurrences, two statements:
 * as it is where an occurrence has no overrides, under the occurrence's own keys where it has; each
 * keeps its own storage-key entries.
 */
export async function setSharedMetadata (trx: Tx, tenantId: string, seriesId: number, shared: string): Promise<void> {
  await liveOccurrences(trx, tenantId, seriesId)
    .where('metadata_override', 'is', null)
    .set({ metadata: sql`${shared}::jsonb || ${ownStorageEntries}`, ...bumpRevision() })
    .execute()
  await liveOccurrences(trx, tenantId, seriesId)
    .where('metadata_override', 'is not', null)
    .set({ metadata: sql`${shared}::jsonb || metadata_override || ${ownStorageEntries}`, ...bumpRevision() })
    .execute()
}

/** Publishes the live occurrences of a series that are not archived (version + 1 each). */
export async function publishOccurrences (trx: Tx, tenantId: string, seriesId: number, at: Date): Promise<void> {
  await liveOccurrences(trx, tenantId, seriesId)
    .where('status', '<>', 'archived')
    .set({ status: 'published', published_at: at, version: sql`version + 1`, ...bumpRevision() })
    .execute()
}

/** Soft-deletes the undeleted occurrences of a series (draft clones too) from position `fromIndex` on. */
export async function deleteOccurrencesFrom (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  fromIndex: number
): Promise<void> {
  await trx.updateTable('events')
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('is_deleted', '=', false)
    .where('series_index', '>=', fromIndex)
    .set({ is_deleted: true, ...bumpRevision() })
    .execute()
}

/** Soft-deletes every undeleted occurrence of a series (draft clones too). */
export async function deleteAllOccurrences (trx: Tx, tenantId: string, seriesId: number): Promise<void> {
  await trx.updateTable('events')
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('is_deleted', '=', false)
    .set({ is_deleted: true, ...bumpRevision() })
    .execute()
}

/** Removes the draft clone of a published occurrence, if it has one. */
export async function deleteDraftClone (trx: Tx, tenantId: string, publishedId: number): Promise<void> {
  await trx.deleteFrom('events').where('tenant_id', '=', tenantId).where('published_id', '=', publishedId).execute()
}

/** Moves the occurrences of a series from position `fromIndex` on to another series, renumbered from 0. */
export async function moveOccurrencesToSeries (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  toSeriesId: number,
  fromIndex: number
): Promise<void> {
  await trx.updateTable('events')
    .set({ series_id: toSeriesId, series_index: sql`series_index - ${fromIndex}`, ...bumpRevision() })
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId).where('series_index', '>=', fromIndex)
    .execute()
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
  return await listPage(trx, base, qb => qb.selectAll('events'), OCCURRENCE_KEYS, window)
}

/** The live occurrences of a series as they are now (bounded by the series' window), in id order. */
export async function liveOccurrenceRows (trx: Tx, tenantId: string, seriesId: number): Promise<EventRow[]> {
  return await trx.selectFrom('events').select(EVENT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('series_id', '=', seriesId)
    .where('is_deleted', '=', false).where('published_id', 'is', null)
    .orderBy('id')
    .execute()
}

/** The title of the first occurrence of a series (by position) that `auth` may see (`eventVisibleTo`). */
export async function firstVisibleTitle (trx: Tx, auth: AuthContext, seriesId: number): Promise<string | undefined> {
  const row = await trx.selectFrom('events').select('events.title')
    .where('events.series_id', '=', seriesId)
    .where(eb => eventVisibleTo(eb, auth))
    .orderBy('events.series_index').orderBy('events.id')
    .limit(1)
    .executeTakeFirst()
  return row?.title
}

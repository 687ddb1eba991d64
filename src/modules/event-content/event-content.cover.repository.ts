/**
 * SQL of event covers (event-content.cover.routes.ts): which rows refer to a stored object, and setting an event's
 * cover.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { bumpRevision } from '../../platform/db/revision.ts'
import type { EventRow } from '../events/index.ts'

/** Whether event `eventId` of the tenant is an occurrence of series `seriesId` (occurrences share covers). */
export async function isOccurrenceOf (trx: Tx, tenantId: string, eventId: number, seriesId: number): Promise<boolean> {
  const sibling = await trx.selectFrom('events').select('id')
    .where('tenant_id', '=', tenantId).where('id', '=', eventId).where('series_id', '=', seriesId)
    .executeTakeFirst()
  return sibling !== undefined
}

/**
 * Of `keys`, those that a row of the tenant refers to: an event (published, draft clone, occurrence, deleted) or a
 * series.
 */
export async function referencedKeys (trx: Tx, tenantId: string, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set()
  const rows = await trx.selectFrom('events').select('cover_image_key as key')
    .where('tenant_id', '=', tenantId).where('cover_image_key', '=', sql<string>`any(${[...keys]}::text[])`)
    .union(trx.selectFrom('event_series').select('cover_image_key as key')
      .where('tenant_id', '=', tenantId).where('cover_image_key', '=', sql<string>`any(${[...keys]}::text[])`))
    .execute()
  return new Set(rows.map(r => r.key).filter((k): k is string => k !== null))
}

/** Sets an event's cover: its storage key, and `metadata.cover_image` (what clients read), as a new revision. */
export async function setEventCover (
  trx: Tx,
  tenantId: string,
  id: number,
  key: string,
  cover: Record<string, unknown>
): Promise<EventRow> {
  return await trx
    .updateTable('events')
    .set({
      cover_image_key: key,
      metadata: sql`metadata || jsonb_build_object('cover_image', ${JSON.stringify(cover)}::jsonb)`,
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

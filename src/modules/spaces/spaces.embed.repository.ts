/**
 * SQL of the embedding of public event pages (docs/guests.md, "Embedding the page"): a space's allow list of origins,
 * and the public spaces of an event with their lists, which the event's public page reads (its links to the spaces,
 * its `frame-ancestors`).
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { PUBLIC } from './spaces.schemas.ts'

/** The most public spaces an event's page lists (and reads the allow lists of). */
export const EVENT_SPACES_MAX = 50

export async function embedOriginsOf (trx: Tx, tenantId: string, spaceId: number): Promise<string[]> {
  const row = await trx.selectFrom('spaces').select('embed_origins')
    .where('tenant_id', '=', tenantId).where('id', '=', spaceId)
    .executeTakeFirst()
  return row?.embed_origins ?? []
}

/**
 * Sets the allow list of a space (locked by the caller). Neither a revision nor an update of the space: what the
 * space shows (`GET /spaces/{id}`, its ETag) is unchanged.
 */
export async function setEmbedOrigins (trx: Tx, tenantId: string, spaceId: number, origins: string[]): Promise<void> {
  await trx.updateTable('spaces').set({ embed_origins: origins })
    .where('tenant_id', '=', tenantId).where('id', '=', spaceId)
    .execute()
}

/**
 * The published public spaces an event is linked to (lowest id first, at most EVENT_SPACES_MAX), with their allow
 * lists: what a public event page may show of its spaces.
 */
export async function publicSpacesOfEvent (trx: Tx, tenantId: string, eventId: number) {
  return await trx.selectFrom('event_spaces as es')
    .innerJoin('spaces as s', j => j.onRef('s.tenant_id', '=', 'es.tenant_id').onRef('s.id', '=', 'es.space_id'))
    .select(['s.id', 's.title', 's.embed_origins'])
    .where('es.tenant_id', '=', tenantId).where('es.event_id', '=', eventId)
    .where('s.status', '=', 'published').where('s.visibility', '=', PUBLIC).where('s.is_deleted', '=', false)
    .orderBy('s.id')
    .limit(EVENT_SPACES_MAX)
    .execute()
}

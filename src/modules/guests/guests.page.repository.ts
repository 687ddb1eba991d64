/**
 * The SQL of an event's public page (docs/guests.md, "The public page"): the event itself, read in its tenant only
 * while it is published, public (visibility 40) and not deleted, as the registration finds it (guests.repository.ts,
 * `publicEventTenant`, finds the tenant by id). Its spaces, their allow lists and the organizer's public name are
 * the spaces module's to read (its index).
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { EVENT_COLUMNS, type EventRow } from '../events/index.ts'

/** visibility of a public event (docs/events.md) */
const PUBLIC = 40

export async function publicEventRow (trx: Tx, tenantId: string, id: number): Promise<EventRow | undefined> {
  return await trx.selectFrom('events').select(EVENT_COLUMNS)
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .where('status', '=', 'published').where('published_id', 'is', null)
    .where('is_deleted', '=', false).where('visibility', '=', PUBLIC)
    .executeTakeFirst()
}

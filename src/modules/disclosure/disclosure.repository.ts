/**
 * The SQL of the outbound rule (disclosure.ts): what a reader may learn of resources that no single-row resolver
 * answers for (a series seen through its occurrences, a deleted contact or space as it was).
 */
import { sql } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { visibleAsRow, visibleTo as contactVisibleTo } from '../contacts/index.ts'
import { eventVisibleTo } from '../events/index.ts'

/** Whether the reader sees one occurrence of the series (a series is read through an event of it). */
export async function seesSeries (trx: Tx, reader: AuthContext, seriesId: number): Promise<boolean> {
  const row = await trx.selectFrom('events').select('events.id')
    .where('events.tenant_id', '=', reader.tenantId).where('events.series_id', '=', seriesId)
    .where(eb => eventVisibleTo(eb, reader))
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Whether the reader sees the contact now, or, for a contact that no longer exists, saw it as it was when it went:
 * the contacts list's own rule (`visibleTo`) over the owner and organization its last logged change kept (the log
 * of changes, migration 0026; a merge absorbs a contact into one that still exists).
 */
export async function seesContact (trx: Tx, reader: AuthContext, contactId: string): Promise<boolean> {
  const now = await trx.selectFrom('contacts').select(['id'])
    .where('tenant_id', '=', reader.tenantId).where('id', '=', contactId)
    .executeTakeFirst()
  if (now !== undefined) {
    const visible = await trx.selectFrom('contacts').select(['id'])
      .where('id', '=', contactId).where(eb => contactVisibleTo(eb, reader))
      .executeTakeFirst()
    return visible !== undefined
  }
  const { rows } = await sql<{ owner_id: string | null, org_id: string | null }>`select owner_id, org_id
    from changes where tenant_id = ${reader.tenantId} and kind = 'contact' and key = ${contactId}
    order by seq desc limit 1`.execute(trx)
  const last = rows[0]
  return last !== undefined && visibleAsRow(last, reader)
}

/** The creator of a space, deleted or not (a deleted space is told of to its creator and tenant admins). */
export async function spaceCreator (trx: Tx, tenantId: string, spaceId: number): Promise<string | undefined> {
  const row = await trx.selectFrom('spaces').select('creator_id')
    .where('tenant_id', '=', tenantId).where('id', '=', spaceId)
    .executeTakeFirst()
  return row?.creator_id
}

/** The creator of a deleted event (a deleted event is told of to its creator and tenant admins). */
export async function deletedEventCreator (trx: Tx, tenantId: string, eventId: number): Promise<string | undefined> {
  const row = await trx.selectFrom('events').select('creator_id')
    .where('tenant_id', '=', tenantId).where('id', '=', eventId).where('is_deleted', '=', true)
    .executeTakeFirst()
  return row?.creator_id
}

/**
 * The SQL of the guests module: the tenant of a published public event, found by its id alone on the system login
 * (the public registration names no tenant; nothing else of the event is read there).
 */
import type { Tx } from '../../platform/db/tenant.ts'

/** visibility of a public event (docs/events.md) */
const PUBLIC = 40

export async function publicEventTenant (trx: Tx, id: number): Promise<string | undefined> {
  const row = await trx.selectFrom('events').select('tenant_id')
    .where('id', '=', id).where('status', '=', 'published').where('published_id', 'is', null)
    .where('is_deleted', '=', false).where('visibility', '=', PUBLIC)
    .executeTakeFirst()
  return row?.tenant_id
}

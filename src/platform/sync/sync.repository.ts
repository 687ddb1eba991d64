/**
 * The reading of the log of changes (migrations 0026, 0027 and 0032) that every synced list shares: which rows of a
 * kind changed since a token, each once at its latest change, a page of them in the order of those changes.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely'
import type { Tx } from '../db/tenant.ts'
import type { ChangesPage, ChangesWindow } from './sync.ts'

export interface ChangesRead<T, K> extends ChangesWindow {
  tenantId: string
  kind: 'contact' | 'event' | 'attendee'
  /** which logged changes the caller may learn of (the list's parent, who could see the row then) */
  where: RawBuilder<SqlBool>
  /** a logged key as the list's id */
  id: (key: string) => K
  /** the rows of these ids in the list now, read with the list's filters and the caller's visibility */
  rows: (ids: K[]) => Promise<Array<T & { id: K }>>
}

/**
 * A page of changes: the keys of `kind` whose latest change (in the window `since` < position <= `upto`) `where`
 * admits, each once, in the order of (position, key) after `after`; those `rows` finds as rows, the others as
 * tombstones. `upto` is the tenant's position when the delta began (syncedRead): a delta ends however many writes
 * come while it is read.
 */
export async function readChanges<T, K> (trx: Tx, o: ChangesRead<T, K>): Promise<ChangesPage<T & { id: K }, K>> {
  const changed = sql`select key, max(pos) as pos from changes
    where tenant_id = ${o.tenantId} and kind = ${o.kind} and pos > ${o.since}::bigint and pos <= ${o.upto}::bigint
      and ${o.where}
    group by key`
  const after = o.after === undefined ? sql`true` : sql`(c.pos, c.key) > (${o.after.pos}::bigint, ${o.after.key})`
  const { rows: keys } = await sql<{ key: string, pos: string, total: string }>`select key, pos::text as pos,
      count(*) over () as total
    from (${changed}) c where ${after}
    order by c.pos, c.key limit ${o.size + 1}`.execute(trx)
  const page = keys.slice(0, o.size)
  const ids = page.map(k => o.id(k.key))
  const byId = new Map((ids.length === 0 ? [] : await o.rows(ids)).map(r => [r.id, r]))
  const items: Array<T & { id: K }> = []
  const deleted: Array<{ id: K, deleted: true }> = []
  for (const id of ids) {
    const row = byId.get(id)
    if (row !== undefined) items.push(row)
    else deleted.push({ id, deleted: true })
  }
  const last = page[page.length - 1]
  // the total counts from this page on; the pages before it are added by the page number (syncedRead)
  return {
    items,
    deleted,
    remaining: Number(keys[0]?.total ?? 0),
    last: last === undefined ? undefined : { pos: last.pos, key: last.key },
    more: keys.length > o.size
  }
}

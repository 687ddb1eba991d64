/**
 * The reading of the log of changes (migrations 0026 and 0027) that every synced list shares: which rows of a
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
 * A page of changes: the keys of `kind` changed by transactions from `since` on that `where` admits, each once at
 * its latest change up to `upto`, by seq; those `rows` finds as rows, the others as tombstones. Without `upto` (a
 * delta's first page), the tenant's highest seq now: a delta then ends, however many writes come while it is read.
 */
export async function readChanges<T, K> (trx: Tx, o: ChangesRead<T, K>): Promise<ChangesPage<T & { id: K }, K>> {
  const upto = o.upto ?? (await sql<{ upto: string }>`select coalesce(max(seq), 0)::text as upto from changes
    where tenant_id = ${o.tenantId}`.execute(trx)).rows[0]?.upto ?? '0'
  const changed = sql`select key, max(seq) as seq from changes
    where tenant_id = ${o.tenantId} and kind = ${o.kind} and xid >= ${o.since}::xid8 and seq <= ${upto}::bigint
      and ${o.where}
    group by key`
  const { rows: keys } = await sql<{ key: string, seq: string, total: string }>`select key, seq::text as seq,
      count(*) over () as total
    from (${changed}) c where c.seq > ${o.after ?? '0'}::bigint
    order by c.seq limit ${o.size + 1}`.execute(trx)
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
  // the total counts from this page on; the pages before it are added by the page number (syncedRead)
  return {
    items,
    deleted,
    remaining: Number(keys[0]?.total ?? 0),
    last: page[page.length - 1]?.seq,
    upto,
    more: keys.length > o.size
  }
}

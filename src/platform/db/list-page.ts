/**
 * How a keyset-paged list reads its page (docs/pagination.md; the cursor itself: src/platform/http/cursor.ts). A
 * repository function states what differs, the rows (its table and filters), their columns and their key columns,
 * and `listPage` reads the page and the total the same way for every list: the rows after the cursor's key (or
 * from the page's offset) in the order of the key columns, one more than the page, and the count of every row.
 *
 * @example
 *   const window = pageWindow(q, listScope('space-managers', { spaceId }), MANAGER_KEYS)
 *   const base = trx.selectFrom('space_managers').where('tenant_id', '=', tenantId).where('space_id', '=', spaceId)
 *   return await listPage(trx, base, qb => qb.select(MANAGER_COLUMNS), MANAGER_KEYS, window)
 */
import { sql, type Compilable, type Expression, type RawBuilder, type SelectQueryBuilder } from 'kysely'
import type { Tx } from './tenant.ts'
import { together } from './together.ts'
import { afterKey, keyExpression, pageOf, type KeyColumn, type PageWindow } from '../http/cursor.ts'

/**
 * Ordered by the key columns, each in its direction; `nulls last` only where a column can be null (as afterKey
 * reads the order), so the other sorts follow the indexes.
 */
export function orderByKeys<DB, TB extends keyof DB, O> (
  qb: SelectQueryBuilder<DB, TB, O>,
  keys: KeyColumn[]
): SelectQueryBuilder<DB, TB, O> {
  let out = qb
  for (const k of keys) {
    out = out.orderBy(keyExpression(k), ob => {
      const dir = k.dir === 'asc' ? ob.asc() : ob.desc()
      return k.nullable === true ? dir.nullsLast() : dir
    })
  }
  return out
}

/** The rows after the cursor's key (every row without a cursor), in the order of `keys`. */
export function fromCursor<DB, TB extends keyof DB, O> (
  qb: SelectQueryBuilder<DB, TB, O>,
  keys: KeyColumn[],
  window: PageWindow
): SelectQueryBuilder<DB, TB, O> {
  return orderByKeys(window.after === undefined ? qb : qb.where(eb => afterKey(eb, keys, window.after ?? [])), keys)
}

/** A page of a list as the API answers it (PagedBody): its rows, its number, the next page's cursor, the total. */
export interface ListPage<T> {
  items: T[]
  page: number
  next_cursor: string | null
  total: number
}

/** The name a key column's value has in a row: its column, without the table (`es.created_at`: `created_at`). */
const columnOf = (k: KeyColumn): string => k.ref.slice(k.ref.lastIndexOf('.') + 1)

/** The number of rows of `base`, as a statement (`select count(*) as total`). */
export const countOf = <DB, TB extends keyof DB, B>(base: SelectQueryBuilder<DB, TB, B>) =>
  base.select(eb => eb.fn.countAll<number | string>().as('total'))

/** Counts added up in SQL, `(a) + (b) + …`: each a subquery of one row and one number. */
export function sumOf (counts: Array<Expression<unknown>>): RawBuilder<number> {
  return sql<number>`${sql.join(
    counts.map(c => sql`(${c})`),
    sql` + `
  )}`
}

/** A total read in parts (disjoint classes of rows, sources of a feed), as a statement of one row (`total`). */
export const totalQuery = (trx: Tx, counts: Array<Expression<unknown>>) =>
  trx.selectNoFrom(sumOf(counts).as('total'))

/** A statement whose one row holds a total. */
export type TotalStatement = Compilable<{ total: number | string | null }>

/** The total of a statement's one row (0 without one). */
export const totalIn = (rows: ReadonlyArray<{ total: number | string | null }>): number => Number(rows[0]?.total ?? 0)

/**
 * One page of the rows of `base` and their total, sent together (together.ts: one round trip): `columns` selects the
 * rows' columns, which hold every key column under its own name (the next page's cursor is made of the last row's;
 * no key is by `lower`). `total` counts them another way (kept counts) when given; by default every row of `base` is
 * counted.
 */
export async function listPage<DB, TB extends keyof DB, B, O> (
  trx: Tx,
  base: SelectQueryBuilder<DB, TB, B>,
  columns: (qb: SelectQueryBuilder<DB, TB, B>) => SelectQueryBuilder<DB, TB, O>,
  keys: KeyColumn[],
  window: PageWindow,
  total?: TotalStatement
): Promise<ListPage<O>> {
  const [rows, counted] = await together(trx, [
    fromCursor(columns(base), keys, window).limit(window.limit).offset(window.offset),
    total ?? countOf(base)
  ])
  const keyOf = (row: O): unknown[] => keys.map(k => (row as Record<string, unknown>)[columnOf(k)])
  return { ...pageOf(rows as O[], window, keyOf), total: totalIn(counted) }
}

/**
 * The first `limit` rows of `base` in the order of `keys` and the count of all of them, sent together (a preview).
 */
export async function firstRows<DB, TB extends keyof DB, B, O> (
  trx: Tx,
  base: SelectQueryBuilder<DB, TB, B>,
  columns: (qb: SelectQueryBuilder<DB, TB, B>) => SelectQueryBuilder<DB, TB, O>,
  keys: KeyColumn[],
  limit: number
): Promise<{ items: O[], total: number }> {
  const [items, counted] = await together(trx, [orderByKeys(columns(base), keys).limit(limit), countOf(base)])
  return { items: items as O[], total: totalIn(counted as unknown as Array<{ total: number | string }>) }
}

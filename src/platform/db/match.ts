/**
 * The statements that find or remove a tenant's rows by the values of some of their columns (`column = value`
 * each, the tenant always among them): whether such a row exists, and deleting such rows. A repository states
 * only its table and its values.
 *
 * @example
 *   const member = await rowExists(trx, 'space_members', { tenant_id: tenantId, space_id: spaceId, user_id: userId })
 *   const removed = await deleteRows(trx, 'event_links', { tenant_id: tenantId, event_id: eventId, target_id: id })
 */
import { sql, type Selectable, type Transaction } from 'kysely'
import type { Database } from './database.ts'
import type { Tx } from './tenant.ts'

/** The tables whose rows belong to a tenant (a `tenant_id` column). */
export type TenantTable = {
  [T in keyof Database]: Database[T] extends { tenant_id: string } ? T : never
}[keyof Database]

/** The values a row must have: its tenant, and any other columns. */
export type RowMatch<T extends TenantTable> = { tenant_id: string } & {
  [C in keyof Selectable<Database[T]>]?: Selectable<Database[T]>[C]
}

/** The tables without their column types: the statements here are built from a table's name and values. */
type Untyped = Transaction<Record<string, Record<string, unknown>>>

/** Whether the tenant has a row of `table` with the values of `match`; `lock` takes it `for update`. */
export async function rowExists<T extends TenantTable> (
  trx: Tx,
  table: T,
  match: RowMatch<T>,
  options: { lock?: boolean } = {}
): Promise<boolean> {
  let query = (trx as unknown as Untyped).selectFrom(table as string).select(sql<number>`1`.as('found'))
  // `column = value` each, in the order of `match`
  for (const [column, value] of Object.entries(match)) query = query.where(column, '=', value)
  const row = await query.$if(options.lock === true, qb => qb.forUpdate()).executeTakeFirst()
  return row !== undefined
}

/** Deletes the tenant's rows of `table` with the values of `match`; how many it deleted. */
export async function deleteRows<T extends TenantTable> (trx: Tx, table: T, match: RowMatch<T>): Promise<number> {
  let query = (trx as unknown as Untyped).deleteFrom(table as string)
  for (const [column, value] of Object.entries(match)) query = query.where(column, '=', value)
  const res = await query.executeTakeFirst()
  return Number(res.numDeletedRows)
}

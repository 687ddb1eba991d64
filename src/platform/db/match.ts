/**
 * The statements that find or remove a tenant's rows by the values of some of their columns (`column = value`
 * each, the tenant always among them): selecting or updating such rows, whether one exists, and deleting them. A
 * repository states only its table and its values.
 *
 * @example
 *   const link = await selectRows(trx, 'space_contacts', { tenant_id: tenantId, space_id: spaceId, contact_id: id })
 *     .select(CONTACT_LINK_COLUMNS).executeTakeFirst()
 *   const member = await rowExists(trx, 'space_members', { tenant_id: tenantId, space_id: spaceId, user_id: userId })
 *   const removed = await deleteRows(trx, 'event_links', { tenant_id: tenantId, event_id: eventId, target_id: id })
 */
import {
  sql, type Selectable, type SelectQueryBuilder, type Transaction, type UpdateQueryBuilder, type UpdateResult
} from 'kysely'
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

/**
 * The tenant's rows of `table` with the values of `match` (`column = value` each, in the order of `match`), for
 * the caller to go on with: the columns it selects, its further conditions (after these), its order, its lock.
 */
export function selectRows<T extends TenantTable> (
  trx: Tx,
  table: T,
  match: RowMatch<T>
): SelectQueryBuilder<Database, T, object> {
  let query = (trx as unknown as Untyped).selectFrom(table as string)
  for (const [column, value] of Object.entries(match)) query = query.where(column, '=', value)
  return query as unknown as SelectQueryBuilder<Database, T, object>
}

/**
 * The tenant's rows of `table` with the values of `match` (`column = value` each, in the order of `match`), to
 * update: the caller sets their new values, and may add conditions and a `returning`.
 */
export function updateRows<T extends TenantTable> (
  trx: Tx,
  table: T,
  match: RowMatch<T>
): UpdateQueryBuilder<Database, T, T, UpdateResult> {
  let query = (trx as unknown as Untyped).updateTable(table as string)
  for (const [column, value] of Object.entries(match)) query = query.where(column, '=', value)
  return query as unknown as UpdateQueryBuilder<Database, T, T, UpdateResult>
}

/** Whether the tenant has a row of `table` with the values of `match`; `lock` takes it `for update`. */
export async function rowExists<T extends TenantTable> (
  trx: Tx,
  table: T,
  match: RowMatch<T>,
  options: { lock?: boolean } = {}
): Promise<boolean> {
  const row = await selectRows(trx, table, match)
    .select(sql<number>`1`.as('found'))
    // eslint-disable-next-line citus/statement-shapes -- selectRows filters by the match's tenant_id (RowMatch)
    .$if(options.lock === true, qb => qb.forUpdate())
    .executeTakeFirst()
  return row !== undefined
}

/** Deletes the tenant's rows of `table` with the values of `match`; how many it deleted. */
export async function deleteRows<T extends TenantTable> (trx: Tx, table: T, match: RowMatch<T>): Promise<number> {
  let query = (trx as unknown as Untyped).deleteFrom(table as string)
  for (const [column, value] of Object.entries(match)) query = query.where(column, '=', value)
  const res = await query.executeTakeFirst()
  return Number(res.numDeletedRows)
}

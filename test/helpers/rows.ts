/**
 * A tenant's rows written through SQL: the states the API cannot build by itself, and changes made by
 * another path than the API (automation, an operator's SQL). Each call is one transaction of the tenant.
 *
 * @example
 *   await insertRow(t, tenant.id, 'space_members', { space_id: space, user_id: 'carol' })
 *   await updateRows(t, tenant.id, 'attendees', { status: 'tentative' }, { contact_id: contact })
 */
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely'
import type { TestApp } from './build-app.ts'
import type { Database } from '../../src/platform/db/database.ts'
import { withTenant } from '../../src/platform/db/tenant.ts'

/** The tables whose rows belong to a tenant (they have a `tenant_id` column). */
export type TenantTable = { [K in keyof Database]: 'tenant_id' extends keyof Database[K] ? K : never }[keyof Database]

/** The tables whose rows have an `id`. */
export type IdTable = { [K in keyof Database]: 'id' extends keyof Database[K] ? K : never }[keyof Database]

/** The tenant's transaction, untyped by table: the functions below check their arguments against `Database`. */
const untyped = (trx: unknown): Kysely<any> => trx as Kysely<any>

/** Inserts one row of the tenant into `table` (its `tenant_id` is the tenant's). */
export async function insertRow<T extends TenantTable> (
  t: TestApp,
  tenantId: string,
  table: T,
  values: Omit<Insertable<Database[T]>, 'tenant_id'>
): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await untyped(trx).insertInto(table as string).values({ tenant_id: tenantId, ...values }).execute()
  })
}

/** Inserts one row of the tenant into `table`, as `insertRow` does; its id. */
export async function insertRowId<T extends TenantTable & IdTable> (
  t: TestApp,
  tenantId: string,
  table: T,
  values: Omit<Insertable<Database[T]>, 'tenant_id'>
): Promise<Selectable<Database[T]> extends { id: infer Id } ? Id : never> {
  return await withTenant(t.ctx.db, { tenantId }, async trx => {
    const row = await untyped(trx)
      .insertInto(table as string)
      .values({ tenant_id: tenantId, ...values })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  })
}

/** Sets `values` on the tenant's rows of `table` whose columns equal those of `where` (on all of them without). */
export async function updateRows<T extends TenantTable> (
  t: TestApp,
  tenantId: string,
  table: T,
  values: Updateable<Database[T]>,
  where: Partial<Selectable<Database[T]>> = {}
): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    let query = untyped(trx).updateTable(table as string).set(values as object).where('tenant_id', '=', tenantId)
    for (const [column, value] of Object.entries(where)) query = query.where(column, '=', value)
    await query.execute()
  })
}

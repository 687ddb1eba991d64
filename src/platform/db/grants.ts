/**
 * The managers' grants of the modules that have managers (`event_managers`: events and series; `space_managers`:
 * spaces), tables of the same grant columns (ManagerGrantColumns, columns.ts) and the same statuses: pending
 * (an invite), active, revoked. A revoked row is history: what a list or a lookup of managers reads is the live
 * rows.
 *
 * @example
 *   const base = liveGrants(trx, 'space_managers', { tenant_id: tenantId, space_id: spaceId })
 */
import type { SelectQueryBuilder } from 'kysely'
import type { Database } from './database.ts'
import { selectRows, type RowMatch } from './match.ts'
import type { Tx } from './tenant.ts'

/** The tables of managers' grants. */
export type GrantTable = 'event_managers' | 'space_managers'

/** The tenant's active and pending grants of `table` with the values of `match` (selectRows), not the revoked. */
export function liveGrants<T extends GrantTable> (
  trx: Tx,
  table: T,
  match: RowMatch<T>
): SelectQueryBuilder<Database, T, object> {
  const rows = selectRows(trx, table, match) as SelectQueryBuilder<Database, GrantTable, object>
  return rows.where('status', '<>', 'revoked') as SelectQueryBuilder<Database, T, object>
}

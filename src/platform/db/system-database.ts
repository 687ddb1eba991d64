/**
 * The system login's database of each request database: `createDatabase` (database.ts) records it, `systemDatabase`
 * and `withSystem` (tenant.ts) read it. Apart from tenant.ts, which names the `Database` type database.ts assembles,
 * so that database.ts imports no file that imports it.
 */
import type { Kysely } from 'kysely'

const systemDatabases = new WeakMap<object, object>()

/** Records the system login's database of a request database (createDatabase does). */
export function registerSystemDatabase<D> (db: Kysely<D>, systemDb: Kysely<D>): void {
  systemDatabases.set(db, systemDb)
}

/** The system login's database recorded for a request database, if any. */
export function registeredSystemDatabase<D> (db: Kysely<D>): Kysely<D> | undefined {
  return systemDatabases.get(db) as Kysely<D> | undefined
}

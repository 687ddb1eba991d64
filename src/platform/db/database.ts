/**
 * The database: Kysely over a `pg` pool when DATABASE_URL is set, over embedded PGlite
 * (persisted in DATA_DIR/pgdata) otherwise. Both speak the same PostgreSQL dialect, and the same
 * migrations and queries run on both.
 *
 * `Database` is composed from each module's table file, as in the Kysely example app.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Kysely, PostgresDialect, PGliteDialect } from 'kysely'
import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import type { PlatformTables } from './platform.table.ts'
import { pipelinedPool } from './pipeline.ts'
import type { ContactsTables } from '../../modules/contacts/contacts.table.ts'
import type { IdentityTables } from '../../modules/identity/identity.table.ts'
import type { SpacesTables } from '../../modules/spaces/spaces.table.ts'
import type { EventsTables } from '../../modules/events/events.table.ts'
import type { SeriesTables } from '../../modules/series/series.table.ts'
import type { EventCollabTables } from '../../modules/event-collab/event-collab.table.ts'
import type { AutomationTables } from '../../modules/automation/automation.table.ts'

/** Every table, composed from the modules' table files (one line per module). */
export interface Database extends
  PlatformTables,
  ContactsTables,
  IdentityTables,
  SpacesTables,
  EventsTables,
  SeriesTables,
  EventCollabTables,
  AutomationTables {}

export type DatabaseKind = 'pg' | 'pglite'

export interface DatabaseHandle {
  readonly db: Kysely<Database>
  readonly kind: DatabaseKind
  /** Connection used for migrations: the owner of the tables. */
  readonly migrationUrl: string | undefined
  readonly pglite: PGlite | undefined
  close (): Promise<void>
}

// int8 (ids, counts) as numbers: every id and count of this API fits in 2^53.
const INT8 = 20
const NUMERIC = 1700
pg.types.setTypeParser(INT8, (v: string) => Number(v))
pg.types.setTypeParser(NUMERIC, (v: string) => Number(v))

export interface DatabaseOptions {
  databaseUrl?: string | undefined
  databaseAppUrl?: string | undefined
  /** PGlite data directory; undefined = in memory. */
  pgliteDir?: string | undefined
  poolSize?: number
}

export async function createDatabase (options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== undefined) {
    const pool = new pg.Pool({
      connectionString: options.databaseAppUrl ?? options.databaseUrl,
      max: options.poolSize ?? 20,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      statement_timeout: 30_000,
      // BEGIN and the tenant scope travel with the first query (pipeline.ts)
      pipeline: true
    })
    // An idle client that loses its server must not crash the process; the next query reconnects.
    pool.on('error', () => {})
    // A client that loses its server while checked out (a transaction between statements) emits
    // 'error' too, where the pool listens no more: without this listener that is an uncaught
    // exception that ends the process. Its next query fails instead (503) and the pool drops it.
    pool.on('connect', (client) => { client.on('error', () => {}) })
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: pipelinedPool(pool) }) })
    return { db, kind: 'pg', migrationUrl: options.databaseUrl, pglite: undefined, close: () => db.destroy() }
  }
  if (options.pgliteDir !== undefined) fs.mkdirSync(path.dirname(options.pgliteDir), { recursive: true })
  // Loaded only when used: a PostgreSQL deployment does not carry the WASM build (about 40 MB of RSS).
  const [{ PGlite }, { pg_trgm }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm')])
  const pglite = await PGlite.create({
    ...(options.pgliteDir !== undefined ? { dataDir: options.pgliteDir } : {}),
    extensions: { pg_trgm },
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) }
  })
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) })
  return {
    db,
    kind: 'pglite',
    migrationUrl: undefined,
    pglite,
    close: async () => {
      await db.destroy()
      if (!pglite.closed) await pglite.close()
    }
  }
}

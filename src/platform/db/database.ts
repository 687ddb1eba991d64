/**
 * The database: Kysely over a `pg` pool when DATABASE_URL is set, over embedded PGlite
 * (persisted in DATA_DIR/pgdata) otherwise. Both speak the same PostgreSQL dialect, and the same
 * migrations and queries run on both.
 *
 * `Database` is composed from each module's table file, as in the Kysely example app.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Kysely, PostgresDialect, PGliteDialect, sql } from 'kysely'
import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import type { PlatformTables } from './platform.table.ts'
import { pipelinedPool } from './pipeline.ts'
import { registerSystemDatabase } from './system-database.ts'
import type { ContactsTables } from '../../modules/contacts/contacts.table.ts'
import type { IdentityTables } from '../../modules/identity/identity.table.ts'
import type { SpacesTables } from '../../modules/spaces/spaces.table.ts'
import type { EventsTables } from '../../modules/events/events.table.ts'
import type { SeriesTables } from '../../modules/series/series.table.ts'
import type { AttendeesTables } from '../../modules/attendees/attendees.table.ts'
import type { EventManagersTables } from '../../modules/event-managers/event-managers.table.ts'
import type { EventContentTables } from '../../modules/event-content/event-content.table.ts'
import type { AutomationTables } from '../../modules/automation/automation.table.ts'
import type { ApiKeysTables } from '../../modules/api-keys/api-keys.table.ts'
import type { ScimTables } from '../../modules/scim/scim.table.ts'

/** Every table, composed from the modules' table files (one line per module). */
export interface Database extends
  PlatformTables,
  ContactsTables,
  IdentityTables,
  SpacesTables,
  EventsTables,
  SeriesTables,
  AttendeesTables,
  EventManagersTables,
  EventContentTables,
  AutomationTables,
  ApiKeysTables,
  ScimTables {}

export type DatabaseKind = 'pg' | 'pglite'

export interface DatabaseHandle {
  /** Request traffic: DATABASE_APP_URL's login, else DATABASE_URL's; tenant transactions switch to collab_app. */
  readonly db: Kysely<Database>
  /**
   * Work that spans tenants (`withSystem`: background workers, resolving a public page's handle):
   * DATABASE_WORKER_URL's login, else DATABASE_URL's. It must pass row-level security (BYPASSRLS
   * or superuser): `checkSystemLogin` refuses to start otherwise. The same instance as `db` when
   * both are one login (PGlite, or DATABASE_URL alone).
   */
  readonly systemDb: Kysely<Database>
  /** The variable that names the system login (for the start-up check's message). */
  readonly systemLoginVariable: 'DATABASE_WORKER_URL' | 'DATABASE_URL' | undefined
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

// Dates and times: PGlite gets the `pg` driver's own parsers, so both databases read every value
// alike. PGlite's default handed PostgreSQL's text (`0042-05-01 10:00:00+00`) to `new Date()`,
// which reads the years 0 – 99 as 1900 – 1999 or 2000 – 2049: a read-then-write saved another date.
const DATE = 1082
const TIMESTAMP = 1114
const TIMESTAMPTZ = 1184
const DATE_ARRAY = 1182
const TIMESTAMP_ARRAY = 1115
const TIMESTAMPTZ_ARRAY = 1185
const textParser = (oid: number): ((v: string) => unknown) =>
  pg.types.getTypeParser(oid, 'text') as (v: string) => unknown

/**
 * PostgreSQL keeps microseconds, a Date milliseconds: the text each timestamptz was read from, kept
 * beside its Date, is what a list's cursor names (http/cursor.ts), so the next page starts exactly
 * after the row, not at another row of the same millisecond.
 */
const timestampText = new WeakMap<Date, string>()
const parseTimestamptz = textParser(TIMESTAMPTZ)

/** Two digits at `i`. */
const digits2 = (v: string, i: number): number => (v.charCodeAt(i) - 48) * 10 + v.charCodeAt(i + 1) - 48

/**
 * The milliseconds of PostgreSQL's usual timestamptz text (`2026-11-29 17:44:40.123456+00`, an offset of hours or
 * hours and minutes), or undefined for any other form (another year's width, BC, infinity, an offset with seconds),
 * which the `pg` driver's parser reads. Read by position: a regular expression per value cost a fifth of a list's
 * server time.
 */
function fastTimestamptz (v: string): number | undefined {
  if (v.length < 22 || v.charCodeAt(4) !== 45 || v.charCodeAt(10) !== 32 || v.charCodeAt(13) !== 58) return undefined
  let i = 19
  let ms = 0
  if (v.charCodeAt(i) === 46) {
    let n = 0
    for (i++; i < v.length; i++, n++) {
      const c = v.charCodeAt(i)
      if (c < 48 || c > 57) break
      if (n < 3) ms = ms * 10 + c - 48
    }
    for (; n < 3; n++) ms *= 10
  }
  const sign = v.charCodeAt(i)
  if (sign !== 43 && sign !== 45) return undefined
  let offset = digits2(v, i + 1) * 60
  if (i + 3 === v.length) {
    // hours only
  } else if (i + 6 === v.length && v.charCodeAt(i + 3) === 58) {
    offset += digits2(v, i + 4)
  } else {
    return undefined
  }
  const year = digits2(v, 0) * 100 + digits2(v, 2)
  // Date.UTC reads the years 0 – 99 as 1900 – 1999
  if (year < 100) return undefined
  const utc = Date.UTC(year, digits2(v, 5) - 1, digits2(v, 8), digits2(v, 11),
    digits2(v, 14), digits2(v, 17), ms)
  const t = utc - (sign === 43 ? offset : -offset) * 60_000
  return Number.isNaN(t) ? undefined : t
}

export function exactTimestamptz (v: string): unknown {
  const t = fastTimestamptz(v)
  const d = t !== undefined ? new Date(t) : parseTimestamptz(v)
  if (d instanceof Date) timestampText.set(d, v)
  return d
}
pg.types.setTypeParser(TIMESTAMPTZ, exactTimestamptz)

/** The timestamp as PostgreSQL wrote it (microseconds), when `d` was read from the database; else its ISO form. */
export const exactTimestamp = (d: Date): string => timestampText.get(d) ?? d.toISOString()

/**
 * The PostgreSQL settings of the embedded PGlite (docs/performance.md, "PGlite as a newcomer meets it"): 16 MB of
 * shared buffers instead of PostgreSQL's 128 MB, which the WASM heap held whether used or not (the service idled at
 * about 470 MB resident). PGlite reads its files through the operating system, whose cache keeps what they miss.
 */
const PGLITE_SETTINGS = ['shared_buffers = 16MB']

/** PGlite's parsers: numbers as on `pg` (above), dates and times by the `pg` driver's functions. */
export const PGLITE_PARSERS: Record<number, (v: string) => unknown> = {
  [INT8]: (v: string) => Number(v),
  [NUMERIC]: (v: string) => Number(v),
  ...Object.fromEntries(
    [DATE, TIMESTAMP, DATE_ARRAY, TIMESTAMP_ARRAY, TIMESTAMPTZ_ARRAY].map(oid => [oid, textParser(oid)])
  ),
  [TIMESTAMPTZ]: exactTimestamptz
}

export interface DatabaseOptions {
  databaseUrl?: string | undefined
  databaseAppUrl?: string | undefined
  /** login for work across tenants (BYPASSRLS); undefined = databaseUrl */
  databaseWorkerUrl?: string | undefined
  /** PGlite data directory; undefined = in memory. */
  pgliteDir?: string | undefined
  /**
   * A PGlite data directory dumped by `pglite.dumpDataDir()` to start from instead of an empty cluster (the tests
   * start each suite from one migrated copy: test/helpers/pglite-template.ts).
   */
  pgliteLoadDataDir?: Blob | undefined
  poolSize?: number
}

function pgDatabase (connectionString: string, max: number): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: 30_000,
    // No JIT compilation: the planner's costs of the lists' reads by key (a visibility check per linked event, under
    // row-level security) pass jit_above_cost, and compiling took 500 ms of a 530 ms statement (docs/performance.md,
    // "Lists at scale, third pass"). An `options` parameter of the URL takes precedence.
    options: '-c jit=off',
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
  pools.set(db, pool)
  return db
}

const pools = new WeakMap<Kysely<Database>, pg.Pool>()

/** Connections of a database's pool (metrics): PGlite is one session, never waited for by the pool. */
/** One round trip to the database (`select 1`): readiness probes. */
export async function ping (db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db)
}

export function poolStatsOf (db: Kysely<Database>): { total: number, idle: number, waiting: number } {
  const pool = pools.get(db)
  if (pool === undefined) return { total: 1, idle: 0, waiting: 0 }
  return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
}

export async function createDatabase (options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== undefined) {
    const appUrl = options.databaseAppUrl ?? options.databaseUrl
    const systemUrl = options.databaseWorkerUrl ?? options.databaseUrl
    const db = pgDatabase(appUrl, options.poolSize ?? 20)
    // a pool of its own only when the system login differs from the requests' login
    const systemDb = systemUrl === appUrl ? db : pgDatabase(systemUrl, Math.max(2, Math.min(5, options.poolSize ?? 20)))
    registerSystemDatabase(db, systemDb)
    return {
      db,
      systemDb,
      systemLoginVariable: options.databaseWorkerUrl !== undefined ? 'DATABASE_WORKER_URL' : 'DATABASE_URL',
      kind: 'pg',
      migrationUrl: options.databaseUrl,
      pglite: undefined,
      close: async () => {
        await db.destroy()
        if (systemDb !== db) await systemDb.destroy()
      }
    }
  }
  if (options.pgliteDir !== undefined) fs.mkdirSync(path.dirname(options.pgliteDir), { recursive: true })
  // Loaded only when used: a PostgreSQL deployment does not carry the WASM build (about 40 MB of RSS).
  const [{ PGlite }, { pg_trgm }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm')
  ])
  const pglite = await PGlite.create({
    ...(options.pgliteDir !== undefined ? { dataDir: options.pgliteDir } : {}),
    ...(options.pgliteLoadDataDir !== undefined ? { loadDataDir: options.pgliteLoadDataDir } : {}),
    extensions: { pg_trgm },
    parsers: PGLITE_PARSERS,
    postgresqlconf: PGLITE_SETTINGS
  })
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) })
  return {
    db,
    // PGlite's one session is a superuser's: it passes row-level security outside collab_app
    systemDb: db,
    systemLoginVariable: undefined,
    kind: 'pglite',
    migrationUrl: undefined,
    pglite,
    close: async () => {
      await db.destroy()
      if (!pglite.closed) await pglite.close()
    }
  }
}

/**
 * A minimal SQL runner over PostgreSQL (`pg`) or PGlite, used by the seed, the manifest and the
 * baseline server. It connects as the owner of the tables: no role switch, no tenant setting, so
 * row-level security does not apply (superuser / table owner).
 */
import fs from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'

/**
 * a statement on one connection; with a `name`, prepared once per connection under that name (pg; PGlite ignores it)
 */
export type ClientQuery = <R = Record<string, unknown>>(text: string, params?: unknown[], name?: string) => Promise<R[]>

export interface SqlRunner {
  readonly kind: 'pg' | 'pglite'
  query<R = Record<string, unknown>> (text: string, params?: unknown[]): Promise<R[]>
  /** several statements, no parameters */
  exec (text: string): Promise<void>
  /** runs `fn` on one connection (pg) or the single PGlite session */
  withClient<T> (fn: (q: ClientQuery) => Promise<T>): Promise<T>
  close (): Promise<void>
}

const INT8 = 20
const NUMERIC = 1700

export function pgRunner (url: string, max = 20): SqlRunner {
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === INT8 || oid === NUMERIC ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)
  }
  // without JIT compilation, as the service's sessions (src/platform/db/database.ts): the baseline and the reference
  // run on the same terms
  const pool = new pg.Pool({ connectionString: url, max, types: types as pg.CustomTypesConfig, options: '-c jit=off' })
  pool.on('error', () => {})
  return {
    kind: 'pg',
    async query<R> (text: string, params: unknown[] = []) {
      return (await pool.query(text, params)).rows as R[]
    },
    async exec (text: string) { await pool.query(text) },
    async withClient<T> (fn: (q: ClientQuery) => Promise<T>) {
      const client = await pool.connect()
      try {
        return await fn(
          async <R>(text: string, params: unknown[] = [], name?: string) =>
            (await client.query(name !== undefined ? { name, text, values: params } : { text, values: params }))
              .rows as R[]
        )
      } finally {
        client.release()
      }
    },
    close: () => pool.end()
  }
}

export async function pgliteRunner (dataDir: string): Promise<SqlRunner> {
  fs.mkdirSync(path.dirname(dataDir), { recursive: true })
  const lite = await PGlite.create({
    dataDir,
    extensions: { pg_trgm },
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) }
  })
  const query = async <R>(text: string, params: unknown[] = []) => (await lite.query<R>(text, params)).rows
  let tail: Promise<void> = Promise.resolve()
  return {
    kind: 'pglite',
    query,
    async exec (text: string) { await lite.exec(text) },
    // one session: a unit of several statements (begin … commit) holds it alone, as PGlite's own transactions do
    async withClient<T> (fn: (q: ClientQuery) => Promise<T>) {
      const previous = tail
      let release = () => {}
      tail = new Promise<void>(resolve => { release = resolve })
      await previous
      try {
        return await fn(query)
      } finally {
        release()
      }
    },
    close: () => lite.close()
  }
}

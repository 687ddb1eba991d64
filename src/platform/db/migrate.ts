/**
 * Applies `migrations/*.sql` in name order, each in its own transaction, recorded in
 * `schema_migrations` with a checksum. Forward-only: a mistake is fixed by a new migration, and an
 * applied file that changed stops the start. An advisory lock keeps two starting instances from
 * migrating at once. Migrations run as the tables' owner; at the end the application role gets
 * its privileges on whatever exists.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { DatabaseHandle } from './database.ts'
import { APP_ROLE } from './tenant.ts'

/** `migrations/` beside package.json, found from this module whether it runs from src/ or from the built dist/server.js */
export const MIGRATIONS_DIR = findMigrationsDir(path.dirname(fileURLToPath(import.meta.url)))

function findMigrationsDir (from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'migrations'))) return path.join(dir, 'migrations')
    if (path.dirname(dir) === dir) throw new Error(`no migrations directory above ${from}`)
  }
}
const LOCK_KEY = 7_446_221_004

interface Runner {
  query (text: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>
  exec (text: string): Promise<void>
  close (): Promise<void>
}

async function runnerFor (handle: DatabaseHandle): Promise<Runner> {
  if (handle.pglite !== undefined) {
    const lite = handle.pglite
    return {
      query: async (text, params) => ({ rows: (await lite.query<Record<string, unknown>>(text, params)).rows }),
      exec: async (text) => { await lite.exec(text) },
      close: async () => {}
    }
  }
  const client = new pg.Client({ connectionString: handle.migrationUrl })
  await client.connect()
  return {
    query: async (text, params) => ({ rows: (await client.query(text, params)).rows as Array<Record<string, unknown>> }),
    exec: async (text) => { await client.query(text) },
    close: () => client.end()
  }
}

export interface MigrationResult { applied: string[], skipped: number }

export async function migrate (handle: DatabaseHandle, dir: string = MIGRATIONS_DIR): Promise<MigrationResult> {
  const files = fs.readdirSync(dir).filter(f => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort()
  const runner = await runnerFor(handle)
  const applied: string[] = []
  try {
    await runner.query('select pg_advisory_lock($1)', [LOCK_KEY])
    await runner.exec(`create table if not exists schema_migrations (
      name text primary key,
      checksum text not null,
      applied_at timestamptz not null default now())`)
    const done = new Map((await runner.query('select name, checksum from schema_migrations')).rows.map(r => [String(r.name), String(r.checksum)]))
    for (const file of files) {
      const text = fs.readFileSync(path.join(dir, file), 'utf8')
      const checksum = crypto.createHash('sha256').update(text).digest('hex')
      const previous = done.get(file)
      if (previous !== undefined) {
        if (previous !== checksum) throw new Error(`migration ${file} was changed after it was applied; add a new migration instead`)
        continue
      }
      await runner.exec('begin')
      try {
        await runner.exec(text)
        await runner.query('insert into schema_migrations (name, checksum) values ($1, $2)', [file, checksum])
        await runner.exec('commit')
      } catch (err) {
        await runner.exec('rollback')
        throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err })
      }
      applied.push(file)
    }
    await runner.exec(`
      grant usage on schema public to ${APP_ROLE};
      grant select, insert, update, delete on all tables in schema public to ${APP_ROLE};
      grant usage, select on all sequences in schema public to ${APP_ROLE};
      revoke all on schema_migrations from ${APP_ROLE};`)
    return { applied, skipped: files.length - applied.length }
  } finally {
    await runner.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {})
    await runner.close()
  }
}

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
import { splitSql } from './split-sql.ts'
import { APP_ROLE } from './tenant.ts'

/**
 * `migrations/` beside package.json, found from this module whether it runs from src/ or from the built dist/server.js
 */
export const MIGRATIONS_DIR = findMigrationsDir(path.dirname(fileURLToPath(import.meta.url)))

function findMigrationsDir (from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'migrations'))) {
      return path.join(dir, 'migrations')
    }
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
    query: async (text, params) => ({
      rows: (await client.query(text, params)).rows as Array<Record<string, unknown>>
    }),
    exec: async text => {
      await client.query(text)
    },
    close: () => client.end()
  }
}

export interface MigrationResult {
  applied: string[]
  skipped: number
  /** tables this run distributed (`tenant:` by tenant_id) or made reference tables (`reference:`) on a Citus cluster */
  distributed: string[]
}

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
    const done = new Map(
      (await runner.query('select name, checksum from schema_migrations')).rows.map(r => [
        String(r.name),
        String(r.checksum)
      ])
    )
    const citus = (await runner.query("select 1 from pg_extension where extname = 'citus'")).rows.length > 0
    for (const file of files) {
      const text = fs.readFileSync(path.join(dir, file), 'utf8')
      const checksum = crypto.createHash('sha256').update(text).digest('hex')
      const previous = done.get(file)
      if (previous !== undefined) {
        if (previous !== checksum) {
          throw new Error(`migration ${file} was changed after it was applied; add a new migration instead`)
        }
        continue
      }
      await runner.exec('begin')
      try {
        // on Citus, a migration that writes rows on every shard and then creates a function (which Citus propagates
        // over one connection per node) is refused after parallel multi-shard work: one connection per node throughout
        if (citus) await runner.exec("set local citus.multi_shard_modify_mode to 'sequential'")
        // statement by statement: on a Citus cluster, DDL that must reach the shards is refused inside a
        // multi-statement query
        for (const statement of splitSql(citus ? citusVariant(dir, file) ?? text : text)) await runner.exec(statement)
        await runner.query('insert into schema_migrations (name, checksum) values ($1, $2)', [file, checksum])
        await runner.exec('commit')
      } catch (err) {
        await runner.exec('rollback')
        throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err })
      }
      applied.push(file)
    }
    const distributed = await distribute(runner)
    await runner.exec(`
      grant usage on schema public to ${APP_ROLE};
      grant select, insert, update, delete on all tables in schema public to ${APP_ROLE};
      grant usage, select on all sequences in schema public to ${APP_ROLE};
      revoke all on schema_migrations from ${APP_ROLE};`)
    // the audit log is append-only for the application (docs/audit.md): once its migration (0043) has run
    const audit = await runner.query("select to_regclass('public.audit_log') is not null as present")
    if (audit.rows[0]?.present === true) {
      await runner.exec(`revoke update, delete, truncate on audit_log, audit_heads from ${APP_ROLE}`)
    }
    return { applied, skipped: files.length - applied.length, distributed }
  } finally {
    await runner.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {})
    await runner.close()
  }
}

/**
 * The Citus variant of a migration (`<dir>/citus/<file>`), if it has one: the same schema in DDL that a cluster
 * accepts on tables already distributed (a database that moved to Citus before the migration came). It is applied
 * in the main file's place and recorded under the main file's name and checksum: one migration, two spellings.
 */
function citusVariant (dir: string, file: string): string | undefined {
  const variant = path.join(dir, 'citus', file)
  return fs.existsSync(variant) ? fs.readFileSync(variant, 'utf8') : undefined
}

/** Tables that stay on the coordinator alone: the migrations' own bookkeeping. */
const LOCAL_TABLES = new Set(['schema_migrations'])

/**
 * On a Citus cluster (the `citus` extension is installed in this database; docs/scale-out.md), after
 * the migrations: every table of the public schema whose primary key leads with `tenant_id` is distributed by it,
 * co-located with the others (every key and foreign key leads with `tenant_id`, so a tenant's rows of
 * every table sit on one shard group), and every other table becomes a reference table (a copy on
 * each node). Tables are taken in foreign-key order (a referenced table first), and only those not
 * yet distributed, so a later migration's new table is distributed by the next start. Also on the
 * cluster: the application role may log in (Citus opens the workers' connections as the current
 * role) and, for a superuser, `textlike` is LEAKPROOF on the workers too (migration 0009 marks it on
 * the coordinator). Without the extension (PostgreSQL, PGlite) nothing happens.
 */
async function distribute (runner: Runner): Promise<string[]> {
  const citus = await runner.query("select 1 from pg_extension where extname = 'citus'")
  if (citus.rows.length === 0) return []
  const roles = (await runner.query(`select (select rolsuper from pg_roles where rolname = current_user) as superuser,
    (select rolcanlogin from pg_roles where rolname = $1) as login`, [APP_ROLE])).rows[0] ?? {}
  if (roles.login !== true) {
    await runner.exec(`alter role ${APP_ROLE} login`).catch((err: unknown) => {
      throw new Error(
        `on Citus the role ${APP_ROLE} must be able to log in (the coordinator opens the workers' connections as ` +
        `it), and this login may not change it: a superuser runs \`alter role ${APP_ROLE} login\` (docs/scale-out.md)`,
        { cause: err }
      )
    })
  }
  if (roles.superuser === true) {
    await runner.exec("select run_command_on_workers('alter function textlike(text, text) leakproof')")
  }
  // the log of changes' row triggers (migration 0032) go to the shards with their tables
  await runner.exec('set citus.enable_unsafe_triggers = on')
  const tables = (
    await runner.query(`
    select c.relname as name,
           exists (select from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
                   where i.indrelid = c.oid and i.indisprimary and a.attname = 'tenant_id') as tenant,
           coalesce((select array_agg(distinct r.relname::text) from pg_constraint f join pg_class r
             on r.oid = f.confrelid
                     where f.conrelid = c.oid and f.contype = 'f' and f.confrelid <> c.oid), '{}') as refs
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
      and not exists (select from pg_dist_partition d where d.logicalrelid = c.oid)`)
  ).rows
    .map(r => ({ name: String(r.name), tenant: r.tenant === true, refs: r.refs as string[] }))
    .filter(t => !LOCAL_TABLES.has(t.name))
  const pending = new Map(tables.map(t => [t.name, t]))
  const out: string[] = []
  while (pending.size > 0) {
    const ready = [...pending.values()]
      .filter(t => t.refs.every(r => !pending.has(r)))
      .sort((a, b) => a.name.localeCompare(b.name))
    if (ready.length === 0) {
      throw new Error(`cannot distribute tables with circular foreign keys: ${[...pending.keys()].join(', ')}`)
    }
    for (const t of ready) {
      const table = `public.${quoteIdent(t.name)}`
      if (t.tenant) {
        await runner.query("select create_distributed_table($1, 'tenant_id', colocate_with => 'default')", [table])
      } else await runner.query('select create_reference_table($1)', [table])
      out.push(`${t.tenant ? 'tenant' : 'reference'}:${t.name}`)
      pending.delete(t.name)
    }
  }
  return out
}

function quoteIdent (name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/**
 * Backup and restore of the embedded PGlite database (`DATA_DIR/pgdata`), while the service is stopped:
 *
 *   npm run db:backup -- <file>     writes the database as one gzipped tar file (PGlite's dumpDataDir)
 *   npm run db:restore -- <file>    replaces DATA_DIR/pgdata by that file's database; the one it replaces
 *                                   is kept beside it as pgdata.before-restore-<time>
 *
 * PGlite is one process's database: a running service has the files open (and marks them with
 * `postmaster.pid`, removed when it closes), so both refuse while that mark is there. A restore opens
 * the copy and reads its migrations before it replaces anything. On PostgreSQL (DATABASE_URL) both
 * refuse and point to pg_dump (docs/deployment.md, "Backups").
 */
import fs from 'node:fs'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import { ConfigError, loadConfig } from '../src/config.ts'

class Refusal extends Error {}

/** The database files of DATA_DIR, refused while a process has them open. */
function pgdataOf (dataDir: string): string {
  const dir = path.join(dataDir, 'pgdata')
  if (fs.existsSync(path.join(dir, 'postmaster.pid'))) {
    throw new Refusal(
      `${dir} is open (postmaster.pid): stop the service first. If no process uses it (the service was killed), ` +
      'start and stop the service once, which closes the database cleanly'
    )
  }
  return dir
}

/** Migrations recorded in a database: what a backup or a restore reports, and proof that it opens. */
async function migrationsOf (db: PGlite): Promise<{ count: number, last: string }> {
  const { rows } = await db.query<{ count: number; last: string | null }>(
    'select count(*)::int as count, max(name) as last from schema_migrations'
  )
  return { count: rows[0]?.count ?? 0, last: rows[0]?.last ?? 'none' }
}

async function backup (dataDir: string, file: string): Promise<string> {
  const dir = pgdataOf(dataDir)
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) throw new Refusal(`no database in ${dir} (DATA_DIR=${dataDir})`)
  if (fs.existsSync(file)) throw new Refusal(`${file} exists: name a new file`)
  const db = await PGlite.create({ dataDir: dir, extensions: { pg_trgm } })
  try {
    const migrations = await migrationsOf(db)
    const tarball = await db.dumpDataDir('gzip')
    // written beside the target and renamed: a backup file is complete or absent
    const partial = `${file}.partial`
    fs.writeFileSync(partial, Buffer.from(await tarball.arrayBuffer()))
    fs.renameSync(partial, file)
    return `backed up ${dir} (${migrations.count} migrations, the last ${migrations.last}) to ${file} ` +
      `(${fs.statSync(file).size} bytes)`
  } finally {
    await db.close()
  }
}

async function restore (dataDir: string, file: string): Promise<string> {
  const dir = pgdataOf(dataDir)
  if (!fs.existsSync(file)) throw new Refusal(`${file} does not exist`)
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const incoming = `${dir}.restoring-${stamp}`
  fs.mkdirSync(path.dirname(dir), { recursive: true })
  let migrations: { count: number, last: string }
  try {
    const db = await PGlite.create({
      dataDir: incoming,
      loadDataDir: new Blob([fs.readFileSync(file)]),
      extensions: { pg_trgm }
    })
    try {
      migrations = await migrationsOf(db)
    } finally {
      await db.close()
    }
  } catch (err) {
    fs.rmSync(incoming, { recursive: true, force: true })
    throw new Refusal(`${file} is not a database backup that opens: ${(err as Error).message}`)
  }
  let kept = ''
  if (fs.existsSync(dir)) {
    kept = `${dir}.before-restore-${stamp}`
    fs.renameSync(dir, kept)
  }
  fs.renameSync(incoming, dir)
  return `restored ${file} (${migrations.count} migrations, the last ${migrations.last}) ` +
    `into ${dir}${kept !== '' ? `; the database it replaced is in ${kept}` : ''}`
}

const [command, file] = process.argv.slice(2)
try {
  if ((command !== 'backup' && command !== 'restore') || file === undefined || file === '') {
    throw new Refusal('usage: npm run db:backup -- <file>  |  npm run db:restore -- <file>')
  }
  const config = loadConfig(process.env)
  if (config.databaseUrl !== undefined) {
    throw new Refusal(
      'DATABASE_URL is set: back up PostgreSQL with pg_dump and restore with pg_restore (docs/deployment.md, ' +
      `"Backups"); db:${command} is for the embedded database`
    )
  }
  const target = path.resolve(file)
  process.stdout.write(
    `${command === 'backup' ? await backup(config.dataDir, target) : await restore(config.dataDir, target)}\n`
  )
} catch (err) {
  if (!(err instanceof Refusal) && !(err instanceof ConfigError)) throw err
  process.stderr.write(`db:${command ?? 'backup'}: ${err.message}\n`)
  process.exitCode = 1
}

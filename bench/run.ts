/**
 * `npm run bench`: seeds (once per scale), builds and starts the service (dist/server.js, NODE_ENV=production,
 * WORKERS=false, LOG_LEVEL=warn) and the baseline (bench/baseline-server.ts) as separate processes,
 * and drives both with autocannon from this process, scenario by scenario: warm-up, then a fixed
 * time, ours then the baseline; scenarios with a latency budget once more at light load. Prints
 * the tables and the budget lines, writes them to DATA_DIR/report-<time>.md, and exits 1 when a
 * budget is missed. See docs/performance.md.
 *
 * `--db citus` starts a throwaway Citus cluster (coordinator + 2 workers, test/helpers/citus-cluster.ts),
 * makes a distributed database on it, migrates and seeds it at `--scale` on every run, runs the
 * scenarios against the service on the coordinator, and removes the cluster at the end (also on
 * failure or Ctrl-C).
 *
 * The service's warnings and errors (its JSON log lines of level warn and above) and the baseline's
 * failures are counted per scenario and reported under the tables; the whole logs are written to
 * service.log and baseline.log in the database's data directory (DATA_DIR/pg, DATA_DIR/citus, …).
 *
 *   npm run bench -- [--scale 1[,5]] [--db pg,pglite,citus] [--pglite-scale 0.1] [--duration 10] [--warmup 3]
 *                    [--connections 50] [--light-connections 2] [--light-duration 5] [--rounds 3] [--only a,b]
 *                    [--reseed]
 *                    [--data-dir .bench] [--database-url postgres://postgres@127.0.0.1:5432/collab_bench] [--cpu-prof
 * dir]
 *                    [--citus-shards 32]
 *
 * `--only` takes scenario names and the names of sets of them (SCENARIO_SETS: `contacts-crm`, the phone searches and
 * the duplicates of issue #23).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createDatabase } from '../src/platform/db/database.ts'
import { withClient } from '../test/helpers/pg-client.ts'
import { createDistributedDatabase, startCitusCluster } from '../test/helpers/citus-cluster.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { freePort, mergeLoads, runLoad, type LoadResult, type RequestFactory } from './load.ts'
import type { WireSample } from './wire-server.ts'
import { buildManifest, type Manifest } from './manifest.ts'
import {
  besideText, budgetText, budgets, errorText, floorText, growth, headingOf, referenceText, table, wireText,
  type BudgetLine,
  type DatabaseKind, type DatabaseRun, type LogEntry, type NpmStart, type ScenarioOutcome
} from './report.ts'
import { SCENARIO_SETS, SCENARIOS, isRead, type BenchContext, type Side } from './scenarios.ts'
import { BESIDE_SCENARIOS, type Beside } from './retention.ts'
import { EXPORT_SCENARIOS, exportText, type ExportRun } from './export.ts'
import { IMPORT_SCENARIOS } from './contacts-import.ts'
import { RACE_SCENARIOS } from './race.ts'
import { GUEST_SCENARIOS } from './guests.ts'
import { WEBHOOK_SCENARIOS } from './webhooks.ts'
import { INTEGRATION_SCENARIOS } from './integrations.ts'
import { seed, sizesFor } from './seed.ts'
import { pgliteRunner, pgRunner } from './sql-runner.ts'
import { tokenBook } from './tokens.ts'

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    'pglite-scale': { type: 'string', default: '0.1' },
    db: { type: 'string', default: 'pg,pglite' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    'light-connections': { type: 'string', default: '2' },
    'light-duration': { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
    'cpu-prof': { type: 'string' },
    reseed: { type: 'boolean', default: false },
    'citus-shards': { type: 'string', default: '32' },
    'data-dir': { type: 'string', default: '.bench' },
    'database-url': {
      type: 'string',
      default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/collab_bench'
    }
  }
})

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const DATA = path.resolve(args['data-dir'])
const DURATION = Number(args.duration)
const WARMUP = Number(args.warmup)
const CONNECTIONS = Number(args.connections)
const LIGHT_CONNECTIONS = Number(args['light-connections'])
const LIGHT_DURATION = Number(args['light-duration'])
/** the heavy load of a read scenario's sides in this many interleaved slices (ours, wire, baseline, reference…) */
const ROUNDS = Math.max(1, Math.floor(Number(args.rounds)))
const WEBHOOK_SECRET = 'bench-webhook-secret'
const only = args.only?.split(',').map(s => s.trim()).filter(Boolean).flatMap(s => SCENARIO_SETS[s] ?? [s])
const KINDS: readonly DatabaseKind[] = ['pg', 'pglite', 'citus']
const kinds = args.db.split(',').map(s => s.trim()).filter(Boolean) as DatabaseKind[]
for (const k of kinds) if (!KINDS.includes(k)) throw new Error(`--db ${k}: expected one or more of ${KINDS.join(', ')}`)
/** `--scale 1,5`: every database kind measured at each scale in turn, and the growth between them reported */
const scales = args.scale.split(',').map(s => Number(s.trim()))
for (const s of scales) {
  if (!(s > 0)) throw new Error(`--scale ${args.scale}: expected positive numbers, comma-separated`)
}

const log = (line: string) => { process.stdout.write(`${line}\n`) }
const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** What must go when the bench stops, however it stops (the Citus cluster): run by measure's finally, or on Ctrl-C. */
const cleanups = new Set<() => Promise<void>>()
/**
 * The servers this process started and that still run (stopped by cleanUp if the bench stops without stopping them).
 */
const children = new Set<ChildProcess>()
async function cleanUp (): Promise<void> {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM')
  for (const c of [...cleanups]) {
    cleanups.delete(c)
    await c().catch((err: unknown) => { log(`cleanup failed: ${(err as Error).message}`) })
  }
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void cleanUp().finally(() => process.exit(130)) })
}
// an error nobody awaits (work running beside a measurement) stops the bench, but not before the cluster is gone
for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.once(event, (err: unknown) => {
    process.stderr.write(`${event}: ${(err as Error)?.stack ?? String(err)}\n`)
    void cleanUp().finally(() => process.exit(1))
  })
}

/**
 * Seeds a fresh database unless DATA_DIR already holds one seeded at this scale with these migrations, this seed and
 * this manifest (built once after the seed and kept beside it: a scenario that needs a new field of it needs a reseed).
 */
function seedStamp (scale: number): string {
  // every file, the Citus variants under migrations/citus included
  const migrations = (fs.readdirSync(path.join(ROOT, 'migrations'), { recursive: true }) as string[])
    .filter(m => m.endsWith('.sql')).sort()
  const hash = crypto.createHash('sha256')
  for (const m of migrations) hash.update(m).update(fs.readFileSync(path.join(ROOT, 'migrations', m)))
  hash.update(fs.readFileSync(path.join(ROOT, 'bench', 'seed.ts')))
  hash.update(fs.readFileSync(path.join(ROOT, 'bench', 'manifest.ts')))
  return `${scale}:${hash.digest('hex').slice(0, 16)}`
}

/** The last id of each table the write scenarios add to, when the seed finished. */
type Watermarks = Record<'events' | 'event_series' | 'attendees' | 'outbox', number>
const WATERMARKED = ['events', 'event_series', 'attendees', 'outbox'] as const

async function watermarks (url: string): Promise<Watermarks & { at: string }> {
  return await withClient(url, async (c) => {
    const marks = { at: new Date().toISOString() } as Watermarks & { at: string }
    for (const table of WATERMARKED) {
      marks[table] = Number((await c.query(`select coalesce(max(id), 0) as id from ${table}`)).rows[0]?.id ?? 0)
    }
    return marks
  })
}

/**
 * The write scenarios add rows (series of 500 events, contacts, attendees, outbox rows) that would
 * pile up run after run and change what the read scenarios measure: before each run, rows past the
 * seed's watermarks (ids; contacts and idempotency keys by creation time, as the seed dates its
 * contacts in the past) are removed, back to the seeded data set.
 */
async function removeRunWrites (url: string, marks: Watermarks & { at: string }): Promise<void> {
  await withClient(url, async (c) => {
    let removed = 0
    const run = async (text: string, params: unknown[]) => { removed += (await c.query(text, params)).rowCount ?? 0 }
    await run('delete from attendees where id > $1', [marks.attendees])
    // occurrences of a removed series first: events refer to their series
    await run('delete from events where series_id > $1', [marks.event_series])
    await run('delete from events where id > $1', [marks.events])
    await run('delete from event_series where id > $1', [marks.event_series])
    await run('delete from outbox where id > $1', [marks.outbox])
    await run('delete from contacts where created_at > $1', [marks.at])
    await run('delete from idempotency_keys where created_at > $1', [marks.at])
    if (removed > 0) {
      await c.query('vacuum analyze')
      log(`PostgreSQL: removed ${removed} rows written by earlier runs`)
    }
  })
}

/**
 * Each scale has its own database and data directory, so that `--scale 1,5` measures both without
 * seeding again: scale 1 uses the database of `--database-url` and DATA_DIR/pg, scale 5 the same name
 * with `_s5` and DATA_DIR/pg-s5 (scale 0.1: `_s0_1`, pg-s0_1).
 */
function pgTarget (scale: number): { url: string, dir: string } {
  const u = new URL(args['database-url'])
  if (scale === 1) return { url: u.toString(), dir: path.join(DATA, 'pg') }
  const suffix = `s${String(scale).replace('.', '_')}`
  u.pathname = `${u.pathname}_${suffix}`
  return { url: u.toString(), dir: path.join(DATA, `pg-${suffix}`) }
}

async function preparePg (scale: number): Promise<{ url: string, dir: string, manifest: Manifest }> {
  const { url, dir } = pgTarget(scale)
  fs.mkdirSync(dir, { recursive: true })
  const stampFile = path.join(dir, 'seed.json')
  const stamp = seedStamp(scale)
  const previous = fs.existsSync(stampFile)
    ? (JSON.parse(fs.readFileSync(stampFile, 'utf8')) as {
        stamp: string
        manifest: Manifest
        watermarks?: Watermarks & { at: string }
      })
    : undefined
  if (!args.reseed && previous?.stamp === stamp && previous.watermarks !== undefined) {
    log(`PostgreSQL: ${new URL(url).pathname.slice(1)} already seeded at scale ${scale}`)
    await removeRunWrites(url, previous.watermarks)
    return { url, dir, manifest: previous.manifest }
  }
  const name = new URL(url).pathname.slice(1)
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unexpected database name ${name}`)
  const admin = new URL(url)
  admin.pathname = '/postgres'
  await withClient(admin.toString(), async (c) => {
    await c.query(`drop database if exists ${name} with (force)`)
    await c.query(`create database ${name}`)
  })
  log(`PostgreSQL: created ${name}; migrating and seeding at scale ${scale}`)
  const handle = await createDatabase({ databaseUrl: url })
  await migrate(handle)
  await handle.close()
  const db = pgRunner(url, 2)
  const t0 = performance.now()
  await seed(db, sizesFor(scale), log)
  const manifest = await buildManifest(db)
  await db.close()
  log(`PostgreSQL: seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
  fs.writeFileSync(stampFile, JSON.stringify({ stamp, manifest, watermarks: await watermarks(url) }))
  return { url, dir, manifest }
}

async function preparePglite (scale: number): Promise<{ ours: string, baseline: string, manifest: Manifest }> {
  const dir = path.join(DATA, 'pglite')
  const seeded = path.join(dir, 'seeded', 'pgdata')
  const stampFile = path.join(dir, 'seed.json')
  const stamp = seedStamp(scale)
  const previous = fs.existsSync(stampFile)
    ? (JSON.parse(fs.readFileSync(stampFile, 'utf8')) as { stamp: string; manifest: Manifest })
    : undefined
  let manifest: Manifest
  if (!args.reseed && previous?.stamp === stamp && fs.existsSync(seeded)) {
    log(`PGlite: already seeded at scale ${scale}`)
    manifest = previous.manifest
  } else {
    fs.rmSync(dir, { recursive: true, force: true })
    log(`PGlite: migrating and seeding at scale ${scale}`)
    const handle = await createDatabase({ pgliteDir: seeded })
    await migrate(handle)
    await handle.close()
    const db = await pgliteRunner(seeded)
    const t0 = performance.now()
    await seed(db, sizesFor(scale), log)
    manifest = await buildManifest(db)
    await db.exec('checkpoint')
    await db.close()
    log(`PGlite: seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    fs.writeFileSync(stampFile, JSON.stringify({ stamp, manifest }))
  }
  // Each side gets its own copy of the seeded files (one PGlite per data directory).
  const ours = path.join(dir, 'ours')
  const baseline = path.join(dir, 'baseline')
  for (const d of [ours, baseline]) {
    fs.rmSync(path.join(d, 'pgdata'), { recursive: true, force: true })
    fs.mkdirSync(d, { recursive: true })
    fs.cpSync(seeded, path.join(d, 'pgdata'), { recursive: true })
  }
  return { ours, baseline: path.join(baseline, 'pgdata'), manifest }
}

/**
 * A throwaway Citus cluster (coordinator + 2 workers), a distributed database `collab_bench` on it,
 * migrated (every tenant table distributed by tenant_id) and seeded at `scale` as the superuser,
 * as the PostgreSQL run seeds. Seeded on every run: the cluster lives in temporary directories and
 * goes with `destroy` (registered in `cleanups` as soon as it runs).
 */
async function prepareCitus (
  scale: number
): Promise<{ url: string; dir: string; manifest: Manifest; destroy: () => Promise<void> }> {
  const t0 = performance.now()
  const cluster = await startCitusCluster().catch((err: unknown) => {
    throw new Error(
      'the Citus cluster did not start (is the citus extension installed for the newest PostgreSQL under ' +
      `/usr/lib/postgresql?): ${(err as Error).message}`,
      { cause: err }
    )
  })
  const destroy = async () => {
    cleanups.delete(destroy)
    await cluster.destroy()
    log('Citus: cluster stopped and removed')
  }
  cleanups.add(destroy)
  try {
    log(
      `Citus: coordinator ${new URL(cluster.coordinatorUrl).port}, ` +
      `workers ${cluster.workerUrls.map(w => new URL(w).port).join(', ')} started in ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s`
    )
    const url = await createDistributedDatabase(cluster.coordinatorUrl, cluster.workerUrls, 'collab_bench')
    // shards per distributed table: Citus' default (32) unless --citus-shards, whatever the test cluster's setting
    const shards = Number(args['citus-shards'])
    if (!Number.isInteger(shards) || shards < 1) {
      throw new Error(`--citus-shards ${args['citus-shards']}: expected a positive integer`)
    }
    await withClient(url, c => c.query(`alter database collab_bench set citus.shard_count = ${shards}`))
    const dir = path.join(DATA, 'citus')
    fs.mkdirSync(dir, { recursive: true })
    const handle = await createDatabase({ databaseUrl: url })
    const { distributed } = await migrate(handle)
    await handle.close()
    const tenantTables = distributed.filter(d => d.startsWith('tenant:')).length
    log(
      `Citus: migrated; ${tenantTables} tables distributed by tenant_id (${shards} shards each), ` +
      `${distributed.length - tenantTables} reference tables; seeding at scale ${scale}`
    )
    const db = pgRunner(url, 2)
    const t1 = performance.now()
    await seed(db, sizesFor(scale), log)
    const manifest = await buildManifest(db)
    await db.close()
    log(`Citus: seeded in ${((performance.now() - t1) / 1000).toFixed(0)} s`)
    return { url, dir, manifest, destroy }
  } catch (err) {
    await destroy()
    throw err
  }
}

/**
 * The service's log lines of level warn and above (JSON, one a line), counted by message and error
 * text since the last `take()`; every line goes to `file` as well.
 */
class LogCollector {
  private partial = ''
  private counts = new Map<string, number>()
  constructor (private readonly file: string) { fs.writeFileSync(file, '') }
  push (chunk: Buffer): void {
    const text = this.partial + chunk.toString()
    const lines = text.split('\n')
    this.partial = lines.pop() ?? ''
    if (lines.length > 0) fs.appendFileSync(this.file, `${lines.join('\n')}\n`)
    for (const line of lines) {
      let entry: {
        level?: number
        msg?: string
        err?: { message?: string; code?: string }
        error?: string
        code?: string
        pgDetail?: string
      }
      try { entry = JSON.parse(line) as typeof entry } catch { continue }
      if ((entry.level ?? 0) < 40) continue
      const code = entry.err?.code ?? entry.code
      const what = entry.err?.message ?? entry.error
      const key = `${entry.msg ?? ''}${code !== undefined ? ` [${code}]` : ''}` +
        `${what !== undefined ? `: ${what}` : ''}${entry.pgDetail !== undefined ? ` (${entry.pgDetail})` : ''}`
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1)
    }
  }

  take (): LogEntry[] {
    const out = [...this.counts].map(([text, count]) => ({ text, count })).sort((a, b) => b.count - a.count)
    this.counts = new Map()
    return out
  }
}

interface Proc { child: ChildProcess, url: string, pid: number, stderr: string[] }

async function waitForAnswer (url: string, child: ChildProcess, stderr: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`process exited (${child.exitCode}): ${stderr.join('').slice(-2000)}`)
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) })
      if (res.status === 200) return
    } catch {}
    if (Date.now() > deadline) {
      throw new Error(`no answer from ${url} within ${timeoutMs} ms: ${stderr.join('').slice(-2000)}`)
    }
    await sleep(10)
  }
}

function spawnNode (
  script: string,
  env: Record<string, string>,
  flags: string[] = [],
  logs?: LogCollector
): { child: ChildProcess; stderr: string[] } {
  const child = spawn(process.execPath, [...flags, ...(script.endsWith('.ts') ? ['--import', 'tsx'] : []), script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  children.add(child)
  child.once('exit', () => {
    children.delete(child)
  })
  // the last lines of both streams, for the error message when the process stops
  const stderr: string[] = []
  const keep = (d: Buffer) => {
    stderr.push(d.toString())
    if (stderr.length > 200) stderr.shift()
  }
  if (logs !== undefined) {
    child.stdout?.on('data', (d: Buffer) => {
      logs.push(d)
    })
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return { child, stderr }
}

async function startOurs (env: Record<string, string>, logs: LogCollector): Promise<Proc & { startMs: number }> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const t0 = performance.now()
  // with the flags of `npm start` (package.json)
  const { child, stderr } = spawnNode(
    'dist/server.js',
    {
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: url,
      WORKERS: 'false',
      LOG_LEVEL: 'warn',
      // rate limits stay on (their cost is part of each request) but never refuse the load generator
      RATE_LIMIT_CAPACITY: '10000000',
      RATE_LIMIT_REFILL_PER_SEC: '1000000',
      // the guest routes' own bounds likewise (bench/guests.ts: every guest comes from 127.0.0.1)
      GUEST_LIMIT_PER_ADDRESS: '1000000',
      GUEST_LIMIT_PER_EVENT: '1000000',
      IDP_WEBHOOK_SECRET: WEBHOOK_SECRET,
      ...env
    },
    [
      '--max-old-space-size=512',
      ...(args['cpu-prof'] !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(args['cpu-prof'])}`] : [])
    ],
    logs
  )
  await waitForAnswer(url, child, stderr, 120_000)
  const startMs = performance.now() - t0
  return { child, url, pid: child.pid ?? 0, stderr, startMs }
}

async function startBaseline (env: Record<string, string>, logs: LogCollector): Promise<Proc> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const { child, stderr } = spawnNode('bench/baseline-server.ts', { PORT: String(port), ...env }, [], logs)
  await waitForAnswer(url, child, stderr, 120_000)
  return { child, url, pid: child.pid ?? 0, stderr }
}

/**
 * The service's answers to `n` requests of a scenario (its status, the headers that describe the body, the body's bytes
 * as they came: compressed when the scenario asks for a coding), for the wire server to send. Read with `node:http`,
 * which sends only the scenario's headers and decodes nothing (fetch would ask for, and undo, a coding of its own).
 */
async function wireSamples (next: RequestFactory, url: string, n = 20): Promise<WireSample[]> {
  const out: WireSample[] = []
  for (let i = 0; i < n; i++) {
    const r = next()
    const { status, headers, body } = await new Promise<{
      status: number, headers: http.IncomingHttpHeaders, body: Buffer
    }>((resolve, reject) => {
      const req = http.request(`${url}${r.path}`, { method: r.method, headers: r.headers }, res => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })
        })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(r.body)
    })
    const kept: Record<string, string> = {}
    for (const h of ['content-type', 'content-encoding', 'vary', 'etag', 'www-authenticate', 'cache-control']) {
      const v = headers[h]
      if (v !== undefined) kept[h] = Array.isArray(v) ? v.join(', ') : v
    }
    out.push({ status, headers: kept, body: body.toString('base64') })
  }
  return out
}

async function startWire (samples: WireSample[], dataDir: string): Promise<Proc> {
  const file = path.join(dataDir, 'wire-samples.json')
  fs.writeFileSync(file, JSON.stringify(samples))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const { child, stderr } = spawnNode('bench/wire-server.ts', { PORT: String(port), WIRE_SAMPLES: file })
  await waitForAnswer(url, child, stderr, 60_000)
  return { child, url, pid: child.pid ?? 0, stderr }
}

async function stop (p: Proc): Promise<void> {
  if (p.child.exitCode !== null) return
  const exited = new Promise(resolve => p.child.once('exit', resolve))
  p.child.kill('SIGTERM')
  await Promise.race([exited, sleep(15_000)])
  if (p.child.exitCode === null) p.child.kill('SIGKILL')
}

async function routesOf (url: string): Promise<Set<string>> {
  const doc = await (await fetch(`${url}/openapi.json`)).json() as { paths: Record<string, Record<string, unknown>> }
  const out = new Set<string>()
  for (const [p, ops] of Object.entries(doc.paths)) for (const m of Object.keys(ops)) out.add(`${m.toUpperCase()} ${p}`)
  return out
}

/**
 * Whether the reference gives the baseline's answer: five requests of the scenario, each sent to both
 * (`/b/…` and `/r/…`), the bodies compared after normalising what JSON from `pg` and JSON from
 * PostgreSQL write differently (timestamps to the millisecond, counts as numbers, key order).
 */
async function checkReference (s: (typeof SCENARIOS)[number], ctx: BenchContext, url: string): Promise<string> {
  const next = s.build?.(ctx)
  if (next === undefined) return 'not checked'
  const norm = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(norm)
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, norm(x)]))
    }
    if (typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v)) return Math.floor(Date.parse(v))
    if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v)
    return v
  }
  const differ = (a: unknown, b: unknown, at: string): string | undefined => {
    if (Array.isArray(a) && Array.isArray(b)) {
      if (a.length !== b.length) return `${at}: ${a.length} items against ${b.length}`
      for (let i = 0; i < a.length; i++) { const d = differ(a[i], b[i], `${at}[${i}]`); if (d !== undefined) return d }
      return undefined
    }
    if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
        const d = differ((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`)
        if (d !== undefined) return d
      }
      return undefined
    }
    return (a ?? null) === (b ?? null) || (typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) < 1e-6)
      ? undefined
      : `${at}: ${JSON.stringify(a)} against ${JSON.stringify(b)}`
  }
  for (let i = 0; i < 5; i++) {
    const spec = next()
    const [b, r] = await Promise.all([spec.path, spec.path.replace(/^\/b\//, '/r/')].map(async p => {
      const res = await fetch(`${url}${p}`, { method: spec.method })
      return { status: res.status, body: norm(await res.json()) }
    }))
    if (b === undefined || r === undefined) return 'not checked'
    if (b.status !== r.status) return `DIFFERENT: status ${b.status} against ${r.status} (${spec.path})`
    const d = differ(b.body, r.body, 'body')
    if (d !== undefined) return `DIFFERENT: ${d} (${spec.path})`
  }
  return 'the same answer to 5 requests'
}

async function measure (kind: DatabaseKind, scale: number): Promise<DatabaseRun> {
  let oursEnv: Record<string, string>
  let baseEnv: Record<string, string>
  let dataDir: string
  let manifest: Manifest
  if (kind === 'citus') {
    const p = await prepareCitus(scale)
    try {
      return await measureOn(
        kind,
        scale,
        p.dir,
        p.manifest,
        { DATABASE_URL: p.url, DATA_DIR: p.dir },
        { BENCH_DATABASE_URL: p.url }
      )
    } finally {
      await p.destroy()
    }
  } else if (kind === 'pg') {
    const p = await preparePg(scale)
    dataDir = p.dir
    manifest = p.manifest
    // earlier runs on this database patched events: start from their current revisions
    const db = pgRunner(p.url, 1)
    const current = new Map(
      (
        await db.query<{ id: number; revision: number }>(
          'select id, revision from events where id = any($1::bigint[])',
          [manifest.patchable.map(e => e.id)]
        )
      ).map(r => [Number(r.id), Number(r.revision)])
    )
    await db.close()
    for (const e of manifest.patchable) e.revision = current.get(e.id) ?? e.revision
    oursEnv = { DATABASE_URL: p.url, DATA_DIR: p.dir }
    baseEnv = { BENCH_DATABASE_URL: p.url }
  } else {
    const p = await preparePglite(scale)
    dataDir = p.ours
    manifest = p.manifest
    oursEnv = { DATABASE_URL: '', DATA_DIR: p.ours }
    baseEnv = { BENCH_PGLITE_DIR: p.baseline, BENCH_DATABASE_URL: '' }
  }
  return await measureOn(kind, scale, dataDir, manifest, oursEnv, baseEnv)
}

/**
 * Waits until no other session of the database runs a statement, seen in five polls in a row 100 ms apart (60 s at
 * most); what it waited, for the log.
 */
async function settle (url: string): Promise<string> {
  const started = Date.now()
  return await withClient(url, async c => {
    let quiet = 0
    while (quiet < 5) {
      if (Date.now() - started > 60_000) return 'the database was still busy after 60 s; light load measured anyway'
      const { rows } = await c.query<{ busy: number }>(`select count(*)::int as busy from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and state not in ('idle', 'idle in transaction')`)
      quiet = (rows[0]?.busy ?? 0) === 0 ? quiet + 1 : 0
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    return `database settled in ${((Date.now() - started) / 1000).toFixed(1)} s before the light load`
  })
}

async function measureOn (
  kind: DatabaseKind,
  scale: number,
  dataDir: string,
  manifest: Manifest,
  oursEnv: Record<string, string>,
  baseEnv: Record<string, string>
): Promise<DatabaseRun> {
  const tokens = await tokenBook(dataDir, manifest)
  const logs = new LogCollector(path.join(dataDir, 'service.log'))
  const baseLogs = new LogCollector(path.join(dataDir, 'baseline.log'))
  const ours = await startOurs(oursEnv, logs)
  logs.take()
  const base = await startBaseline(baseEnv, baseLogs)
  log(`${kind}: service answered ${ours.startMs.toFixed(0)} ms after spawn (pid ${ours.pid}); baseline pid ${base.pid}`)
  const outcomes: ScenarioOutcome[] = []
  try {
    const routes = await routesOf(ours.url)
    const ctxOf = (side: Side): BenchContext => ({
      side,
      manifest,
      token: tokens.token,
      forged: tokens.forged,
      webhookSecret: WEBHOOK_SECRET
    })
    for (const s of [...SCENARIOS, ...BESIDE_SCENARIOS]) {
      if (only !== undefined && !only.includes(s.name)) continue
      if (s.build === undefined || !routes.has(s.route)) {
        log(`${kind}: ${s.name}: not measured: route missing (${s.route})`)
        outcomes.push({ scenario: s, missing: true })
        continue
      }
      // work beside the second measurement (bench/retention.ts): on a PostgreSQL server (not PGlite)
      const beside = (s as { beside?: Beside }).beside
      const besideEnv = { kind, databaseUrl: kind !== 'pglite' ? oursEnv.DATABASE_URL : undefined, log }
      if (beside !== undefined && kind === 'pglite') {
        log(`${kind}: ${s.name}: not measured: PostgreSQL only`)
        continue
      }
      await beside?.prepare(besideEnv)
      const connections = s.connections ?? CONNECTIONS
      const run = async (side: Side, proc: Proc, conns: number, duration: number, warm = true): Promise<LoadResult> => {
        const next = s.build?.(ctxOf(side))
        if (next === undefined) throw new Error('unreachable')
        if (warm && WARMUP > 0) {
          await runLoad({ url: proc.url, connections: conns, duration: WARMUP, next, pid: proc.pid })
        }
        return await runLoad({
          url: proc.url,
          connections: conns,
          duration,
          next,
          pid: proc.pid,
          db: kind !== 'pglite'
        })
      }
      await s.prepare?.(ctxOf('ours'), ours.url)
      const o: ScenarioOutcome = { scenario: s, missing: false }
      if (s.reference === true) {
        o.referenceCheck = await checkReference(s, ctxOf('baseline'), base.url)
        log(`${kind}: ${s.name}: reference against the baseline: ${o.referenceCheck}`)
      }
      // the same answers sent from memory by a bare server: what the machine can send of them
      let wire: Proc | undefined
      if (s.wire === true) {
        const samples = await wireSamples(s.build(ctxOf('ours')), ours.url)
        o.wireBytes = samples.reduce((n, x) => n + Buffer.from(x.body, 'base64').length, 0) / samples.length
        wire = await startWire(samples, dataDir)
      }
      // how many items an answer holds (or aggregates), for the growth of its cost per item
      if (s.items !== undefined) {
        const count = s.items
        const answers = await wireSamples(s.build(ctxOf('ours')), ours.url, 5)
        o.items = answers.reduce((n, x) => n + count(Buffer.from(x.body, 'base64')), 0) / answers.length
      }
      try {
        // each side's heavy load in ROUNDS slices taken in turn, so that a ratio's two sides meet the machine in the
        // same states (its speed moves by a third between runs minutes apart: docs/performance-log.md)
        const sides: Array<{ key: 'ours' | 'wire' | 'baseline' | 'reference', side: Side, proc: Proc }> = [
          { key: 'ours', side: 'ours', proc: ours },
          ...(wire !== undefined ? [{ key: 'wire' as const, side: 'ours' as const, proc: wire }] : []),
          ...(s.baseline !== false ? [{ key: 'baseline' as const, side: 'baseline' as const, proc: base }] : []),
          ...(s.reference === true ? [{ key: 'reference' as const, side: 'reference' as const, proc: base }] : [])
        ]
        // reads only: a write scenario's state (the events' revisions an If-Match names) runs on from slice to slice,
        // and the requests still in flight when a slice ends left it stale (412s in the next one)
        const rounds = isRead(s) ? ROUNDS : 1
        const slices = new Map<string, LoadResult[]>()
        for (let round = 0; round < rounds; round++) {
          for (const { key, side, proc } of sides) {
            const slice = await run(side, proc, connections, DURATION / rounds, round === 0)
            slices.set(key, [...slices.get(key) ?? [], slice])
          }
        }
        const merged = (key: string) => mergeLoads(slices.get(key) ?? [], DURATION)
        o.ours = merged('ours')
        for (const { key } of sides.slice(1)) o[key] = merged(key)
      } finally {
        if (wire !== undefined) await stop(wire)
      }
      if (beside !== undefined) {
        const task = await beside.start(besideEnv)
        o.beside = await run('ours', ours, connections, DURATION)
        o.besideNote = `${beside.label}: ${await task.stop()}`
        log(
          `${kind}: ${s.name}: ours alone p50 ${o.ours.p50.toFixed(2)} p95 ${o.ours.p95.toFixed(2)} p99 ` +
            `${o.ours.p99.toFixed(2)} ms ${o.ours.rps.toFixed(0)} req/s` +
            ` | beside pruning p50 ${o.beside.p50.toFixed(2)} p95 ${o.beside.p95.toFixed(2)} p99 ` +
            `${o.beside.p99.toFixed(2)} ms ${o.beside.rps.toFixed(0)} req/s | ${o.besideNote}`
        )
      }
      if (s.p95BudgetMs !== undefined || isRead(s)) {
        // the heavy runs' backlog (requests still queued in a server when the load generator stops) drained first,
        // so that the light load measures the request and not that backlog
        if (kind !== 'pglite') log(`${kind}: ${s.name}: ${await settle(oursEnv.DATABASE_URL ?? '')}`)
        o.light = await run('ours', ours, LIGHT_CONNECTIONS, LIGHT_DURATION)
        // the same SQL without the service: what the machine and the data allow
        if (s.baseline !== false) o.baselineLight = await run('baseline', base, LIGHT_CONNECTIONS, LIGHT_DURATION)
        if (s.reference === true) o.referenceLight = await run('reference', base, LIGHT_CONNECTIONS, LIGHT_DURATION)
      }
      o.serviceLog = logs.take()
      o.baselineLog = baseLogs.take()
      outcomes.push(o)
      for (const e of o.serviceLog) log(`${kind}: ${s.name}: service log: ${e.count} x ${e.text}`)
      for (const e of o.baselineLog) log(`${kind}: ${s.name}: baseline log: ${e.count} x ${e.text}`)
      const a = o.ours
      const b = o.baseline
      log(
        `${kind}: ${s.name}: ours ${a.rps.toFixed(0)} req/s p50 ${a.p50.toFixed(2)} p99 ${a.p99.toFixed(2)} ms rss ` +
          `${a.peakRssMb.toFixed(0)} MB cpu ${a.cpuMsPerRequest.toFixed(2)} ms/req` +
          `${b !== undefined
            ? ` | baseline ${b.rps.toFixed(0)} req/s p50 ${b.p50.toFixed(2)} p99 ${b.p99.toFixed(2)} ms cpu ` +
              `${b.cpuMsPerRequest.toFixed(2)} ms/req | ratio ${(a.rps / Math.max(b.rps, 1e-9)).toFixed(2)}`
            : ''}` +
          `${o.reference !== undefined
            ? ` | reference ${o.reference.rps.toFixed(0)} req/s p50 ${o.reference.p50.toFixed(2)} ms | ` +
              `ours/reference ${(a.rps / Math.max(o.reference.rps, 1e-9)).toFixed(2)}`
            : ''}` +
          `${o.wire !== undefined
            ? ` | wire ${o.wire.rps.toFixed(0)} req/s (${((o.wireBytes ?? 0) / 1024).toFixed(1)} KB an answer) | ` +
              `ours/wire ${(a.rps / Math.max(o.wire.rps, 1e-9)).toFixed(2)}`
            : ''}` +
          `${a.dbCpuMsPerRequest !== undefined
            ? ` | db cpu ${a.dbCpuMsPerRequest.toFixed(2)} / ${b?.dbCpuMsPerRequest?.toFixed(2) ?? '-'}` +
              `${o.reference?.dbCpuMsPerRequest !== undefined
                ? ` / ${o.reference.dbCpuMsPerRequest.toFixed(2)}`
                : ''} ms/req`
            : ''}` +
          `${o.light !== undefined
            ? ` | light p95 ${o.light.p95.toFixed(2)} ms (baseline ${o.baselineLight?.p95.toFixed(2) ?? '-'} ` +
              `ms${o.referenceLight !== undefined ? `, reference ${o.referenceLight.p95.toFixed(2)} ms` : ''})`
            : ''}` +
          `${a.non2xx + (b?.non2xx ?? 0) > 0
            ? ` | statuses ours ${JSON.stringify(a.statuses)} baseline ${JSON.stringify(b?.statuses ?? {})}`
            : ''}`
      )
    }
    // opt-in scenarios of their own shape (one request measured, not a load): only when named in --only
    for (const s of [
      ...EXPORT_SCENARIOS, ...IMPORT_SCENARIOS, ...RACE_SCENARIOS, ...WEBHOOK_SCENARIOS, ...INTEGRATION_SCENARIOS,
      ...GUEST_SCENARIOS
    ]) {
      if (only === undefined || !only.includes(s.name)) continue
      const runs = await s.run({
        kind,
        scale,
        databaseUrl: kind !== 'pglite' ? oursEnv.DATABASE_URL : undefined,
        url: ours.url,
        pid: ours.pid,
        token: tokens.token,
        dataDir,
        log
      })
      exportRuns.push({ kind, scale, title: s.title, runs })
      for (const e of logs.take()) log(`${kind}: ${s.name}: service log: ${e.count} x ${e.text}`)
    }
  } finally {
    await stop(ours)
    await stop(base)
  }
  return { kind, scale, startMs: ours.startMs, outcomes }
}

/**
 * PGlite as a newcomer meets it: `npm start` (the package's own start script, which builds when the sources are newer)
 * on a new data directory, then on the same directory again; each to its first answer of `/health`, and the resident
 * set of the service's process after 10 s idle.
 */
async function npmStart (): Promise<NpmStart> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-npm-start-'))
  const once = async (): Promise<{ ms: number, rssMb: number }> => {
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const t0 = performance.now()
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      // as a newcomer's shell has it: not the bench's own NODE_OPTIONS (tsx's loader)
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        DATA_DIR: dir,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: '',
        LOG_LEVEL: 'warn'
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true
    })
    children.add(child)
    const stderr: string[] = []
    child.stdout?.on('data', (d: Buffer) => { stderr.push(d.toString()) })
    child.stderr?.on('data', (d: Buffer) => { stderr.push(d.toString()) })
    try {
      await waitForAnswer(url, child, stderr, 120_000)
      const ms = performance.now() - t0
      await sleep(10_000)
      // npm runs the script through a shell: the service is the node process under it that runs scripts/start.mjs
      const server = descendants(child.pid ?? 0).find(pid =>
        fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node' &&
        fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('scripts/start.mjs'))
      const status = server !== undefined ? fs.readFileSync(`/proc/${server}/status`, 'utf8') : ''
      const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
      return { ms, rssMb: rssKb / 1024 }
    } finally {
      if (child.pid !== undefined) {
        try { process.kill(-child.pid, 'SIGTERM') } catch {}
      }
      await new Promise(resolve => child.once('exit', resolve))
      children.delete(child)
    }
  }
  try {
    const fresh = await once()
    const again = await once()
    return { newMs: fresh.ms, existingMs: again.ms, newIdleRssMb: fresh.rssMb, existingIdleRssMb: again.rssMb }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** The processes under `pid`, its children first (from /proc). */
function descendants (pid: number): number[] {
  const out: number[] = []
  const walk = (p: number) => {
    for (const task of fs.readdirSync(`/proc/${p}/task`)) {
      const text = fs.readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim()
      for (const c of text === '' ? [] : text.split(/\s+/).map(Number)) { out.push(c); walk(c) }
    }
  }
  walk(pid)
  return out
}

/** The export scenarios' runs (bench/export.ts), listed after the tables of the report. */
const exportRuns: Array<{ kind: DatabaseKind, scale: number, title: string, runs: ExportRun[] }> = []

const started = new Date()
// the service runs as production runs it: the bundle `npm start` builds, made from the current sources
execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' })
const runs: DatabaseRun[] = []
try {
  for (const s of scales) {
    for (const kind of kinds) {
      const scale = kind === 'pglite' ? Math.min(s, Number(args['pglite-scale'])) : s
      // PGlite runs once when every scale asked is above its own
      if (runs.some(r => r.kind === kind && r.scale === scale)) continue
      // `--db pglite --only npm-start`: PGlite through `npm start` alone, without seeding a data set
      if (kind === 'pglite' && only?.length === 1 && only[0] === 'npm-start') {
        runs.push({ kind, scale, startMs: NaN, outcomes: [] })
      } else {
        runs.push(await measure(kind, scale))
      }
      if (kind === 'pglite' && (only === undefined || only.includes('npm-start'))) {
        const last = runs[runs.length - 1]
        if (last !== undefined) {
          last.npmStart = await npmStart()
          log(`pglite: npm start: ${last.npmStart.newMs.toFixed(0)} ms on a new data directory, ` +
            `${last.npmStart.existingMs.toFixed(0)} ms on it again; idle ${last.npmStart.newIdleRssMb.toFixed(0)} / ` +
            `${last.npmStart.existingIdleRssMb.toFixed(0)} MB`)
        }
      }
    }
  }
} finally {
  await cleanUp()
}

const machine = `${os.cpus().length} CPU (${os.cpus()[0]?.model ?? 'unknown'}), ` +
  `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, load average ${os
  .loadavg()
  .map(l => l.toFixed(1))
  .join(' ')}`
const out: string[] = [
  `# Benchmark ${started.toISOString()}`,
  '',
  machine,
  '',
  `${DURATION} s per side in ${ROUNDS} interleaved slices after ${WARMUP} s warm-up, ${CONNECTIONS} connections; ` +
  `light load ${LIGHT_CONNECTIONS} connections for ${LIGHT_DURATION} s`,
  ''
]
let failed = false
for (const r of runs) {
  const lines: BudgetLine[] = budgets(r, CONNECTIONS)
  failed ||= lines.some(l => l.enforced && l.ok === false)
  out.push(
    `## ${headingOf(r.kind)} (scale ${r.scale})`,
    '',
    table(r, CONNECTIONS, LIGHT_CONNECTIONS),
    '',
    '```',
    budgetText(lines),
    '```',
    ''
  )
  const wired = wireText(r, CONNECTIONS)
  if (wired !== '') out.push(wired, '')
  const floored = floorText(r)
  if (floored !== '') out.push(floored, '')
  const checked = referenceText(r)
  if (checked !== '') out.push(checked, '')
  const besides = besideText(r, CONNECTIONS)
  if (besides !== '') out.push(besides, '')
  const errors = errorText(r)
  if (errors !== '') out.push(errors, '')
}
for (const e of exportRuns.filter(x => x.runs.length > 0)) {
  out.push(`## ${e.title} (${headingOf(e.kind)}, scale ${e.scale})`, '', ...e.runs.map(r => `- ${exportText(r)}`), '')
}
const grown = growth(runs)
if (grown.text !== '') {
  failed ||= grown.lines.some(l => l.enforced && l.ok === false)
  out.push(grown.text, '```', budgetText(grown.lines), '```', '')
}
const text = out.join('\n')
log(`\n${text}`)
fs.mkdirSync(DATA, { recursive: true })
const file = path.join(DATA, `report-${started.toISOString().replace(/[:.]/g, '-')}.md`)
fs.writeFileSync(file, text)
log(`report written to ${file}`)
process.exit(failed ? 1 : 0)

#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's test runner (through tsx). Node 20's
// --test expands no glob patterns, so the file list is built here. Extra arguments are passed on
// (e.g. a file path or --test-name-pattern).
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

function find (dir) {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : find(p)
    return e.name.endsWith('.test.ts') ? [p] : []
  })
}

const args = process.argv.slice(2)
const explicit = args.filter(a => a.endsWith('.ts'))
const options = args.filter(a => !a.endsWith('.ts'))
const files = explicit.length > 0 ? explicit : [...find('src'), ...find('test')].sort()
const concurrency = process.env.TEST_CONCURRENCY ?? '2'

// A throwaway Citus cluster (coordinator + 2 workers) when the machine's PostgreSQL has the extension,
// unless TEST_CITUS=0: the suites' database tests then run on it too (test/helpers/citus-cluster.ts).
const env = { ...process.env }
let cluster
if (process.env.TEST_CITUS !== '0' && process.env.TEST_CITUS_URL === undefined) {
  const control = citusControl()
  if (control === undefined || !fs.existsSync(control)) {
    console.log(
      `citus: not installed (${control ?? 'no PostgreSQL under /usr/lib/postgresql'}): no Citus cluster, ` +
      `the suites run on PGlite${process.env.TEST_DATABASE_URL ? ' and PostgreSQL' : ''} (docs/scale-out.md)`
    )
  } else {
    cluster = await startCluster()
    env.TEST_CITUS_URL = cluster.info.coordinatorUrl
    env.TEST_CITUS_WORKERS = JSON.stringify(cluster.info.workerUrls)
    env.TEST_CITUS_TEMPLATE = cluster.info.template
    console.log(
      `citus: a coordinator and ${cluster.info.workerUrls.length} workers at ${cluster.info.coordinatorUrl}: ` +
      'the suites run on Citus too'
    )
  }
}

// PGlite: one migrated data directory per run, each suite's PGlite loaded from it (test/helpers/pglite-template.ts)
let pgliteTemplate
if (env.TEST_PGLITE_TEMPLATE === undefined &&
    (env.TEST_DATABASES === undefined || env.TEST_DATABASES.split(',').includes('pglite'))) {
  pgliteTemplate = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'collab-pglite-template-')), 'template.tar')
  runHelper('test/helpers/pglite-template.ts', pgliteTemplate)
  env.TEST_PGLITE_TEMPLATE = pgliteTemplate
}

// PostgreSQL: one migrated template database per run, each suite's database a copy of it (test/helpers/pg-template.ts)
let pgTemplate
if (env.TEST_DATABASE_URL !== undefined && env.TEST_DATABASE_URL !== '' && env.TEST_PG_TEMPLATE === undefined &&
    (env.TEST_DATABASES === undefined || env.TEST_DATABASES.split(',').includes('pg'))) {
  pgTemplate = runHelper('test/helpers/pg-template.ts', 'create', env.TEST_DATABASE_URL)
  env.TEST_PG_TEMPLATE = pgTemplate
}

// TEST_FILE_TIMES=<path>: each file's time written there, slowest first (scripts/test-file-times.mjs)
const fileTimes = process.env.TEST_FILE_TIMES === undefined
  ? []
  : ['--test-reporter-destination=stdout', '--test-reporter=./scripts/test-file-times.mjs',
      `--test-reporter-destination=${process.env.TEST_FILE_TIMES}`]

const result = spawnSync(process.execPath, [
  '--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...fileTimes, ...options,
  ...files
], { stdio: 'inherit', env })
if (cluster !== undefined) await cluster.stop()
if (pgTemplate !== undefined) runHelper('test/helpers/pg-template.ts', 'drop', env.TEST_DATABASE_URL, pgTemplate)
if (pgliteTemplate !== undefined) fs.rmSync(path.dirname(pgliteTemplate), { recursive: true, force: true })
process.exit(result.status ?? 1)

/** Runs a helper script of test/helpers with the arguments; its output (a template's name) trimmed. */
function runHelper (script, ...args) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8'
  })
  if (run.status !== 0) throw new Error(`${script} ${args[0]} failed (exit ${run.status})`)
  return run.stdout.trim()
}

function citusControl () {
  const root = '/usr/lib/postgresql'
  if (!fs.existsSync(root)) return undefined
  const version = fs.readdirSync(root).filter(v => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))[0]
  return version === undefined ? undefined : `/usr/share/postgresql/${version}/extension/citus.control`
}

/** Starts test/helpers/citus-cluster.ts as a child that keeps the cluster until it is sent SIGTERM. */
async function startCluster () {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/citus-cluster.ts'], {
    stdio: ['pipe', 'pipe', 'inherit']
  })
  const info = await new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk.toString()
      const line = out.split('\n').find(l => l.startsWith('{'))
      if (line !== undefined) resolve(JSON.parse(line))
    })
    child.once('exit', code => reject(new Error(`the Citus cluster did not start (exit ${code})`)))
  })
  const exited = new Promise(resolve => child.once('exit', resolve))
  return { info, stop: async () => { child.kill('SIGTERM'); await exited } }
}

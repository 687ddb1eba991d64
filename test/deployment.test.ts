/**
 * docs/deployment.md followed step by step (runs when TEST_DATABASE_URL and TEST_REDIS_URL are set):
 *
 * 1. the logins: the guide's SQL block, read from the file, run as the superuser with this run's names;
 * 2. the migration step: `npm run db:migrate` as the owner (the guide's DATABASE_URL line), then the
 *    superuser's `alter function textlike … leakproof` that a non-superuser owner needs;
 * 3. two instances of the real server (`node --import tsx src/server.ts`) on the guide's three logins,
 *    MIGRATE_AT_START=false, WORKERS=true, one REDIS_URL; neither holds a connection as the owner;
 * 4. they share rate limits (one caller's requests alternated between them drain one bucket), idempotency
 *    (a key sent to A then B answers the stored answer, one row) and jobs (executions requested through A run
 *    once each, across both: attempts 1, one activity row each);
 * 5. SIGTERM stops both, each exiting 0.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { killAndReport, startServers, type ServerProcess } from './helpers/process.ts'

const adminUrl = process.env.TEST_DATABASE_URL ?? ''
const redisUrl = process.env.TEST_REDIS_URL ?? ''
const skip =
  adminUrl === '' || redisUrl === ''
    ? 'needs TEST_DATABASE_URL and TEST_REDIS_URL (set: ' +
      `${[adminUrl !== '' ? 'TEST_DATABASE_URL' : '', redisUrl !== '' ? 'TEST_REDIS_URL' : ''].filter(Boolean)
        .join(', ') || 'neither'})`
    : false
if (skip !== false) console.log(`deployment test skipped: it ${skip}`)

const GUIDE = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'deployment.md'), 'utf8')
const CAPACITY = 40
const PASSWORD = 'secret-for-tests'
const sleep = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))

/** The first fenced block of `lang` after the heading `title`. */
function blockAfter (title: string, lang: string): string {
  const section = GUIDE.slice(GUIDE.indexOf(`\n## ${title}\n`))
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section)
  assert.ok(section.length < GUIDE.length && m !== null, `docs/deployment.md has a ${lang} block under "${title}"`)
  return m[1] ?? ''
}

void describe('pg + redis: docs/deployment.md followed with two instances', { skip }, () => {
  const suffix = crypto.randomBytes(4).toString('hex')
  // the guide's names, made unique on the shared test server
  const names: Record<string, string> = {
    collab_owner: `collab_d_owner_${suffix}`,
    collab_web: `collab_d_web_${suffix}`,
    collab_worker: `collab_d_worker_${suffix}`,
    collab: `collab_deploy_${suffix}`
  }
  const rename = (text: string): string => text
    .replace(/\b(collab_owner|collab_web|collab_worker|collab)\b/g, n => names[n] ?? n)
    .replaceAll('…', PASSWORD)
  const admin = new URL(adminUrl === '' ? 'postgres://localhost/postgres' : adminUrl)
  const adminOf = (db: string): string => { const u = new URL(admin); u.pathname = `/${db}`; return u.toString() }
  /** the guide's DATABASE_*_URL lines, pointed at the test server */
  const logins: Record<string, string> = {}
  const instances: ServerProcess[] = []
  let dataDir = ''
  let superDb: pg.Client | undefined

  before(async () => {
    // 1. the logins, as the guide says (as a superuser)
    const statements = rename(blockAfter('Setting up the logins', 'sql'))
      .split(/;\s*(?:--[^\n]*)?\n/)
      .map(s => s.trim())
      .filter(s => s !== '')
    assert.ok(statements.length >= 5, statements.join('\n'))
    const server = new pg.Client({ connectionString: adminUrl })
    await server.connect()
    try {
      for (const statement of statements) {
        // roles belong to the cluster: the guide says to skip collab_app where another database made it
        if (
          /^create role collab_app\b/.test(statement) &&
          (await server.query('select 1 from pg_roles where rolname = $1', ['collab_app'])).rowCount === 1
        ) { continue }
        await server.query(statement)
      }
    } finally {
      await server.end()
    }
    for (const line of rename(blockAfter('Setting up the logins', 'sh')).split('\n')) {
      const m = /^(DATABASE_\w*URL)=(\S+)$/.exec(line.trim())
      if (m === null) continue
      const u = new URL(m[2] ?? '')
      u.hostname = admin.hostname
      u.port = admin.port
      logins[m[1] ?? ''] = u.toString()
    }
    assert.deepEqual(Object.keys(logins).sort(), ['DATABASE_APP_URL', 'DATABASE_URL', 'DATABASE_WORKER_URL'])
    superDb = new pg.Client({ connectionString: adminOf(names.collab ?? '') })
    await superDb.connect()
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-deploy-'))
  })

  after(async () => {
    killAndReport(instances, 5)
    await superDb?.end()
    if (adminUrl !== '') {
      const server = new pg.Client({ connectionString: adminUrl })
      await server.connect()
      try {
        await server.query(`drop database if exists ${names.collab ?? ''} with (force)`)
        for (const role of [names.collab_web, names.collab_worker, names.collab_owner]) {
          await server.query(`drop role if exists ${role ?? ''}`)
        }
      } finally {
        await server.end()
      }
    }
    if (dataDir !== '') fs.rmSync(dataDir, { recursive: true, force: true })
  })

  void it('runs the migration step as the owner, apart from the start', async () => {
    assert.match(GUIDE, /npm run db:migrate/)
    assert.match(GUIDE, /MIGRATE_AT_START=false/)
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: logins.DATABASE_URL, DATA_DIR: dataDir }
    for (const name of ['DATABASE_APP_URL', 'DATABASE_WORKER_URL']) delete env[name]
    const run = await new Promise<{ code: number | null, out: string }>((resolve, reject) => {
      const child = spawn('npm', ['run', '--silent', 'db:migrate'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (c: Buffer) => { out += c.toString() })
      child.stderr.on('data', (c: Buffer) => { out += c.toString() })
      child.once('error', reject)
      child.once('close', code => { resolve({ code, out }) })
    })
    assert.equal(run.code, 0, run.out)
    assert.match(run.out, /^(\d+) applied, 0 already applied$/m)
    // the owner is no superuser: the guide's statement for the DBA
    assert.match(GUIDE, /alter function textlike\(text, text\) leakproof;/)
    await superDb?.query('alter function textlike(text, text) leakproof')
    const owner = await superDb?.query<{ owner: string }>(
      "select tableowner as owner from pg_tables where tablename = 'contacts'"
    )
    assert.equal(owner?.rows[0]?.owner, names.collab_owner)
  })

  void it('starts two instances on the three logins, without migrating and without the owner login', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...logins,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir, // dev mode: both trust the one key in this folder (OIDC in production)
      MIGRATE_AT_START: 'false',
      WORKERS: 'true',
      REDIS_URL: redisUrl,
      RATE_LIMIT_CAPACITY: String(CAPACITY),
      RATE_LIMIT_REFILL_PER_SEC: '1',
      RATE_LIMIT_ANON_CAPACITY: '10000',
      LOG_LEVEL: 'info'
    }
    for (const name of ['OIDC_ISSUER', 'OIDC_JWKS_URL', 'S3_BUCKET', 'SMTP_URL', 'METRICS_TOKEN']) delete env[name]
    instances.push(...await startServers(['A', 'B'], env))
    for (const i of instances) {
      const ready = await fetch(`http://127.0.0.1:${i.port}/ready`)
      assert.equal(ready.status, 200, `${i.name} /ready`)
      assert.equal((await fetch(`http://127.0.0.1:${i.port}/health`)).status, 200, `${i.name} /health`)
    }
    const byLogin = await superDb?.query<{ login: string; n: number }>(
      'select usename as login, count(*)::int as n from pg_stat_activity where datname = $1 group by usename',
      [names.collab]
    )
    const connected = Object.fromEntries((byLogin?.rows ?? []).map(r => [r.login, r.n]))
    assert.equal(
      connected[names.collab_owner ?? ''],
      undefined,
      `no connection as the owner: ${JSON.stringify(connected)}`
    )
    assert.ok(
      (connected[names.collab_worker ?? ''] ?? 0) > 0,
      `the workers' login is connected: ${JSON.stringify(connected)}`
    )
  })

  const tokenFor = async (sub: string, tenant: string): Promise<Record<string, string>> => ({
    authorization:
      `Bearer ${await signDevToken(await loadOrCreateDevKeys(dataDir), { sub, tenant, roles: ['member'] })}`
  })
  const call = async (
    i: ServerProcess | undefined,
    method: string,
    url: string,
    headers: Record<string, string>,
    body?: unknown
  ): Promise<Response> => {
    assert.ok(i !== undefined, 'the instances started')
    return await fetch(`http://127.0.0.1:${i.port}${url}`, {
      method,
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
  }

  void it('shares one rate-limit bucket per caller: requests alternated between A and B drain it once', async () => {
    const auth = await tokenFor('limited', `tenant-rl-${suffix}`)
    const started = Date.now()
    const answers: Array<{ instance: string, status: number }> = []
    for (let n = 0; n < CAPACITY + 20; n++) {
      const i = instances[n % 2]
      const res = await call(i, 'GET', '/api/v1/contacts', auth)
      await res.arrayBuffer()
      if (res.status === 429) assert.ok(res.headers.get('retry-after') !== null, 'a 429 carries Retry-After')
      answers.push({ instance: i?.name ?? '', status: res.status })
    }
    const seconds = (Date.now() - started) / 1000
    const ok = answers.filter(a => a.status === 200).length
    assert.deepEqual([...new Set(answers.map(a => a.status))].sort(), [200, 429])
    // one bucket: the capacity plus the refill (1/s) over the run; a bucket per instance would have passed all 60
    assert.ok(
      ok >= CAPACITY && ok <= CAPACITY + Math.ceil(seconds) + 1,
      `${ok} of ${answers.length} passed in ${seconds.toFixed(1)} s`
    )
    for (const name of ['A', 'B']) {
      assert.ok(
        answers.some(a => a.instance === name && a.status === 429),
        `${name} answered 429`
      )
    }
    assert.equal(
      answers.slice(0, CAPACITY).filter(a => a.status !== 200).length,
      0,
      'the first CAPACITY requests passed'
    )
  })

  void it("shares Idempotency-Key answers: a repeat sent to B replays A's answer, " +
    'and the contact is created once', async () => {
    const tenant = `tenant-idem-${suffix}`
    const auth = { ...(await tokenFor('writer', tenant)), 'idempotency-key': `key-${suffix}` }
    const body = { first_name: 'Ada', email: `ada-${suffix}@example.test` }
    const first = await call(instances[0], 'POST', '/api/v1/contacts', auth, body)
    assert.equal(first.status, 201, await first.clone().text())
    const repeat = await call(instances[1], 'POST', '/api/v1/contacts', auth, body)
    assert.equal(repeat.status, 201, await repeat.clone().text())
    assert.equal(repeat.headers.get('idempotent-replayed'), 'true')
    assert.equal(((await repeat.json()) as { id: string }).id, ((await first.json()) as { id: string }).id)
    const rows = await superDb?.query('select id from contacts where tenant_id = $1', [tenant])
    assert.equal(rows?.rowCount, 1)
  })

  void it('shares the job queue: executions requested through A run once each across both instances', async () => {
    const tenant = `tenant-jobs-${suffix}`
    const auth = await tokenFor('planner', tenant)
    const event = await call(instances[0], 'POST', '/api/v1/events', auth, { title: 'Deployed', visibility: 40 })
    assert.equal(event.status, 201, await event.clone().text())
    const eventId = (await event.json() as { id: number }).id
    const rule = await call(instances[0], 'POST', '/api/v1/automation/rules', auth, {
      name: 'log',
      scope: 'EVENT',
      scope_id: String(eventId),
      schedule: { event_type: 'schedule.cron', cron_expression: '0 0 1 1 *' },
      actions: [{ type: 'activity', message: `ran-${suffix}` }]
    })
    assert.equal(rule.status, 201, await rule.clone().text())
    const ruleId = (await rule.json() as { id: string }).id
    const RUNS = 4
    for (let n = 0; n < RUNS; n++) {
      const run = await call(instances[0], 'POST', `/api/v1/automation/rules/${ruleId}/execute`, auth, {})
      // on a refusal, what both servers logged (the database error behind a 409 is logged there, not answered)
      assert.equal(
        run.status,
        202,
        `${await run.clone().text()}\n${instances.map(i => `${i.name}: ${i.output().slice(-4000)}`).join('\n')}`
      )
    }
    // the workers of both instances poll one queue; wait for every execution to finish
    let rows: Array<{ status: string, attempts: number }> = []
    for (let waited = 0; waited < 90_000; waited += 500) {
      rows =
        (
          await superDb?.query<{ status: string; attempts: number }>(
            'select status, attempts from automation_executions where tenant_id = $1 and rule_id = $2',
            [tenant, ruleId]
          )
        )?.rows ?? []
      if (rows.length === RUNS && rows.every(r => r.status !== 'queued' && r.status !== 'running')) break
      await sleep(500)
    }
    assert.deepEqual(rows.map(r => [r.status, r.attempts]), Array.from({ length: RUNS }, () => ['succeeded', 1]))
    const activity = await call(instances[1], 'GET', `/api/v1/events/${eventId}/activity`, auth)
    assert.equal(activity.status, 200)
    const text = await activity.text()
    assert.equal(text.split(`ran-${suffix}`).length - 1, RUNS, `one activity row per execution: ${text.slice(0, 2000)}`)
  })

  void it('stops both instances on SIGTERM, each exiting 0', async () => {
    assert.equal(instances.length, 2)
    const codes = await Promise.all(instances.map(async i => await i.stop()))
    assert.deepEqual(codes, [0, 0], instances.map(i => `${i.name}: ${i.output().slice(-1500)}`).join('\n'))
  })
})

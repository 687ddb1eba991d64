/**
 * Outbound webhooks under a write load (docs/integrations.md, "Outbound webhooks"): how many deliveries per second
 * reach a local receiver, how long after the write each arrives, and whether deliveries slow the writes causing them.
 *
 * The scenario starts a service of its own (dist/server.js as run.ts starts ours, but WORKERS=true so that the webhook
 * worker runs in the process that serves the writes, and AUTOMATION_WEBHOOK_ALLOW=127.0.0.1 so that an http loopback
 * URL may be subscribed), with a DATA_DIR of its own (its dev key signs the scenario's tokens), on the bench database.
 * A receiver (node:http on 127.0.0.1, in this process) verifies every delivery with `standardwebhooks` and records
 * its arrival, its `webhook-id`, and its lag: arrival minus the payload's `timestamp`, which is the outbox row's
 * `created_at`, i.e. `now()` of the transaction of the write that caused the event (the database's clock; same
 * machine). Not `webhook-timestamp`: that is the attempt's time, in whole seconds. The lag from the write's answer
 * (the moment the client saw the 2xx) is reported beside it.
 *
 * The write load, in the largest tenant by 20 of its members: contacts created and each then patched (one
 * `contact.created` and one `contact.updated` event per pair), 300 writes at scale 1 (`--scale` scales it) paced at
 * 10 writes/s by 10 clients, so that the writes run for 30 s while the worker delivers: 20 deliveries/s with two
 * subscriptions, under what one worker sends (a round every 2 s of at most 50 deliveries). BENCH_WEBHOOK_WRITES,
 * BENCH_WEBHOOK_RATE (writes/s; 0: as fast as the clients get answers, a burst that shows the worker's ceiling and
 * the backlog's lag) and BENCH_WEBHOOK_CONNECTIONS change it. After a warm-up of 40 writes the load runs twice on
 * the same service: first without any subscription (the baseline), then with BENCH_WEBHOOK_SUBSCRIPTIONS (default 2)
 * subscriptions to both event types, created by a tenant admin through `POST /api/v1/webhooks`. The write latencies
 * of the two loads are reported side by side. Between the two, the dispatcher first walks the tenant's
 * earlier outbox rows (those of the warm-up and the baseline: older than the subscriptions, so not delivered); the
 * second load starts once it has seen them all, and the time that took is reported. The scenario then waits until
 * every expected delivery (subscriptions × events of the second load) arrived, BENCH_WEBHOOK_TIMEOUT_S at most
 * (default 120 s, more for large loads: the scenario fails naming what is missing), and 5 s more for late duplicates.
 *
 * Opt-in: only with `--only webhooks`. PostgreSQL and Citus (the scenario starts a service of its own on the bench
 * database; an embedded PGlite belongs to the one process that opened it). Its contacts are dated now and its outbox
 * rows are past the watermark (removed before the next run, run.ts removeRunWrites); its subscriptions, their delivery
 * log and the dispatcher's cursor of the tenant are deleted at its end (and at its start, left by a run that died).
 *
 *   npm run bench -- --db pg --only webhooks
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { Webhook } from 'standardwebhooks'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { measuredRun, type ExportEnv, type ExportRun } from './export.ts'
import { freePort } from './load.ts'
import { ADMINS_FROM } from './scenarios.ts'
import { BIG_TENANT, ORG, userId } from './seed.ts'
import { pgRunner, type SqlRunner } from './sql-runner.ts'

export interface WebhookEnv extends ExportEnv {
  /** the bench's `--scale` of this run: the write load grows with it */
  scale: number
}

export interface WebhookScenario {
  name: string
  title: string
  run: (env: WebhookEnv) => Promise<ExportRun[]>
}

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const TENANT = BIG_TENANT
const WRITERS = 20
const WARMUP_WRITES = 40
const CONNECTIONS = Number(process.env.BENCH_WEBHOOK_CONNECTIONS ?? 10)
const SUBSCRIPTIONS = Number(process.env.BENCH_WEBHOOK_SUBSCRIPTIONS ?? 2)
/** writes per second of each load; 0: as fast as the service answers CONNECTIONS clients */
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 10)
const EVENT_TYPES = ['contact.created', 'contact.updated']
const DESCRIPTION = 'bench: webhooks scenario'
/** after the last expected delivery: long enough for two more worker rounds (2 s apart), to see late duplicates */
const LINGER_MS = 5000

/** Writes of one load: an even number (pairs of create and patch), 300 at scale 1. */
function writesFor (scale: number): number {
  const asked = process.env.BENCH_WEBHOOK_WRITES !== undefined ? Number(process.env.BENCH_WEBHOOK_WRITES) : 300 * scale
  return Math.max(2, 2 * Math.round(asked / 2))
}

const sleep = async (ms: number) => await new Promise(resolve => setTimeout(resolve, ms))
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? 0
const ascending = (xs: number[]): number[] => [...xs].sort((a, b) => a - b)

interface Service {
  url: string
  pid: number
  /** the service's log lines of level warn and above since the last call, counted by text */
  warnings: () => Array<{ text: string, count: number }>
  stop: () => Promise<void>
}

/**
 * The service as run.ts starts ours (the bundle, NODE_ENV=production, LOG_LEVEL=warn, rate limits out of the way),
 * but with its workers on and 127.0.0.1 allowed as a webhook destination; its whole log in DATA_DIR/service.log.
 */
async function startService (databaseUrl: string, dataDir: string): Promise<Service> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const child = spawn(process.execPath, ['--max-old-space-size=512', path.join(ROOT, 'dist', 'server.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: url,
      WORKERS: 'true',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_CAPACITY: '10000000',
      RATE_LIMIT_REFILL_PER_SEC: '1000000',
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  // however the bench ends (run.ts exits on Ctrl-C and on errors), this process goes with it
  const kill = () => { if (child.exitCode === null) child.kill('SIGKILL') }
  process.once('exit', kill)
  const logFile = path.join(dataDir, 'service.log')
  const tail: string[] = []
  let partial = ''
  let counts = new Map<string, number>()
  const onLog = (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n')
    partial = lines.pop() ?? ''
    if (lines.length === 0) return
    fs.appendFileSync(logFile, `${lines.join('\n')}\n`)
    for (const line of lines) {
      tail.push(line)
      if (tail.length > 50) tail.shift()
      let entry: { level?: number, msg?: string, err?: { message?: string } }
      try { entry = JSON.parse(line) as typeof entry } catch { continue }
      if ((entry.level ?? 0) < 40) continue
      const text = `${entry.msg ?? ''}${entry.err?.message !== undefined ? `: ${entry.err.message}` : ''}`
      counts.set(text, (counts.get(text) ?? 0) + 1)
    }
  }
  child.stdout.on('data', onLog)
  child.stderr.on('data', onLog)
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise(resolve => child.once('exit', resolve))
      child.kill('SIGTERM')
      await Promise.race([exited, sleep(15_000)])
      kill()
    }
    process.removeListener('exit', kill)
  }
  const deadline = Date.now() + 120_000
  for (;;) {
    if (child.exitCode !== null) {
      await stop()
      throw new Error(`webhooks: the service exited (${child.exitCode}): ${tail.join('\n').slice(-2000)}`)
    }
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) })
      if (res.status === 200) break
    } catch {}
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`webhooks: no answer from the service within 120 s: ${tail.join('\n').slice(-2000)}`)
    }
    await sleep(20)
  }
  return {
    url,
    pid: child.pid ?? 0,
    stop,
    warnings: () => {
      const out = [...counts].map(([text, count]) => ({ text, count })).sort((a, b) => b.count - a.count)
      counts = new Map()
      return out
    }
  }
}

/** One verified delivery as the receiver saw it. */
interface Arrival {
  /** the subscription (index) whose URL it came to */
  sub: number
  msgId: string
  /** `<type>|<contact id>`: the write that caused it */
  event: string
  /** the payload's timestamp: when the event was written (ms since the epoch) */
  eventAt: number
  arrivedAt: number
}

interface Receiver {
  url: (sub: number) => string
  arrivals: Arrival[]
  /** deliveries that did not verify (answered 400), with the reason */
  rejected: string[]
  /** the signing secret of each subscription, by index: set once the subscription is created */
  secrets: string[]
  close: () => Promise<void>
}

/** The local receiver: POST /s<i> is subscription i's; each body verified with its secret, answered 204. */
async function startReceiver (): Promise<Receiver> {
  const arrivals: Arrival[] = []
  const rejected: string[] = []
  const secrets: string[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const arrivedAt = Date.now()
      const sub = Number(/^\/s(\d+)$/.exec(req.url ?? '')?.[1] ?? -1)
      const secret = secrets[sub]
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
      try {
        if (secret === undefined) throw new Error(`no subscription for ${req.url ?? ''}`)
        const payload = new Webhook(secret).verify(Buffer.concat(chunks), headers) as {
          type: string, timestamp: string, data: { contact_id?: string }
        }
        arrivals.push({
          sub,
          msgId: headers['webhook-id'] ?? '',
          event: `${payload.type}|${payload.data.contact_id ?? '?'}`,
          eventAt: Date.parse(payload.timestamp),
          arrivedAt
        })
        res.writeHead(204).end()
      } catch (err) {
        rejected.push(`${req.url ?? ''}: ${(err as Error).message}`)
        res.writeHead(400).end()
      }
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  return {
    url: sub => `http://127.0.0.1:${port}/s${sub}`,
    arrivals,
    rejected,
    secrets,
    close: async () => {
      server.closeAllConnections()
      await new Promise(resolve => server.close(resolve))
    }
  }
}

interface WriteLoad {
  /** each write's latency, ms */
  latencies: number[]
  /** Date.now() when the first write was sent */
  firstAt: number
  /** Date.now() of each write's answer, by `<event type>|<contact id>` */
  answered: Map<string, number>
}

/**
 * `writes` writes by `connections` clients: contact k created by member k % WRITERS, then patched by the same member;
 * at `RATE` writes/s when set. Any answer other than 201 / 200 stops the bench.
 */
async function writeLoad (url: string, members: string[], writes: number, tag: string): Promise<WriteLoad> {
  const latencies: number[] = []
  const answered = new Map<string, number>()
  const pairs = writes / 2
  const started = performance.now()
  const firstAt = Date.now()
  let next = 0
  const send = async (token: string, method: string, p: string, body: unknown, expect: number) => {
    const s0 = performance.now()
    const res = await fetch(`${url}${p}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body)
    })
    const text = await res.text()
    latencies.push(performance.now() - s0)
    if (res.status !== expect) throw new Error(`webhooks: ${method} ${p} answered ${res.status}: ${text.slice(0, 500)}`)
    return JSON.parse(text) as { id: string }
  }
  const client = async () => {
    for (let k = next++; k < pairs; k = next++) {
      if (RATE > 0) {
        const due = (2 * k * 1000) / RATE - (performance.now() - started)
        if (due > 0) await sleep(due)
      }
      const token = members[k % members.length] as string
      const created = await send(token, 'POST', '/api/v1/contacts', {
        first_name: 'Hook',
        last_name: `${tag} ${k}`,
        email: `hook.${tag}.${k}@webhooks.bench.example`,
        company: 'Bench Ltd'
      }, 201)
      answered.set(`contact.created|${created.id}`, Date.now())
      await send(token, 'PATCH', `/api/v1/contacts/${created.id}`, { job_title: 'Updated' }, 200)
      answered.set(`contact.updated|${created.id}`, Date.now())
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONNECTIONS, pairs) }, client))
  return { latencies, firstAt, answered }
}

/** Outbox rows of the tenant that the webhook dispatcher has not seen yet (above its floor, not in its seen set). */
async function unseen (db: SqlRunner): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `select count(*)::int as n from outbox o
     where o.tenant_id = $1 and o.id > coalesce((select floor_id from webhook_cursors c where c.tenant_id = $1), 0)
       and not exists (select 1 from webhook_outbox_seen s where s.tenant_id = o.tenant_id and s.outbox_id = o.id)`,
    [TENANT]
  )
  return row?.n ?? 0
}

/** The scenario's subscriptions (their deliveries go with them), and the tenant's cursor when no other is left. */
async function forget (db: SqlRunner): Promise<void> {
  await db.query('delete from webhook_subscriptions where tenant_id = $1 and description = $2', [TENANT, DESCRIPTION])
  for (const table of ['webhook_outbox_seen', 'webhook_cursors']) {
    await db.query(
      `delete from ${table} where tenant_id = $1
       and not exists (select 1 from webhook_subscriptions where tenant_id = $1)`,
      [TENANT]
    )
  }
}

/** The delivery rows of the scenario's subscriptions, by status, for the report and for a timeout's message. */
async function deliveryRows (db: SqlRunner): Promise<string> {
  const rows = await db.query<{ status: string, n: number, retried: number, error: string | null }>(
    `select d.status, count(*)::int as n, count(*) filter (where d.attempts > 1)::int as retried,
            max(d.last_error) as error
     from webhook_deliveries d join webhook_subscriptions s on s.tenant_id = d.tenant_id and s.id = d.subscription_id
     where d.tenant_id = $1 and s.description = $2
     group by d.status order by d.status`,
    [TENANT, DESCRIPTION]
  )
  if (rows.length === 0) return 'no delivery rows'
  return rows.map(r => `${r.status} ${r.n} (${r.retried} retried${r.error !== null ? `; an error: ${r.error}` : ''})`)
    .join(', ')
}

const ms = (x: number) => `${x.toFixed(1)} ms`
const s2 = (x: number) => `${(x / 1000).toFixed(2)} s`

function latencyText (xs: number[]): string {
  const sorted = ascending(xs)
  return `p50 ${ms(percentile(sorted, 0.5))}, p95 ${ms(percentile(sorted, 0.95))}, max ${ms(sorted.at(-1) ?? 0)}`
}

export const WEBHOOK_SCENARIOS: WebhookScenario[] = [
  {
    name: 'webhooks',
    title: 'Outbound webhooks: deliveries to a local receiver under a contact write load',
    async run (env) {
      if (env.kind === 'pglite' || env.databaseUrl === undefined) {
        env.log('webhooks: not measured: PostgreSQL and Citus only')
        return []
      }
      const writes = writesFor(env.scale)
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-webhooks-'))
      const keys = await loadOrCreateDevKeys(dataDir)
      const sign = async (user: string, roles: string[]) => await signDevToken(keys, {
        sub: user, tenant: TENANT, roles, orgId: ORG, email: `${user}@${TENANT}.example`, ttl: 6 * 3600
      })
      const admin = await sign(userId(ADMINS_FROM), ['admin'])
      const members: string[] = []
      for (let u = 1; u <= WRITERS; u++) members.push(await sign(userId(u), ['member']))
      const db = pgRunner(env.databaseUrl, 2)
      const receiver = await startReceiver()
      let service: Service | undefined
      let kept = true
      try {
        await forget(db)
        const [others] = await db.query<{ n: number }>(
          'select count(*)::int as n from webhook_subscriptions where enabled'
        )
        if ((others?.n ?? 0) > 0) {
          env.log(`webhooks: note: ${others?.n ?? 0} other enabled subscriptions in the database`)
        }
        service = await startService(env.databaseUrl, dataDir)
        const svc = service
        const run = Date.now().toString(36)
        const pace = RATE > 0 ? `paced at ${RATE} writes/s` : 'unpaced'
        const load =
          `${writes} writes (${writes / 2} contacts created, each then patched; ${CONNECTIONS} clients, ${pace})`
        env.log(`${env.kind}: webhooks: service pid ${svc.pid} (WORKERS=true); warm-up of ${WARMUP_WRITES} writes`)
        await writeLoad(svc.url, members, WARMUP_WRITES, `${run}w`)

        // 1. the baseline: the same service and workers, no subscription anywhere in the tenant
        const base = await measuredRun(svc.pid, 'baseline', async () =>
          await writeLoad(svc.url, members, writes, `${run}a`), () => ({ rows: writes, bytes: 0 }))
        const baseText = latencyText(base.result.latencies)
        env.log(`${env.kind}: webhooks: without subscriptions: ${writes} writes in ${s2(base.run.ms)}, ${baseText}`)

        // 2. the subscriptions, then the dispatcher's walk over the tenant's earlier outbox rows
        const history = await unseen(db)
        const subscribedAt = performance.now()
        for (let i = 0; i < SUBSCRIPTIONS; i++) {
          const res = await fetch(`${svc.url}/api/v1/webhooks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
            body: JSON.stringify({ url: receiver.url(i), event_types: EVENT_TYPES, description: DESCRIPTION })
          })
          const body = await res.text()
          if (res.status !== 201) throw new Error(`webhooks: POST /api/v1/webhooks answered ${res.status}: ${body}`)
          receiver.secrets[i] = (JSON.parse(body) as { secret: string }).secret
        }
        for (;;) {
          const left = await unseen(db)
          if (left === 0) break
          if (performance.now() - subscribedAt > 300_000) {
            throw new Error(`webhooks: the dispatcher still had ${left} of the tenant's ${history} earlier ` +
              'outbox rows ' +
              'to walk 300 s after the subscriptions were created')
          }
          await sleep(100)
        }
        const walkMs = performance.now() - subscribedAt
        env.log(`${env.kind}: webhooks: ${SUBSCRIPTIONS} subscriptions; the dispatcher walked the tenant's ` +
          `${history} earlier outbox rows in ${s2(walkMs)}`)
        if (receiver.arrivals.length > 0) {
          throw new Error(`webhooks: ${receiver.arrivals.length} deliveries of events older than the subscriptions`)
        }

        // 3. the same load with the subscriptions, then every delivery awaited
        const subscribed = await measuredRun(svc.pid, 'subscribed', async () =>
          await writeLoad(svc.url, members, writes, `${run}b`), () => ({ rows: writes, bytes: 0 }))
        const loaded = subscribed.result
        const subText = latencyText(loaded.latencies)
        env.log(`${env.kind}: webhooks: with ${SUBSCRIPTIONS} subscriptions: ${writes} writes in ` +
          `${s2(subscribed.run.ms)}, ${subText}`)
        const expected = new Set<string>()
        for (let i = 0; i < SUBSCRIPTIONS; i++) for (const e of loaded.answered.keys()) expected.add(`${i}|${e}`)
        const timeoutMs = 1000 * Number(process.env.BENCH_WEBHOOK_TIMEOUT_S ?? Math.max(120, expected.size / 5))
        const arrivedOf = () => new Set(receiver.arrivals.map(a => `${a.sub}|${a.event}`).filter(k => expected.has(k)))
        const drain = await measuredRun(svc.pid, 'deliveries', async () => {
          const since = performance.now()
          let reported = since
          for (;;) {
            const got = arrivedOf().size
            if (got === expected.size) return got
            if (performance.now() - since > timeoutMs) {
              const missing = [...expected].filter(k => !arrivedOf().has(k))
              throw new Error(`webhooks: ${got} of ${expected.size} deliveries arrived within ${s2(timeoutMs)} after ` +
                'the last write (BENCH_WEBHOOK_TIMEOUT_S to wait longer); ' +
                `missing e.g. ${missing.slice(0, 3).join(', ')}; ` +
                `delivery rows: ${await deliveryRows(db)}; receiver refused ${receiver.rejected.length}` +
                `${receiver.rejected[0] !== undefined ? ` (${receiver.rejected[0]})` : ''}`)
            }
            if (performance.now() - reported > 10_000) {
              reported = performance.now()
              env.log(`${env.kind}: webhooks: ${got} of ${expected.size} deliveries arrived`)
            }
            await sleep(50)
          }
        }, () => ({ rows: expected.size, bytes: 0 }))
        await sleep(LINGER_MS)

        // 4. the figures
        const first = new Map<string, Arrival>()
        const ids = new Map<string, number>()
        for (const a of receiver.arrivals) {
          ids.set(a.msgId, (ids.get(a.msgId) ?? 0) + 1)
          const key = `${a.sub}|${a.event}`
          if (expected.has(key) && !first.has(key)) first.set(key, a)
        }
        const unexpected = receiver.arrivals.filter(a => !expected.has(`${a.sub}|${a.event}`)).length
        const duplicates = receiver.arrivals.length - ids.size
        // the same event to the same subscription under two webhook-ids: two delivery rows for one event
        const expectedIds =
          new Set(receiver.arrivals.filter(a => expected.has(`${a.sub}|${a.event}`)).map(a => a.msgId))
        const twice = expectedIds.size - first.size
        const delivered = [...first.values()]
        const lastAt = Math.max(...delivered.map(a => a.arrivedAt))
        const spanMs = lastAt - loaded.firstAt
        const lag = ascending(delivered.map(a => a.arrivedAt - a.eventAt))
        const lagFromAnswer = ascending(delivered.map(a => a.arrivedAt - (loaded.answered.get(a.event) ?? a.eventAt)))
        // the worker posts in rounds: arrivals more than 0.5 s apart belong to different rounds
        const times = ascending(receiver.arrivals.map(a => a.arrivedAt))
        const bursts: number[] = []
        times.forEach((t, i) => {
          if (i === 0 || t - (times[i - 1] ?? t) > 500) bursts.push(0)
          bursts[bursts.length - 1] = (bursts.at(-1) ?? 0) + 1
        })
        const rows = await deliveryRows(db)
        const lagText = `p50 ${s2(percentile(lag, 0.5))}, p95 ${s2(percentile(lag, 0.95))}, max ${s2(lag.at(-1) ?? 0)}`
        const answerText = `p50 ${s2(percentile(lagFromAnswer, 0.5))}, p95 ${s2(percentile(lagFromAnswer, 0.95))}`
        const runs: ExportRun[] = [
          {
            ...base.run,
            label: `baseline, the load without any subscription: ${load}; write latency ${baseText}`
          },
          {
            ...subscribed.run,
            label: `the same load with ${SUBSCRIPTIONS} subscriptions to ${EVENT_TYPES.join(' and ')}: ` +
              `write latency ${subText} (baseline ${baseText})`
          },
          {
            ...drain.run,
            ms: spanMs,
            rowsPerSecond: delivered.length / (spanMs / 1000),
            label: `deliveries (${SUBSCRIPTIONS} subscriptions × ${writes} events, ` +
              'each verified with standardwebhooks), ' +
              `counted from the first write of the load to the last delivery: ${delivered.length} delivered; lag ` +
              '(arrival minus the payload timestamp, the created_at of the outbox row: when the transaction of the ' +
              `write began) ${lagText}; from the write's answer ${answerText}; ` +
              `${receiver.arrivals.length} POSTs received, ` +
              `${duplicates} duplicates (a webhook-id again), ${twice} events delivered twice under two webhook-ids, ` +
              `${unexpected} unexpected, ${receiver.rejected.length} refused (not verified); in ${bursts.length} ` +
              `bursts (> 0.5 s apart), at most ${Math.max(...bursts)} per burst; delivery rows: ${rows}; ` +
              `before the load the dispatcher walked the tenant's ${history} earlier outbox rows in ${s2(walkMs)}. ` +
              'Service RSS while the deliveries drained after the load'
          }
        ]
        env.log(`${env.kind}: webhooks: ${delivered.length} deliveries in ${s2(spanMs)} from the first write, ` +
          `${(delivered.length / (spanMs / 1000)).toFixed(1)}/s; lag ${lagText}; from the answer ${answerText}; ` +
          `${duplicates} duplicates; ${bursts.length} bursts, at most ${Math.max(...bursts)} per burst; rows: ${rows}`)
        if (receiver.rejected.length > 0) {
          throw new Error(
            `webhooks: ${receiver.rejected.length} deliveries did not verify: ${receiver.rejected[0] ?? ''}`)
        }
        kept = false
        return runs
      } finally {
        for (const w of service?.warnings() ?? []) env.log(`${env.kind}: webhooks: service log: ${w.count} x ${w.text}`)
        await service?.stop()
        await receiver.close()
        await forget(db).catch((err: unknown) => { env.log(`webhooks: cleanup failed: ${(err as Error).message}`) })
        await db.close()
        if (kept) env.log(`webhooks: the service's data directory and log are kept in ${dataDir}`)
        else fs.rmSync(dataDir, { recursive: true, force: true })
      }
    }
  }
]

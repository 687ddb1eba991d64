/**
 * Metrics in the Prometheus text format at `GET /metrics` (prom-client), for a scraper that sends
 * `Authorization: Bearer <METRICS_TOKEN>`; without METRICS_TOKEN the route does not exist (404)
 * and no request is measured. Decisions and the list of metrics: docs/deployment.md, "Metrics".
 *
 * Labels are bounded: a route is its template (`/api/v1/events/:id`, or `unmatched`), never the
 * URL; no tenant, user or other id is ever a label value.
 *
 * Two registries. The process's (`processRegistry`): Node's default metrics and the counters that
 * code deep in the modules increments with one line (rate-limit refusals, deliveries, executions);
 * they count for the whole process, which in production serves one app. The app's (made by
 * `registerMetrics`): the request counter and latency histogram, and gauges read at scrape time
 * from the app's database (outbox lag, job queue depth, pending webhook deliveries), cached for a few seconds so
 * that frequent scrapes cost a few indexed queries.
 */
import crypto from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql, type Kysely } from 'kysely'
import client from 'prom-client'
import { poolStatsOf, type Database } from './db/database.ts'
import { transactionRetries, withSystem } from './db/tenant.ts'
import { error401Unauthorized, ErrorModel } from './http/errors.ts'
import type { DeliveryResult } from './notifications/notifications.ts'

/** Metrics of the whole process: default Node metrics and the counters below. */
export const processRegistry = new client.Registry()

function counter<L extends string> (
  name: string, help: string, label: L, values: readonly string[]
): client.Counter<L> {
  const c = new client.Counter<L>({ name, help, labelNames: [label], registers: [processRegistry] })
  // every known value from the start at 0, so that rates and alerts see the series before the first event
  for (const v of values) c.inc({ [label]: v } as Partial<Record<L, string>>, 0)
  return c
}

/** Requests refused 429, by bucket: `caller` (tenant + user) or `anonymous` (client address). */
export const rateLimitRefusals = counter(
  'rate_limit_refusals_total',
  'Requests refused 429 by the rate limit, by bucket (caller: tenant + user; anonymous: client address)',
  'bucket',
  ['caller', 'anonymous']
)

/**
 * Serialization failures (40001) and deadlocks (40P01) that reached a request: `withTenant`
 * retries them up to three attempts, so these are the ones left after its retries (answered 409).
 */
export const transactionConflicts = counter(
  'db_transaction_conflicts_total',
  'Serialization failures (40001) and deadlocks (40P01) that failed a request after the transaction retries',
  'code',
  ['40001', '40P01']
)

/** Notification delivery attempts by outcome (the delivery loop, src/platform/notifications/delivery.ts). */
export const notificationDeliveries = counter(
  'notification_deliveries_total',
  'Notification delivery attempts by outcome (sent, retry: failed and due again, failed: given up, undeliverable: ' +
  'no usable recipient)',
  'outcome',
  ['sent', 'retry', 'failed', 'undeliverable']
)

/** Adds one delivery pass's counts. */
export function countNotificationDeliveries (r: DeliveryResult): void {
  notificationDeliveries.inc({ outcome: 'sent' }, r.sent)
  notificationDeliveries.inc({ outcome: 'retry' }, r.retried)
  notificationDeliveries.inc({ outcome: 'failed' }, r.failed)
  notificationDeliveries.inc({ outcome: 'undeliverable' }, r.undeliverable)
}

/** Calls of the automation `webhook` action by outcome. */
export const webhookDeliveries = counter(
  'automation_webhook_deliveries_total',
  'Automation webhook calls by outcome (delivered: 2xx; failed: other status, network error or timeout; refused: ' +
  'destination not allowed)',
  'outcome',
  ['delivered', 'failed', 'refused']
)

/**
 * Attempts of webhook subscriptions' deliveries by outcome (src/modules/webhooks/webhooks.delivery.ts); the
 * automation action's calls are `automation_webhook_deliveries_total`.
 */
export const subscriptionDeliveries = counter(
  'webhook_deliveries_total',
  'Attempts of webhook subscription deliveries by outcome (delivered: 2xx; retry: failed, another attempt due; ' +
  'failed: failed, the last attempt; refused: destination not allowed, nothing sent)',
  'outcome',
  ['delivered', 'retry', 'failed', 'refused']
)

/** How long the attempts of subscription deliveries took, whatever their outcome. */
export const subscriptionAttemptSeconds = new client.Histogram({
  name: 'webhook_delivery_attempt_duration_seconds',
  help: 'Time of an attempt of a webhook subscription delivery, from the request to the answer or the failure',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processRegistry]
})

/** Automation execution attempts as they finish, by status. */
export const automationExecutions = counter(
  'automation_executions_total',
  'Automation execution attempts as they finish, by status (retry: the attempt failed and another is due)',
  'status',
  ['succeeded', 'skipped', 'failed', 'retry']
)

/** Identity-provider webhook deliveries by outcome. */
export const idpWebhookDeliveries = counter(
  'idp_webhook_deliveries_total',
  'Identity-provider webhook deliveries by outcome (applied, stale, ignored, duplicate; refused: ' +
  'answered 4xx or 5xx, e.g. a bad signature)',
  'outcome',
  ['applied', 'stale', 'ignored', 'duplicate', 'refused']
)

/**
 * The identity-provider webhook's route: a delivery it refuses (bad signature, body, no secret) never reaches
 * applyDelivery.
 */
const IDP_WEBHOOK_ROUTE = '/api/v1/integrations/idp/webhook'

let defaultMetrics = false

/** prom-client's default gauges whose names end in `_total` (left out: docs/deployment.md, "Metrics"). */
const DEFAULT_GAUGES_NAMED_TOTAL = [
  'nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'
]

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** Seconds for which the database gauges are served from the last reading. */
export const BACKLOG_CACHE_MS = 5_000

export interface Backlog {
  /** age in seconds of the oldest domain event not yet dispatched (0 when none) */
  outboxLagSec: number
  /** jobs waiting (created or due for a retry), by queue */
  queues: Array<{ name: string, depth: number }>
}

/**
 * Reads the backlog on the worker login: the oldest unprocessed outbox row by the partial index
 * `outbox_unprocessed`, and pg-boss's waiting jobs per queue by its partial index `job_i5`.
 */
export async function readBacklog (db: Kysely<Database>): Promise<Backlog> {
  return await withSystem(db, async (trx) => {
    const lag = await sql<{ age: number | null }>`
      select extract(epoch from now() - created_at)::float8 as age
        from outbox where processed_at is null order by id limit 1`.execute(trx)
    const boss = await sql<{ t: string | null }>`select to_regclass('pgboss.queue')::text as t`.execute(trx)
    const queues = boss.rows[0]?.t === null || boss.rows[0]?.t === undefined
      ? []
      : (await sql<{ name: string, depth: number }>`
          select q.name, (select count(*) from pgboss.job j where j.name = q.name and j.state < 'active')::int as depth
            from pgboss.queue q order by q.name`.execute(trx)).rows
    return { outboxLagSec: Math.max(0, lag.rows[0]?.age ?? 0), queues }
  })
}

/** The pending deliveries of webhook subscriptions, of every tenant. */
export interface WebhookBacklog {
  /** no failed attempt yet: waiting for or in their first attempt */
  new: number
  /** at least one failed attempt (the last one recorded): waiting for or in a retry */
  failing: number
}

/**
 * Reads the pending webhook deliveries on the worker login, by the partial index of pending deliveries
 * (`webhook_deliveries_due`, migration 0025): the rows of the backlog only, never the delivery log.
 */
export async function readWebhookBacklog (db: Kysely<Database>): Promise<WebhookBacklog> {
  return await withSystem(db, async (trx) => {
    const { rows } = await sql<WebhookBacklog>`
      select (count(*) filter (where last_error is null))::int as new,
             (count(*) filter (where last_error is not null))::int as failing
        from webhook_deliveries where status = 'pending'`.execute(trx)
    return rows[0] ?? { new: 0, failing: 0 }
  })
}

/**
 * A reading of the database served for BACKLOG_CACHE_MS: frequent scrapes cost one reading. A failed reading is
 * logged and answers undefined (the gauges are left out of that scrape).
 */
function cachedReading<T> (read: () => Promise<T>, warn: (err: unknown) => void): () => Promise<T | undefined> {
  let reading: { at: number, value: Promise<T | undefined> } | undefined
  return async () => {
    if (reading === undefined || Date.now() - reading.at > BACKLOG_CACHE_MS) {
      reading = {
        at: Date.now(),
        value: read().catch((err: unknown) => {
          warn(err)
          return undefined
        })
      }
    }
    return await reading.value
  }
}

/** Whether an Authorization header carries the token (compared in constant time). */
export function tokenMatches (header: string | undefined, token: string): boolean {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '')
  const given = crypto.createHash('sha256').update(m?.[1] ?? '').digest()
  const expected = crypto.createHash('sha256').update(token).digest()
  // digests of equal length: the comparison takes the same time whatever was sent
  return crypto.timingSafeEqual(given, expected) && m !== null
}

export interface MetricsOptions {
  /** METRICS_TOKEN */
  token: string
  /** the request database; the gauges read through its system login (withSystem) */
  db: Kysely<Database>
  /** the worker login's database (the same as `db` with one login) */
  systemDb: Kysely<Database>
}

/**
 * Measures every request of the app and serves `GET /metrics`. Call at the root, once per app;
 * only when METRICS_TOKEN is set.
 */
export function registerMetrics (app: FastifyInstance, options: MetricsOptions): void {
  if (!defaultMetrics) {
    defaultMetrics = true
    client.collectDefaultMetrics({ register: processRegistry })
    // gauges named like counters, which Prometheus's linter (promtool check metrics) refuses; each is the sum of the
    // series by type beside it (`sum(nodejs_active_handles)`)
    for (const name of DEFAULT_GAUGES_NAMED_TOTAL) processRegistry.removeSingleMetric(name)
  }
  const registry = new client.Registry()
  const labelNames = ['method', 'route', 'status_code'] as const
  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template (unmatched: no route) and status',
    labelNames,
    registers: [registry]
  })
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to its answer, by method, route template and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry]
  })

  const backlog = cachedReading(async () => await readBacklog(options.db), err => {
    app.log.warn({ err }, 'metrics: reading the outbox and job backlog failed')
  })
  new client.Gauge({ // eslint-disable-line no-new
    name: 'outbox_lag_seconds',
    help: 'Age of the oldest domain event the automation dispatcher has not processed yet (0: none waiting)',
    registers: [registry],
    async collect () {
      const b = await backlog()
      if (b === undefined) this.reset()
      else this.set(b.outboxLagSec)
    }
  })
  new client.Gauge({ // eslint-disable-line no-new
    name: 'job_queue_depth',
    help: 'Jobs waiting in each pg-boss queue (created, or failed and due for a retry)',
    labelNames: ['queue'],
    registers: [registry],
    async collect () {
      const b = await backlog()
      this.reset()
      for (const q of b?.queues ?? []) this.set({ queue: q.name }, q.depth)
    }
  })
  const webhookBacklog = cachedReading(async () => await readWebhookBacklog(options.db), err => {
    app.log.warn({ err }, 'metrics: reading the pending webhook deliveries failed')
  })
  new client.Gauge({ // eslint-disable-line no-new
    name: 'webhook_deliveries_pending',
    help: 'Pending deliveries of webhook subscriptions, by state (new: no failed attempt yet; failing: at least one ' +
      'failed attempt, waiting for a retry)',
    labelNames: ['state'],
    registers: [registry],
    async collect () {
      const b = await webhookBacklog()
      this.reset()
      if (b === undefined) return
      this.set({ state: 'new' }, b.new)
      this.set({ state: 'failing' }, b.failing)
    }
  })

  // eslint-disable-next-line no-new
  new client.Gauge({
    name: 'db_pool_connections',
    help: 'Connections of each database pool (login: request, worker) by state: in use, idle, ' +
      'and requests waiting for one',
    labelNames: ['login', 'state'],
    registers: [registry],
    collect () {
      const logins =
        options.systemDb === options.db
          ? ([['request', options.db]] as const)
          : ([
              ['request', options.db],
              ['worker', options.systemDb]
            ] as const)
      for (const [login, db] of logins) {
        const p = poolStatsOf(db)
        this.set({ login, state: 'in_use' }, p.total - p.idle)
        this.set({ login, state: 'idle' }, p.idle)
        this.set({ login, state: 'waiting' }, p.waiting)
      }
    }
  })
  let retriesSeen = transactionRetries.count
  // eslint-disable-next-line no-new
  new client.Counter({
    name: 'db_transaction_retries_total',
    help:
      'Transactions run again after a serialization failure or a deadlock (withTenant retries up to three attempts)',
    registers: [registry],
    collect () {
      const now = transactionRetries.count
      if (now > retriesSeen) this.inc(now - retriesSeen)
      retriesSeen = now
    }
  })

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const labels = {
      method: METHODS.has(request.method) ? request.method : 'OTHER',
      route,
      status_code: String(reply.statusCode)
    }
    requests.inc(labels)
    duration.observe(labels, reply.elapsedTime / 1000)
    if (route === IDP_WEBHOOK_ROUTE && reply.statusCode >= 400) idpWebhookDeliveries.inc({ outcome: 'refused' })
  })
  app.addHook('onError', async (_request, _reply, err) => {
    const code = (err as { code?: unknown }).code
    if (code === '40001' || code === '40P01') transactionConflicts.inc({ code })
  })

  app.get('/metrics', {
    schema: { hide: true, response: { 401: ErrorModel } },
    // the route checks its own token: no tenant, no user
    config: { auth: 'none' }
  }, async (request, reply) => {
    if (!tokenMatches(request.headers.authorization, options.token)) {
      throw error401Unauthorized('a valid metrics token is required')
    }
    const text = `${await processRegistry.metrics()}${await registry.metrics()}`
    return await reply.type(registry.contentType).header('cache-control', 'no-store').send(text)
  })
}

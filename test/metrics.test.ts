/**
 * GET /metrics: a scrape after requests of every kind (404 unmatched and of a route, 401, 429 from
 * a small bucket, a failed notification, identity-provider deliveries), parsed with a Prometheus
 * text-format parser: the families and their labels, no label that names a URL, a tenant or a
 * user, and the token check (none or a wrong one: 401; no METRICS_TOKEN: 404).
 */
import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { databases, useTestApp, type TestApp } from './helpers/build-app.ts'
import { expectStatuses } from './helpers/requests.ts'
import { withTenant } from '../src/platform/db/tenant.ts'
import { queueNotification } from '../src/platform/notifications/notifications.ts'
import { startNotificationDelivery } from '../src/platform/notifications/delivery.ts'
import { createJobQueue } from '../src/modules/automation/automation.queue.ts'
import { idpEvent, idpWebhook } from '../src/modules/identity/identity.fixtures.ts'
import { readBacklog } from '../src/platform/metrics.ts'

interface Sample {
  labels?: Record<string, string>
  value?: string
  buckets?: Record<string, string>
  count?: string
  sum?: string
}
interface Family { name: string, help: string, type: string, metrics: Sample[] }
const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[]

const TOKEN = `metrics-${crypto.randomBytes(16).toString('hex')}`
const SECRET = 'metrics-test-webhook-secret'
// distinctive, so that a leak into the body is found by a plain search
const MARK = 'zqxleak'

function family (families: Family[], name: string): Family {
  const f = families.find(x => x.name === name)
  assert.ok(f !== undefined, `metric family ${name} missing`)
  return f
}

function value (families: Family[], name: string, labels: Record<string, string>): number {
  const s = family(families, name).metrics.find(m => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
  return s === undefined ? 0 : Number(s.value ?? s.count)
}

/**
 * One series of a histogram. The parser folds every series of a histogram into one when they have
 * labels besides `le`, so it is handed the lines of one series, those labels taken out.
 */
function series (text: string, name: string, labels: string): Sample {
  const lines = text
    .split('\n')
    .filter(l => l.startsWith(`${name}_`) && l.includes(labels))
    .map(l => l.replace(`,${labels}`, '').replace(`{${labels}}`, ''))
  assert.ok(lines.length > 0, `no series ${name}{${labels}}`)
  const [only] = parse(`# TYPE ${name} histogram\n${lines.join('\n')}\n`)
  assert.ok(only !== undefined && only.metrics.length === 1, `series ${name}{${labels}}`)
  return only.metrics[0] as Sample
}

async function scrape (t: TestApp): Promise<{ text: string, families: Family[] }> {
  const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(res.statusCode, 200, res.body)
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  return { text: res.body, families: parse(res.body) }
}

for (const kind of databases()) {
  describe(`${kind}: GET /metrics`, () => {
    const t = useTestApp(kind, {
      env: {
        METRICS_TOKEN: TOKEN,
        IDP_WEBHOOK_SECRET: SECRET,
        // a caller's bucket of 3: the fourth request is refused 429
        RATE_LIMIT_CAPACITY: '3',
        RATE_LIMIT_REFILL_PER_SEC: '1',
        RATE_LIMIT_ANON_CAPACITY: '1000000',
        RATE_LIMIT_ANON_REFILL_PER_SEC: '100000'
      }
    })

    it('refuses a scrape without the token or with a wrong one (401 ErrorModel)', async () => {
      for (const authorization of [
        undefined,
        'Bearer wrong-token-of-some-length',
        `Bearer ${TOKEN}x`,
        `Basic ${TOKEN}`,
        TOKEN
      ]) {
        const res = await t.app.inject({
          method: 'GET',
          url: '/metrics',
          headers: authorization === undefined ? {} : { authorization }
        })
        assert.equal(res.statusCode, 401, String(authorization))
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        const body = res.json()
        assert.equal(body.status, 401)
        assert.equal(typeof body.detail, 'string')
        assert.doesNotMatch(res.body, /http_requests_total/)
      }
    })

    it('counts requests by route template and status, refusals, deliveries and backlog, ' +
      'with no id or URL as a label', async () => {
      const tenant = `tenant-${MARK}-${crypto.randomUUID()}`
      const user = `user-${MARK}-${crypto.randomUUID()}`
      const token = await t.token({ sub: user, tenant, roles: ['admin'], email: `${user}@example.test` })
      // the job queue exists once started (the workers do it; here WORKERS=false)
      const queue = createJobQueue(t.ctx.systemDb)
      await queue.ready()
      await queue.stop()
      const before = await scrape(t)
      const count = (families: Family[], labels: Record<string, string>) =>
        value(families, 'http_requests_total', labels)

      // 404 of no route, with a distinctive path
      assert.equal(
        (await t.app.inject({ method: 'GET', url: `/no-such-${MARK}-path/${crypto.randomUUID()}?q=${MARK}` }))
          .statusCode,
        404
      )
      // 401 of a route
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/v1/contacts' })).statusCode, 401)
      // 201 and 404 of routes with a parameter; the caller's bucket of 3 is empty after these three,
      const created = await t.as(token, {
        method: 'POST',
        url: '/api/v1/contacts',
        payload: { first_name: `Ada ${MARK}`, email: `ada-${MARK}@example.test` }
      })
      assert.equal(created.statusCode, 201, created.body)
      await expectStatuses(t, [
        [token, 'GET', `/api/v1/contacts/${crypto.randomUUID()}`, 404],
        [token, 'GET', `/api/v1/contacts/${created.json().id as string}`, 200]
      ])
      // then one more a second passes (the refill): until the first 429
      let refused = 0
      for (let i = 0; i < 10 && refused === 0; i++) {
        if (
          (await t.as(token, { method: 'GET', url: `/api/v1/contacts/${created.json().id as string}` })).statusCode ===
          429
        ) {
          refused++
        }
      }
      assert.equal(refused, 1)

      // the identity-provider webhook: one unsigned (refused 401), one applied
      const webhook = idpWebhook(SECRET)
      const event = idpEvent(tenant, `u-${MARK}`, 1, 'user.human.added', { email: `u-${MARK}@example.test` })
      assert.equal((await webhook.send(t, event, { header: 'x-unrelated', signature: '' })).statusCode, 401)
      await webhook.deliver(t, event)

      // a notification the mail server refuses for good: failed
      await withTenant(t.ctx.db, { tenantId: tenant }, trx =>
        queueNotification(trx, {
          tenantId: tenant,
          channel: 'email',
          recipient: `someone-${MARK}@example.test`,
          subject: 's',
          body: 'b'
        })
      )
      const loop = startNotificationDelivery(t.ctx, {
        log: t.app.log,
        intervalMs: 3_600_000,
        sender: {
          name: 'refusing',
          send: async () => {
            throw Object.assign(new Error('mailbox unavailable'), { responseCode: 550 })
          }
        }
      })
      await loop.tick()
      await loop.stop()

      // read directly (the scrape serves a reading cached for a few seconds): the contact's domain event waits
      const backlog = await readBacklog(t.ctx.db)
      assert.ok(backlog.outboxLagSec > 0, JSON.stringify(backlog))
      assert.deepEqual(backlog.queues, [{ name: 'automation-execution', depth: 0 }])
      const { text, families } = await scrape(t)

      // the database pools and the transaction retries
      assert.ok(
        family(families, 'db_pool_connections').metrics.some(
          m => m.labels?.login === 'request' && m.labels?.state === 'in_use'
        ),
        'pool gauges by login and state'
      )
      assert.ok(value(families, 'db_pool_connections', { login: 'request', state: 'waiting' }) >= 0)
      assert.ok(family(families, 'db_transaction_retries_total').metrics.length > 0, 'the retry counter is exposed')

      // request counts by template (or unmatched), method and status
      const answered = (labels: Record<string, string>) =>
        assert.ok(count(families, labels) >= 1, `no request counted as ${JSON.stringify(labels)}`)
      assert.ok(
        count(families, { route: 'unmatched', method: 'GET', status_code: '404' }) >=
          count(before.families, { route: 'unmatched', method: 'GET', status_code: '404' }) + 1,
        'unmatched 404'
      )
      answered({ route: '/api/v1/contacts', method: 'GET', status_code: '401' })
      answered({ route: '/api/v1/contacts', method: 'POST', status_code: '201' })
      answered({ route: '/api/v1/contacts/:id', method: 'GET', status_code: '404' })
      answered({ route: '/api/v1/contacts/:id', method: 'GET', status_code: '200' })
      answered({ route: '/api/v1/contacts/:id', method: 'GET', status_code: '429' })
      assert.equal(family(families, 'http_request_duration_seconds').type, 'HISTOGRAM')
      const observed = series(
        text,
        'http_request_duration_seconds',
        'method="POST",route="/api/v1/contacts",status_code="201"'
      )
      assert.ok(
        Number(observed.count) >= 1 && observed.buckets?.['+Inf'] === observed.count && Number(observed.sum) > 0,
        JSON.stringify(observed)
      )

      // the process's counters: by how much each moved during this test
      const moved = (name: string, labels: Record<string, string>) =>
        value(families, name, labels) - value(before.families, name, labels)
      assert.ok(moved('rate_limit_refusals_total', { bucket: 'caller' }) >= 1, 'rate_limit_refusals_total')
      assert.equal(family(families, 'rate_limit_refusals_total').metrics.length, 2)
      assert.ok(moved('notification_deliveries_total', { outcome: 'failed' }) >= 1, 'notification_deliveries_total')
      assert.ok(moved('idp_webhook_deliveries_total', { outcome: 'refused' }) >= 1, 'idp_webhook_deliveries_total')
      assert.ok(moved('idp_webhook_deliveries_total', { outcome: 'applied' }) >= 1, 'idp_webhook_deliveries_total')
      for (const [name, label, values] of [
        ['automation_executions_total', 'status', ['succeeded', 'skipped', 'failed', 'retry']],
        ['automation_webhook_deliveries_total', 'outcome', ['delivered', 'failed', 'refused']],
        ['db_transaction_conflicts_total', 'code', ['40001', '40P01']],
        ['notification_deliveries_total', 'outcome', ['sent', 'retry', 'failed', 'undeliverable']]
      ] as const) {
        const f = family(families, name)
        assert.equal(f.type, 'COUNTER', name)
        assert.deepEqual(f.metrics.map(m => m.labels?.[label]).sort(), [...values].sort(), name)
      }

      // the backlog gauges
      const lag = family(families, 'outbox_lag_seconds')
      assert.equal(lag.type, 'GAUGE')
      assert.ok(Number(lag.metrics[0]?.value) >= 0, 'outbox_lag_seconds')
      assert.equal(value(families, 'job_queue_depth', { queue: 'automation-execution' }), 0)
      assert.ok(
        family(families, 'job_queue_depth').metrics.some(m => m.labels?.queue === 'automation-execution'),
        'job_queue_depth'
      )

      // Node's default metrics
      family(families, 'process_cpu_user_seconds_total')
      family(families, 'nodejs_eventloop_lag_seconds')

      // bounded labels: no URL, tenant, user or other value of a request anywhere in the body
      assert.ok(!text.includes(MARK), 'a request value leaked into the metrics')
      assert.ok(!text.includes(tenant) && !text.includes(user), 'a tenant or user id leaked into the metrics')
      const routes = new Set(
        families.flatMap(f => f.metrics.map(m => m.labels?.route)).filter((r): r is string => r !== undefined)
      )
      for (const route of routes) {
        assert.ok(
          route === 'unmatched' ||
            t.app.hasRoute({ method: 'GET', url: route }) ||
            t.app.hasRoute({ method: 'POST', url: route }),
          route
        )
      }
      for (const f of families) {
        for (const m of f.metrics) {
          for (const [k, v] of Object.entries(m.labels ?? {})) {
            assert.ok(!/[0-9a-f]{8}-[0-9a-f]{4}-/.test(v) && !v.includes('?'), `${f.name} ${k}=${v}`)
          }
        }
      }
    })
  })
}

describe('GET /metrics without METRICS_TOKEN', () => {
  const t = useTestApp('pglite')
  it('does not exist (404), whatever token is sent', async () => {
    for (const authorization of [undefined, `Bearer ${TOKEN}`]) {
      const res = await t.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: authorization === undefined ? {} : { authorization }
      })
      assert.equal(res.statusCode, 404)
      assert.equal(res.json().status, 404)
    }
  })
})

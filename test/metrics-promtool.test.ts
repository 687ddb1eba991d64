/**
 * GET /metrics checked by Prometheus's own linter (`promtool check metrics`, Debian's `prometheus` package; the suite
 * skips without it on a developer's machine and fails without it in CI, `CI=true`), after webhook subscription
 * deliveries of every outcome: their own counter (`webhook_deliveries_total`) moves by outcome while the automation
 * action's (`automation_webhook_deliveries_total`) does not, the attempt histogram counts each attempt, and the
 * pending gauge tells the failing deliveries. And docs/deployment.md's table of metrics names every family the
 * scrape has, with its type and labels, and nothing the scrape lacks.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { promtoolOrSkip } from './helpers/promtool.ts'
import { withTenant } from '../src/platform/db/tenant.ts'
import { allowListOf } from '../src/platform/http/outbound.ts'
import { processRegistry } from '../src/platform/metrics.ts'
import { deliverDue, MAX_ATTEMPTS, type WebhookEngine } from '../src/modules/webhooks/webhooks.delivery.ts'
import { useScriptedReceiver } from '../src/modules/webhooks/webhooks.fixtures.ts'
import type { WebhooksTables } from '../src/modules/webhooks/webhooks.table.ts'

interface Sample { labels?: Record<string, string>, value?: string, count?: string }
interface Family { name: string, help: string, type: string, metrics: Sample[] }
const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[]

const TOKEN = `metrics-${crypto.randomBytes(16).toString('hex')}`
const { executable: promtool, skip } = promtoolOrSkip()

/** A sample's value (a histogram's count), 0 when the series is absent. */
function value (families: Family[], name: string, labels: Record<string, string> = {}): number {
  const s = families.find(f => f.name === name)?.metrics
    .find(m => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
  return s === undefined ? 0 : Number(s.value ?? s.count)
}

/** `promtool check metrics` of an exposition: its exit status and what it said. */
function check (text: string): { status: number | null, output: string } {
  assert.ok(promtool !== undefined, 'promtool is required in CI (Debian\'s `prometheus` package; .ci/run installs it)')
  const r = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' })
  return { status: r.status, output: `${r.stdout}${r.stderr}` }
}

/** docs/deployment.md's table of metrics: each row's names (a `*` row is a prefix), type and backticked labels. */
function documented (): Array<{ names: string[], type: string, labels: string[] }> {
  const guide = fs.readFileSync(new URL('../docs/deployment.md', import.meta.url), 'utf8')
  const table = guide.slice(guide.indexOf('| metric | type | labels | what |'))
  const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2)
  return rows.map(row => {
    const [name = '', type = '', labels = ''] = row.split(' | ').map(c => c.replace(/^\| /, ''))
    const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map(m => m[1] ?? '')
    return { names: ticked(name), type: type.trim(), labels: ticked(labels) }
  })
}

for (const kind of databases()) {
  void describe(`${kind}: GET /metrics through promtool, with webhook subscription deliveries`, { skip }, () => {
    const t: TestApp = useTestApp(kind, { env: { METRICS_TOKEN: TOKEN, AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })
    const receiver = useScriptedReceiver()
    const engine = (allow = ['127.0.0.1']): WebhookEngine =>
      ({ db: t.ctx.db, allow: allowListOf(allow), timeoutMs: 1000 })

    async function scrape (): Promise<string> {
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
      assert.equal(res.statusCode, 200, res.body)
      return res.body
    }

    async function subscription (admin: string, path: string): Promise<{ id: string, secret: string }> {
      const res = await t.as(admin, {
        method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url(path), event_types: ['*'] }
      })
      assert.equal(res.statusCode, 201, res.body)
      const sub = res.json() as { id: string, secret: string }
      receiver.verifyWith.set(path, sub.secret)
      const ping = await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${sub.id}/ping` })
      assert.equal(ping.statusCode, 202, ping.body)
      return sub
    }

    async function update (tenantId: string, set: Record<string, unknown>): Promise<void> {
      await withTenant(t.ctx.db, { tenantId }, async trx => {
        await trx.withTables<WebhooksTables>().updateTable('webhook_deliveries').set(set)
          .where('status', '=', 'pending').execute()
      })
    }

    void it('counts every attempt by outcome under its own name, and promtool accepts the exposition', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const before = parse(await processRegistry.metrics())

      // refused: the destination is not allowed when delivering (an engine without the allow list), nothing is sent
      await subscription(admin, '/refused')
      assert.equal((await deliverDue(engine([]))).failed, 1)
      assert.equal(receiver.received.length, 0)
      // failed: the last attempt of its run fails (the attempts before it already used up)
      receiver.script.set('/down', [{ status: 500, body: 'down' }])
      await update(tenant.id, { status: 'failed' })
      await subscription(admin, '/down')
      await update(tenant.id, { attempts: MAX_ATTEMPTS - 1 })
      assert.equal((await deliverDue(engine())).failed, 1)
      // retry twice, then delivered: the receiver fails twice, then takes it
      receiver.script.set('/twice', [{ status: 503, body: '' }, { status: 500, body: '' }, { status: 200, body: '' }])
      await subscription(admin, '/twice')
      assert.equal((await deliverDue(engine())).failed, 1)
      await update(tenant.id, { next_attempt_at: sql`now()` })
      assert.equal((await deliverDue(engine())).failed, 1)

      // the first scrape: one pending delivery failing (the refused one was set aside as failed above)
      const failing = await scrape()
      const gauge = parse(failing)
      assert.equal(value(gauge, 'webhook_deliveries_pending', { state: 'failing' }), 1, failing)
      assert.equal(value(gauge, 'webhook_deliveries_pending', { state: 'new' }), 0)
      assert.equal(gauge.find(f => f.name === 'webhook_deliveries_pending')?.type, 'GAUGE')

      await update(tenant.id, { next_attempt_at: sql`now()` })
      assert.equal((await deliverDue(engine())).succeeded, 1)
      assert.deepEqual(receiver.received.map(r => r.verified), [true, true, true, true], 'each verified on receipt')
      const text = await scrape()
      const after = parse(text)
      const moved = (name: string, labels: Record<string, string> = {}) =>
        value(after, name, labels) - value(before, name, labels)
      assert.deepEqual(
        Object.fromEntries(['delivered', 'retry', 'failed', 'refused'].map(o => [o, moved('webhook_deliveries_total', {
          outcome: o
        })])),
        { delivered: 1, retry: 2, failed: 1, refused: 1 }
      )
      for (const outcome of ['delivered', 'failed', 'refused']) {
        assert.equal(moved('automation_webhook_deliveries_total', { outcome }), 0, `automation ${outcome}`)
      }
      assert.equal(moved('webhook_delivery_attempt_duration_seconds'), 5, 'one observation per attempt')
      assert.equal(after.find(f => f.name === 'webhook_delivery_attempt_duration_seconds')?.type, 'HISTOGRAM')

      for (const exposition of [failing, text]) {
        const r = check(exposition)
        assert.equal(r.status, 0, `promtool check metrics:\n${r.output}`)
      }
      // promtool does find a problem: the check is not one that passes whatever it is given
      const bad = check('# HELP webhook_things Things.\n# TYPE webhook_things counter\nwebhook_things 1\n')
      assert.notEqual(bad.status, 0)
      assert.match(bad.output, /_total/)
    })

    void it("names in docs/deployment.md's table every family of a scrape, with its type and labels", async () => {
      const families = parse(await scrape())
      const rows = documented()
      assert.ok(rows.length > 10, `${rows.length} rows read`)
      const matches = (n: string, name: string) => n.endsWith('*') ? name.startsWith(n.slice(0, -1)) : n === name
      const rowOf = (name: string) => rows.find(r => r.names.some(n => matches(n, name)))
      for (const f of families) {
        const row = rowOf(f.name)
        assert.ok(row !== undefined, `${f.name} is not in docs/deployment.md's table of metrics`)
        if (row.names.some(n => n.endsWith('*'))) continue
        assert.equal(f.type.toLowerCase(), row.type, `${f.name}: its type`)
        const labels = new Set(f.metrics.flatMap(m => Object.keys(m.labels ?? {})).filter(l => l !== 'le'))
        for (const l of labels) assert.ok(row.labels.includes(l), `${f.name}: label ${l} not documented`)
      }
      for (const name of rows.flatMap(r => r.names).filter(n => !n.endsWith('*'))) {
        assert.ok(families.some(f => f.name === name), `${name} is documented but not in a scrape`)
      }
    })
  })
}

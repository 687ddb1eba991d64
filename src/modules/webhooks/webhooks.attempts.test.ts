/**
 * The history of a webhook delivery's attempts (migration 0047), against a real receiver on 127.0.0.1 that fails
 * twice, then takes the delivery: the receiver verifies every attempt's signature with the Standard Webhooks
 * library (`standardwebhooks`, webhooks.fixtures.ts), the attempts route shows the three with their statuses,
 * latencies and the start of each answer (a signing secret the receiver echoes redacted), the subscription's answer
 * counts its pending and failing deliveries, a reader of another tenant gets 404, and retention deletes old attempts
 * (seen through a later read).
 * The excerpt and error-kind rules are checked on tables of cases.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { Webhook } from 'standardwebhooks'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatuses } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { allowListOf } from '../../platform/http/outbound.ts'
import { pruneRetention, RETENTION_KINDS } from '../../platform/retention.ts'
import { deliverDue, type WebhookEngine } from './webhooks.delivery.ts'
import { errorKindOf, EXCERPT_BYTES, excerptOf, REDACTED } from './webhooks.attempts.ts'
import { useScriptedReceiver } from './webhooks.fixtures.ts'
import type { WebhooksTables } from './webhooks.table.ts'

type Json = Record<string, any>

void describe('the excerpt of an answer kept with an attempt', () => {
  const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`
  const key = secret.slice('whsec_'.length)
  const cases: Array<[string, Buffer | undefined, string | undefined, string | null]> = [
    ['no body', undefined, 'text/plain', null],
    ['an empty body', Buffer.alloc(0), 'text/plain', null],
    ['text as sent, spaces and line ends kept', Buffer.from(' no hook \r\n'), 'text/plain', ' no hook \r\n'],
    ['JSON', Buffer.from('{"error":"nope"}'), 'application/json; charset=utf-8', '{"error":"nope"}'],
    ['a problem document', Buffer.from('{"title":"x"}'), 'application/problem+json', '{"title":"x"}'],
    ['no content type, UTF-8 bytes', Buffer.from('déjà vu'), undefined, 'déjà vu'],
    ['a binary content type', Buffer.from('GIF89a'), 'image/gif', null],
    ['bytes that are not UTF-8', Buffer.from([0x66, 0xff, 0xfe, 0x66]), undefined, null],
    ['a NUL byte', Buffer.from('a\u0000b'), 'text/plain', null],
    ['Latin-1 by its charset', Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/plain; charset=iso-8859-1', 'café'],
    ['the secret echoed', Buffer.from(`secret=${secret}; key=${key}.`), 'text/plain',
      `secret=${REDACTED}; key=${REDACTED}.`],
    ['the start of the secret at the cut', Buffer.from('x'.repeat(EXCERPT_BYTES - 12) + secret), 'text/plain',
      'x'.repeat(EXCERPT_BYTES - 12) + REDACTED]
  ]
  for (const [name, body, type, expected] of cases) {
    void it(name, () => { assert.equal(excerptOf(body, type, [secret]), expected) })
  }

  void it(`keeps the first ${EXCERPT_BYTES} bytes, leaving out a character the cut splits`, () => {
    const long = Buffer.from('a'.repeat(EXCERPT_BYTES - 1) + 'é and more')
    assert.equal(excerptOf(long, 'text/plain', []), 'a'.repeat(EXCERPT_BYTES - 1))
    assert.equal(excerptOf(Buffer.from('b'.repeat(5000)), undefined, []), 'b'.repeat(EXCERPT_BYTES))
  })

  void it('names the kind of a failure without an answer', () => {
    const kinds: Array<[unknown, string | null]> = [
      [{ status: 500 }, null],
      [{ refused: true, code: 'EADDRNOTALLOWED' }, 'refused'],
      [{ code: 'ETIMEDOUT' }, 'timeout'],
      [{ code: 'ENOTFOUND' }, 'dns'],
      [{ code: 'ECONNREFUSED' }, 'connection'],
      [{ code: 'ECONNRESET' }, 'connection'],
      [{ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }, 'tls'],
      [{ code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, 'tls'],
      [new Error('?'), 'other']
    ]
    for (const [err, kind] of kinds) assert.equal(errorKindOf(err), kind, JSON.stringify(err))
  })
})

for (const kind of databases()) {
  void describe(`${kind}: the attempts of a webhook delivery`, () => {
    const t: TestApp = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })
    const receiver = useScriptedReceiver()
    const engine = (): WebhookEngine => ({ db: t.ctx.db, allow: allowListOf(['127.0.0.1']), timeoutMs: 1000 })

    async function subscribe (admin: string, url: string): Promise<{ id: string, secret: string }> {
      const res = await t.as(admin, { method: 'POST', url: '/api/v1/webhooks', payload: { url, event_types: ['*'] } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json<Json>() as { id: string, secret: string }
    }

    async function ping (admin: string, subId: string): Promise<string> {
      const res = await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${subId}/ping` })
      assert.equal(res.statusCode, 202, res.body)
      return res.json<Json>().id
    }

    /** Makes the tenant's pending deliveries due now (the retry schedule waits 30 s, then 2 min). */
    async function makeDue (tenantId: string): Promise<void> {
      await withTenant(t.ctx.db, { tenantId }, async trx => {
        await trx.withTables<WebhooksTables>().updateTable('webhook_deliveries')
          .set({ next_attempt_at: sql`now()` }).where('status', '=', 'pending').execute()
      })
    }

    const attemptsUrl = (subId: string, deliveryId: string): string =>
      `/api/v1/webhooks/${subId}/deliveries/${deliveryId}/attempts`

    async function figures (admin: string, subId: string): Promise<Json> {
      const res = await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${subId}` })
      assert.equal(res.statusCode, 200, res.body)
      return res.json<Json>().deliveries
    }

    let story: { tenantId: string, admin: string, subId: string, deliveryId: string } | undefined

    void it('keeps every attempt of a delivery the receiver fails twice, then takes; each one signed', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const path = '/twice'
      const sub = await subscribe(admin, receiver.url(path))
      // the receiver verifies each request with the Standard Webhooks library: one that does not verify is answered 401
      receiver.verifyWith.set(path, sub.secret)
      receiver.script.set(path, [
        { status: 503, type: 'text/plain', body: 'down for maintenance\n' },
        { status: 500, type: 'application/problem+json', body: `{"title":"bad secret","secret":"${sub.secret}"}` },
        { status: 204, body: '' }
      ])
      const deliveryId = await ping(admin, sub.id)
      assert.deepEqual(await figures(admin, sub.id), { pending: 1, failing: 0, last_success_at: null })

      const before = Date.now()
      assert.equal((await deliverDue(engine())).failed, 1)
      assert.deepEqual(await figures(admin, sub.id), { pending: 1, failing: 1, last_success_at: null })
      await makeDue(tenant.id)
      assert.equal((await deliverDue(engine())).failed, 1)
      await makeDue(tenant.id)
      assert.equal((await deliverDue(engine())).succeeded, 1)
      const done = await figures(admin, sub.id)
      assert.equal(done.pending, 0)
      assert.equal(done.failing, 0)
      assert.ok(Date.parse(done.last_success_at) >= before - 1000, done.last_success_at)

      // what the receiver got: three requests, one webhook-id, each verified by the Standard Webhooks library
      const got = receiver.received.filter(r => r.path === path)
      assert.equal(got.length, 3)
      assert.deepEqual(got.map(r => r.verified), [true, true, true])
      assert.equal(new Set(got.map(r => r.headers['webhook-id'])).size, 1)
      const wh = new Webhook(sub.secret)
      for (const r of got) assert.equal((wh.verify(r.body, r.headers) as Json).type, 'webhook.ping')

      const res = await t.as(admin, { method: 'GET', url: attemptsUrl(sub.id, deliveryId) })
      assert.equal(res.statusCode, 200, res.body)
      const page = res.json<Json>()
      assert.equal(page.total, 3)
      const items = page.items as Json[]
      // newest first
      assert.deepEqual(items.map(a => a.attempt), [3, 2, 1])
      assert.deepEqual(items.map(a => a.status_code), [204, 500, 503])
      assert.deepEqual(items.map(a => a.succeeded), [true, false, false])
      assert.deepEqual(items.map(a => a.error_kind), [null, null, null])
      assert.deepEqual(items.map(a => a.response_excerpt), [
        null,
        `{"title":"bad secret","secret":"${REDACTED}"}`,
        'down for maintenance\n'
      ])
      assert.ok(!res.body.includes(sub.secret.slice('whsec_'.length)), 'no signing secret in an answer')
      assert.match(String(items[1]?.error), /500/)
      assert.equal(items[0]?.error, null)
      for (const [i, a] of items.entries()) {
        assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0, JSON.stringify(a))
        // each attempt's time is the webhook-timestamp it was signed with
        assert.equal(Math.floor(Date.parse(a.started_at) / 1000), Number(got[2 - i]?.headers['webhook-timestamp']))
      }
      assert.ok(Date.parse(items[0]?.started_at) >= Date.parse(items[2]?.started_at))
      // the delivery log answers as before: the last attempt
      const log = (await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${sub.id}/deliveries` })).json<Json>()
      assert.equal(log.items[0].attempts, 3)
      assert.equal(log.items[0].last_status_code, 204)
      story = { tenantId: tenant.id, admin, subId: sub.id, deliveryId }
    })

    void it('records a timeout and a refused connection by their kind, with no status', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      receiver.script.set('/slow', ['hang'])
      // a port nothing listens on: a closed server's
      const closed = http.createServer()
      await new Promise<void>(resolve => closed.listen(0, '127.0.0.1', resolve))
      const port = (closed.address() as AddressInfo).port
      await new Promise(resolve => closed.close(resolve))
      for (const [url, kindOf, error] of [
        [receiver.url('/slow'), 'timeout', /timed out/],
        [`http://127.0.0.1:${port}/nobody`, 'connection', /ECONNREFUSED/]
      ] as const) {
        const sub = await subscribe(admin, url)
        const deliveryId = await ping(admin, sub.id)
        await deliverDue(engine())
        const [only] = (await t.as(admin, { method: 'GET', url: attemptsUrl(sub.id, deliveryId) })).json<Json>().items
        assert.equal(only?.error_kind, kindOf)
        assert.equal(only?.status_code, null)
        assert.equal(only?.succeeded, false)
        assert.equal(only?.response_excerpt, null)
        assert.match(String(only?.error), error)
      }
    })

    void it('pages the attempts by cursor', async () => {
      assert.ok(story !== undefined, 'the first test ran')
      const { admin, subId, deliveryId } = story
      const first = (await t.as(admin, { method: 'GET', url: `${attemptsUrl(subId, deliveryId)}?size=2` })).json<Json>()
      assert.deepEqual(first.items.map((a: Json) => a.attempt), [3, 2])
      const second = (await t.as(admin, {
        method: 'GET', url: `${attemptsUrl(subId, deliveryId)}?size=2&cursor=${encodeURIComponent(first.next_cursor)}`
      })).json<Json>()
      assert.deepEqual(second.items.map((a: Json) => a.attempt), [1])
      assert.equal(second.next_cursor, null)
    })

    void it('shows the attempts only to who may read the subscription: another tenant gets 404', async () => {
      assert.ok(story !== undefined, 'the first test ran')
      const { admin, subId, deliveryId } = story
      const foreign = await newTenant(t).user('root', ['admin'])
      const viewer = await newTenant(t).user('vic', ['viewer'])
      const sameTenantMember = await t.token({ sub: 'mia', tenant: story.tenantId, roles: ['member'] })
      // a delivery of another subscription of the same tenant, under this one's path
      const other = await subscribe(admin, receiver.url('/other'))
      const otherDelivery = await ping(admin, other.id)
      await expectStatuses(t, [
        [foreign, 'GET', attemptsUrl(subId, deliveryId), 404],
        [sameTenantMember, 'GET', attemptsUrl(subId, deliveryId), 403],
        [viewer, 'GET', attemptsUrl(subId, deliveryId), 403],
        [admin, 'GET', attemptsUrl(subId, otherDelivery), 404],
        [admin, 'GET', attemptsUrl(other.id, deliveryId), 404],
        [admin, 'GET', attemptsUrl(subId, '00000000-0000-4000-8000-000000000000'), 404],
        [admin, 'GET', attemptsUrl(subId, deliveryId), 200],
        [admin, 'GET', attemptsUrl(other.id, otherDelivery), 200]
      ])
      const bad = await t.as(admin, { method: 'GET', url: attemptsUrl(subId, 'not-a-uuid') })
      assert.equal(bad.statusCode, 400, bad.body)
      assert.equal(bad.json<Json>().errors[0].location, 'path.delivery_id')
    })

    void it('deletes attempts older than RETENTION_WEBHOOK_ATTEMPTS, in batches, and keeps the newer', async () => {
      assert.ok(story !== undefined, 'the first test ran')
      const { tenantId, admin, subId, deliveryId } = story
      const now = new Date()
      // the first two attempts started 40 days ago
      await withTenant(t.ctx.db, { tenantId }, async trx => {
        await trx.withTables<WebhooksTables>().updateTable('webhook_delivery_attempts')
          .set({ started_at: new Date(now.getTime() - 40 * 86_400_000) })
          .where('delivery_id', '=', deliveryId).where('attempt', '<=', 2).execute()
      })
      // this kind alone, one row a statement
      const off = Object.fromEntries(RETENTION_KINDS.map(k => [k, null]))
      const retention = { ...t.config.retention, ...off, webhookAttempts: 30 * 86_400_000, batchSize: 1 }
      const r = await pruneRetention(t.ctx.db, { retention, now })
      assert.deepEqual(r.kinds.webhookAttempts, { deleted: 2, statements: 3, largest: 1 })
      const left = (await t.as(admin, { method: 'GET', url: attemptsUrl(subId, deliveryId) })).json<Json>()
      assert.equal(left.total, 1)
      assert.deepEqual(left.items.map((a: Json) => a.attempt), [3])
      // the delivery itself is kept (its own period runs from its last attempt)
      const log = (await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${subId}/deliveries` })).json<Json>()
      assert.equal(log.items.find((d: Json) => d.id === deliveryId)?.attempts, 3)
      // off: nothing goes
      const kept = await pruneRetention(t.ctx.db, { retention: { ...retention, webhookAttempts: null }, now })
      assert.equal(kept.kinds.webhookAttempts.statements, 0)
    })
  })
}

/**
 * Outbound webhooks against a real local receiver on 127.0.0.1 (allow-listed by
 * AUTOMATION_WEBHOOK_ALLOW): every delivery verifies with `standardwebhooks`, both secrets verify
 * during a rotation, a retry carries the same webhook-id, failures (status, timeout, redirect, a
 * huge answer) are recorded and retried, repeated failures disable the subscription and notify its
 * creator. The workers are driven step by step (dispatchWebhooks, deliverDue).
 */
import crypto from 'node:crypto'
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { Webhook } from 'standardwebhooks'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { queuedNotifications } from '../../../test/helpers/outbox.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { allowListOf } from '../../platform/http/outbound.ts'
import { DISABLE_AFTER_FAILURES, deliverDue, dispatchWebhooks, type WebhookEngine } from './webhooks.delivery.ts'
import type { WebhooksTables } from './webhooks.table.ts'

interface Received { path: string, headers: Record<string, string>, body: string }

/** A receiver whose answer depends on the path: /ok, /flaky (500 then 200), /fail, /hang, /redirect, /big. */
function useReceiver (): { received: Received[], url: (path: string) => string } {
  const received: Received[] = []
  const seen = new Map<string, number>()
  let server: http.Server | undefined
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const path = req.url ?? ''
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
        received.push({ path, headers, body: Buffer.concat(chunks).toString('utf8') })
        const n = (seen.get(path) ?? 0) + 1
        seen.set(path, n)
        if (path.startsWith('/hang')) return
        if (path.startsWith('/redirect')) {
          res.writeHead(307, { location: 'https://93.184.215.14/elsewhere' }).end()
        } else if (path.startsWith('/big')) {
          res.writeHead(500, { 'content-type': 'application/octet-stream' })
          res.end(Buffer.alloc(10 * 1024 * 1024, 1))
        } else if (path.startsWith('/fail') || (path.startsWith('/flaky') && n === 1)) {
          res.writeHead(500).end('no')
        } else {
          res.writeHead(200).end('ok')
        }
      })
    })
    await new Promise<void>(resolve => server?.listen(0, '127.0.0.1', resolve))
  })
  after(async () => {
    server?.closeAllConnections()
    await new Promise(resolve => server?.close(resolve))
  })
  return { received, url: path => `http://127.0.0.1:${(server?.address() as AddressInfo).port}${path}` }
}

type Json = Record<string, any>

for (const kind of databases()) {
  void describe(`${kind}: outbound webhooks`, () => {
    const t: TestApp = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })
    const receiver = useReceiver()
    const engine = (): WebhookEngine => ({ db: t.ctx.db, allow: allowListOf(['127.0.0.1']), timeoutMs: 1000 })

    async function setup (path: string, eventTypes: string[] = ['contact.created']) {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      // a member of an organization: her contacts are the organization's, which an admin's subscription is told
      // of (a personal contact of hers would not be: docs/security.md, "What leaves the service")
      const member = await tenant.user('mia', ['member'], { orgId: 'org-a' })
      const res = await t.as(admin, {
        method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url(path), event_types: eventTypes }
      })
      assert.equal(res.statusCode, 201, res.body)
      const sub = res.json<Json>()
      assert.match(sub.secret, /^whsec_[A-Za-z0-9+/]{40,}={0,2}$/)
      assert.equal(res.headers.location, `/api/v1/webhooks/${String(sub.id)}`)
      return { tenant, admin, member, sub, secret: sub.secret as string }
    }

    async function contactCreated (token: string, name = 'Ann'): Promise<string> {
      const res = await t.as(token, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: name } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json<Json>().id
    }

    async function deliveries (admin: string, id: string): Promise<Json[]> {
      const res = await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${id}/deliveries` })
      assert.equal(res.statusCode, 200, res.body)
      return res.json<Json>().items
    }

    /** Makes the tenant's pending deliveries due now. */
    async function makeDue (tenantId: string): Promise<void> {
      await withTenant(t.ctx.db, { tenantId }, async trx => {
        await trx.withTables<WebhooksTables>().updateTable('webhook_deliveries')
          .set({ next_attempt_at: sql`now()` }).where('status', '=', 'pending').execute()
      })
    }

    const on = (path: string): Received[] => receiver.received.filter(r => r.path === path)

    void it('delivers a domain event signed per Standard Webhooks, once per subscription', async () => {
      const { admin, member, sub, secret } = await setup('/ok-1')
      const contactId = await contactCreated(member)
      const dispatched = await dispatchWebhooks(engine())
      assert.ok(dispatched.deliveries >= 1)
      // a second pass adds nothing
      await dispatchWebhooks(engine())
      assert.equal((await deliveries(admin, sub.id)).length, 1)
      await deliverDue(engine())
      const got = on('/ok-1')
      assert.equal(got.length, 1)
      const r = got[0] as Received
      const payload = new Webhook(secret).verify(r.body, r.headers) as Json
      assert.equal(payload.type, 'contact.created')
      assert.equal(payload.data.contact_id, contactId)
      assert.ok(!Number.isNaN(Date.parse(payload.timestamp)))
      assert.match(r.headers['webhook-id'] ?? '', /^msg_/)
      assert.match(r.headers['webhook-timestamp'] ?? '', /^\d+$/)
      const [log] = await deliveries(admin, sub.id)
      assert.equal(log?.status, 'succeeded')
      assert.equal(log?.attempts, 1)
      assert.equal(log?.last_status_code, 200)
      assert.equal(log?.msg_id, r.headers['webhook-id'])
      assert.equal(typeof log?.last_duration_ms, 'number')
      // the secret is never shown again
      const read = await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${String(sub.id)}` })
      assert.equal(read.statusCode, 200)
      assert.equal(read.json<Json>().secret, undefined)
      assert.ok(!read.body.includes(secret))
    })

    void it('delivers a new subscription\'s first event in the first round, ' +
      'however much history the tenant has', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const member = await tenant.user('mia', ['member'], { orgId: 'org-a' })
      // two rounds' worth of events from before the subscription (an hour and more before it: settled)
      // multi-row VALUES: an INSERT … SELECT is a COPY into the shards on Citus, which row-level security refuses
      const rows = Array.from({ length: 450 }, () => sql`(${tenant.id}, 'contact.created', 'contact',
        ${crypto.randomUUID()}, '{}', now() - interval '2 hours', now())`)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await sql`insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, payload, created_at, processed_at)
          values ${sql.join(rows)}`.execute(trx)
      })
      const res = await t.as(admin, {
        method: 'POST',
        url: '/api/v1/webhooks',
        payload: { url: receiver.url('/history'), event_types: ['contact.created'] }
      })
      assert.equal(res.statusCode, 201, res.body)
      const contactId = await contactCreated(member)
      await dispatchWebhooks(engine())
      const log = await deliveries(admin, res.json<Json>().id)
      assert.equal(log.length, 1, 'the new event, not a walk through the history first')
      await deliverDue(engine())
      assert.equal((JSON.parse(on('/history')[0]?.body ?? '{}') as Json).data?.contact_id, contactId)
    })

    void it('tells nothing to a subscription whose creator is gone: a removed user, a disabled or deleted service ' +
      'account (made with its key)', async () => {
      const { tenant, admin, member } = await setup('/unused')
      const account = (await expectStatus(t, admin, 'POST', '/api/v1/service-accounts', 201, {
        name: 'hooks robot', role: 'admin'
      })).json()
      const key = (await expectStatus(t, admin, 'POST', `/api/v1/service-accounts/${account.id}/keys`, 201, {})).json()
      const byKey = (await expectStatus(t, key.secret, 'POST', '/api/v1/webhooks', 201, {
        url: receiver.url('/by-key'), event_types: ['contact.created']
      })).json()
      const boss = await tenant.user('boss', ['admin'])
      const byUser = (await expectStatus(t, boss, 'POST', '/api/v1/webhooks', 201, {
        url: receiver.url('/by-user'), event_types: ['contact.created']
      })).json()
      const count = async (id: string) => (await deliveries(admin, id)).length

      await contactCreated(member, 'First')
      await dispatchWebhooks(engine())
      assert.deepEqual([await count(byKey.id), await count(byUser.id)], [1, 1])

      // the account disabled, the user removed by the identity provider: the next event reaches neither
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: true })
      await t.ctx.db.insertInto('users').values({ tenant_id: tenant.id, id: 'boss', state: 'removed' }).execute()
      await contactCreated(member, 'Second')
      await dispatchWebhooks(engine())
      assert.deepEqual([await count(byKey.id), await count(byUser.id)], [1, 1])

      // enabled again: told of what follows; deleted: never again
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: false })
      await contactCreated(member, 'Third')
      await dispatchWebhooks(engine())
      assert.equal(await count(byKey.id), 2)
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${account.id}`, 204)
      await contactCreated(member, 'Fourth')
      await dispatchWebhooks(engine())
      assert.equal(await count(byKey.id), 2)
    })

    void it('signs with both secrets during a rotation', async () => {
      const { admin, member, sub, secret } = await setup('/ok-2', ['*'])
      const rotated = await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${String(sub.id)}/rotate-secret` })
      assert.equal(rotated.statusCode, 200, rotated.body)
      const next = rotated.json<Json>().secret as string
      assert.notEqual(next, secret)
      assert.ok(Date.parse(rotated.json<Json>().previous_secret_expires_at) > Date.now() + 23 * 3600_000)
      await contactCreated(member)
      await dispatchWebhooks(engine())
      await deliverDue(engine())
      const r = on('/ok-2')[0] as Received
      assert.equal(r.headers['webhook-signature']?.split(' ').length, 2)
      assert.equal((new Webhook(secret).verify(r.body, r.headers) as Json).type, 'contact.created')
      assert.equal((new Webhook(next).verify(r.body, r.headers) as Json).type, 'contact.created')
      assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(r.body, r.headers))
    })

    void it('retries a failed delivery with the same webhook-id, and logs both attempts', async () => {
      const { tenant, admin, member, sub, secret } = await setup('/flaky')
      await contactCreated(member)
      await dispatchWebhooks(engine())
      await deliverDue(engine())
      let [log] = await deliveries(admin, sub.id)
      assert.equal(log?.status, 'pending')
      assert.equal(log?.attempts, 1)
      assert.equal(log?.last_status_code, 500)
      assert.match(String(log?.last_error), /500/)
      assert.ok(Date.parse(log?.next_attempt_at) > Date.now() + 20_000, 'the first retry waits about 30 s')
      // not due yet: nothing is sent
      await deliverDue(engine())
      assert.equal(on('/flaky').length, 1)
      await makeDue(tenant.id)
      await deliverDue(engine())
      const got = on('/flaky')
      assert.equal(got.length, 2)
      assert.equal(got[0]?.headers['webhook-id'], got[1]?.headers['webhook-id'])
      for (const r of got) new Webhook(secret).verify(r.body, r.headers)
      ;[log] = await deliveries(admin, sub.id)
      assert.equal(log?.status, 'succeeded')
      assert.equal(log?.attempts, 2)
      assert.equal(log?.last_status_code, 200)
      assert.equal(log?.next_attempt_at, null)
    })

    for (const [path, error] of [['/hang', /timed out/], ['/redirect', /307/], ['/big', /500/]] as const) {
      void it(`records a failed attempt when the receiver ${path.slice(1)}s, and goes on`, async () => {
        const { admin, member, sub } = await setup(path)
        await contactCreated(member)
        await dispatchWebhooks(engine())
        const started = Date.now()
        const result = await deliverDue(engine())
        assert.ok(result.failed >= 1)
        assert.ok(Date.now() - started < 5000)
        const [log] = await deliveries(admin, sub.id)
        assert.equal(log?.status, 'pending')
        assert.equal(log?.attempts, 1)
        assert.match(String(log?.last_error), error)
        assert.equal(on(path).length, 1)
      })
    }

    void it('queues a ping, and redelivers with the same webhook-id', async () => {
      const { admin, sub, secret } = await setup('/ok-3')
      const ping = await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${String(sub.id)}/ping` })
      assert.equal(ping.statusCode, 202, ping.body)
      assert.equal(ping.json<Json>().status, 'pending')
      await deliverDue(engine())
      const first = on('/ok-3')[0] as Received
      assert.equal((new Webhook(secret).verify(first.body, first.headers) as Json).type, 'webhook.ping')
      const again = await t.as(admin, {
        method: 'POST', url: `/api/v1/webhooks/${String(sub.id)}/deliveries/${String(ping.json<Json>().id)}/redeliver`
      })
      assert.equal(again.statusCode, 202, again.body)
      await deliverDue(engine())
      const got = on('/ok-3')
      assert.equal(got.length, 2)
      assert.equal(got[1]?.headers['webhook-id'], first.headers['webhook-id'])
    })

    void it('disables a subscription that keeps failing and notifies its creator', async () => {
      const { tenant, admin, sub } = await setup('/fail')
      // a day of failures already behind it
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.withTables<WebhooksTables>().updateTable('webhook_subscriptions')
          .set({ consecutive_failures: DISABLE_AFTER_FAILURES - 1, failing_since: sql`now() - interval '2 days'` })
          .execute()
      })
      await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${String(sub.id)}/ping` })
      const result = await deliverDue(engine())
      assert.equal(result.disabled, 1)
      const read = (await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${String(sub.id)}` })).json<Json>()
      assert.equal(read.enabled, false)
      assert.match(read.disabled_reason, /consecutive failed deliveries/)
      const notes = await queuedNotifications(t, tenant.id)
      assert.equal(notes.length, 1)
      assert.equal(notes[0]?.recipient, 'root@example.test')
      assert.match(notes[0]?.subject ?? '', /disabled/)
      // disabled: its pending deliveries wait
      await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${String(sub.id)}/ping` })
      const before = on('/fail').length
      await deliverDue(engine())
      assert.equal(on('/fail').length, before)
      // enabled again: the run of failures starts over
      const enabled = await t.as(admin, {
        method: 'PATCH', url: `/api/v1/webhooks/${String(sub.id)}`, payload: { enabled: true }
      })
      assert.equal(enabled.statusCode, 200, enabled.body)
      assert.equal(enabled.json<Json>().disabled_reason, null)
      assert.equal(enabled.json<Json>().consecutive_failures, 0)
    })

    void it('refuses private, loopback and non-https URLs and unknown event types, naming the field', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      for (const url of [
        'https://10.0.0.1/hook', 'https://[::1]/hook', 'https://169.254.169.254/x', 'https://127.0.0.2/hook',
        'http://93.184.215.14/hook', 'ftp://93.184.215.14/x', 'not a url', 'https://[::ffff:10.0.0.1]/',
        'https://u:p@93.184.215.14/x'
      ]) {
        const res = await t.as(admin, {
          method: 'POST', url: '/api/v1/webhooks', payload: { url, event_types: ['contact.created'] }
        })
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
        assert.equal(res.json<Json>().errors[0].location, 'body.url', url)
      }
      const res = await t.as(admin, {
        method: 'POST', url: '/api/v1/webhooks', payload: { url: 'https://93.184.215.14/x', event_types: ['nope.done'] }
      })
      assert.equal(res.statusCode, 400, res.body)
      assert.equal(res.json<Json>().errors[0].location, 'body.event_types[0]')
    })

    void it('is for tenant admins: 403 to viewers and members, 404 to another tenant', async () => {
      const { admin, sub } = await setup('/ok-4')
      const other = newTenant(t)
      const viewer = await newTenant(t).user('vic', ['viewer'])
      const foreign = await other.user('root', ['admin'])
      const id = String(sub.id)
      for (const [token, status] of [[viewer, 403], [foreign, 404]] as const) {
        for (const [method, url] of [
          ['GET', `/api/v1/webhooks/${id}`], ['PATCH', `/api/v1/webhooks/${id}`],
          ['DELETE', `/api/v1/webhooks/${id}`], ['POST', `/api/v1/webhooks/${id}/ping`],
          ['POST', `/api/v1/webhooks/${id}/rotate-secret`], ['GET', `/api/v1/webhooks/${id}/deliveries`]
        ] as const) {
          const res = await t.as(token, { method, url, ...(method === 'PATCH' ? { payload: { enabled: false } } : {}) })
          assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`)
        }
      }
      const member = await t.as(await newTenant(t).user('mia'), { method: 'GET', url: '/api/v1/webhooks' })
      assert.equal(member.statusCode, 403)
      const list = await t.as(foreign, { method: 'GET', url: '/api/v1/webhooks' })
      assert.equal(list.json<Json>().total, 0)
      const mine = await t.as(admin, { method: 'GET', url: '/api/v1/webhooks?size=1' })
      assert.equal(mine.json<Json>().total, 1)
      const deleted = await t.as(admin, { method: 'DELETE', url: `/api/v1/webhooks/${id}` })
      assert.equal(deleted.statusCode, 204)
      assert.equal((await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${id}` })).statusCode, 404)
    })

    void it('publishes a versioned JSON Schema per event type', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/schemas/webhooks/WebhookEvent.contact.created.v1.json' })
      assert.equal(res.statusCode, 200, res.body)
      assert.match(String(res.headers['content-type']), /application\/schema\+json/)
      const schema = res.json<Json>()
      assert.equal(schema.$id, `${t.config.baseUrl}/schemas/webhooks/WebhookEvent.contact.created.v1.json`)
      assert.deepEqual(schema.required, ['type', 'timestamp', 'data'])
      assert.equal(schema.properties.type.const, 'contact.created')
      assert.ok('contact_id' in schema.properties.data.properties)
      const ping = await t.app.inject({ method: 'GET', url: '/schemas/webhooks/WebhookEvent.webhook.ping.v1.json' })
      assert.equal(ping.statusCode, 200)
      const unknown = await t.app.inject({ method: 'GET', url: '/schemas/webhooks/WebhookEvent.nope.done.v1.json' })
      assert.equal(unknown.statusCode, 404)
    })

    void it('pages the delivery log by cursor', async () => {
      const { admin, sub } = await setup('/ok-5')
      for (let i = 0; i < 3; i++) await t.as(admin, { method: 'POST', url: `/api/v1/webhooks/${String(sub.id)}/ping` })
      const first = (await t.as(admin, {
        method: 'GET', url: `/api/v1/webhooks/${String(sub.id)}/deliveries?size=2`
      })).json<Json>()
      assert.equal(first.total, 3)
      assert.equal(first.items.length, 2)
      const second = (await t.as(admin, {
        method: 'GET',
        url: `/api/v1/webhooks/${String(sub.id)}/deliveries?size=2&cursor=${encodeURIComponent(first.next_cursor)}`
      })).json<Json>()
      assert.equal(second.items.length, 1)
      assert.equal(second.next_cursor, null)
      await deliverDue(engine())
    })
  })
}

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp, type TestApp } from '../../test/helpers/build-app.ts'
import { ConfigError, loadConfig, SYNC_WINDOW_MARGIN_MS, syncWindowMs, type RetentionConfig } from '../config.ts'
import { withSystem } from './db/tenant.ts'
import { pruneRetention, RETENTION_KINDS, startRetention } from './retention.ts'

const DAY = 86_400_000
const HOUR = 3_600_000

const retentionOf = (env: Record<string, string> = {}): RetentionConfig => loadConfig(env).retention

void describe('retention configuration', () => {
  void it('has the documented defaults', () => {
    assert.deepEqual({ ...retentionOf() }, {
      outbox: 7 * DAY,
      notifications: 30 * DAY,
      idempotencyKeys: 24 * HOUR,
      idpDeliveries: 90 * DAY,
      executions: 90 * DAY,
      executionsKeepPerRule: 100,
      webhookDeliveries: 30 * DAY,
      webhookAttempts: 30 * DAY,
      feedTokens: 30 * DAY,
      guestTokens: 30 * DAY,
      changes: 31 * DAY,
      audit: 365 * DAY,
      batchSize: 1000
    })
    // a sync token answers for the log's period less a day: 30 days
    assert.equal(SYNC_WINDOW_MARGIN_MS, DAY)
    assert.equal(loadConfig().syncWindowMs, 30 * DAY)
  })

  void it('reads the periods of webhook deliveries, feed tokens and the log of changes', () => {
    const r = retentionOf({
      RETENTION_WEBHOOK_DELIVERIES: '12h',
      RETENTION_FEED_TOKENS: ' 7d ',
      RETENTION_CHANGES: '2d'
    })
    assert.equal(r.webhookDeliveries, 12 * HOUR)
    assert.equal(r.feedTokens, 7 * DAY)
    assert.equal(r.changes, 2 * DAY)
    assert.equal(syncWindowMs(r), DAY, 'the window is the period less a day')
    assert.equal(loadConfig({ RETENTION_CHANGES: '90d' }).syncWindowMs, 89 * DAY)
    assert.equal(loadConfig({ RETENTION_CHANGES: '48h' }).syncWindowMs, DAY)
    const off = loadConfig({
      RETENTION_WEBHOOK_DELIVERIES: 'off', RETENTION_FEED_TOKENS: 'off', RETENTION_CHANGES: 'off'
    })
    assert.equal(off.retention.webhookDeliveries, null)
    assert.equal(off.retention.feedTokens, null)
    assert.equal(off.retention.changes, null)
    assert.equal(off.syncWindowMs, null, 'a log kept forever: a token is never too old')
  })

  void it('refuses RETENTION_CHANGES under two days, naming the variable and why', () => {
    assert.throws(() => loadConfig({ RETENTION_CHANGES: '47h' }), {
      message: 'invalid configuration: RETENTION_CHANGES must be at least 2d (the sync window is this period less a ' +
        'day), got "47h"'
    })
  })

  void it('reads minutes, hours and days, and off (kept forever)', () => {
    const r = retentionOf({
      RETENTION_OUTBOX: '90m',
      RETENTION_NOTIFICATIONS: '48h',
      RETENTION_IDEMPOTENCY_KEYS: '2d',
      RETENTION_IDP_DELIVERIES: 'off',
      RETENTION_EXECUTIONS: '3650d',
      RETENTION_EXECUTIONS_KEEP_PER_RULE: '0',
      RETENTION_BATCH_SIZE: '50'
    })
    assert.equal(r.outbox, 90 * 60_000)
    assert.equal(r.notifications, 48 * HOUR)
    assert.equal(r.idempotencyKeys, 2 * DAY)
    assert.equal(r.idpDeliveries, null)
    assert.equal(r.executions, 3650 * DAY)
    assert.equal(r.executionsKeepPerRule, 0)
    assert.equal(r.batchSize, 50)
  })

  const refused: Array<[string, string]> = [
    ['RETENTION_OUTBOX', '0'],
    ['RETENTION_OUTBOX', '0d'],
    ['RETENTION_OUTBOX', '-1d'],
    ['RETENTION_OUTBOX', '7'],
    ['RETENTION_NOTIFICATIONS', 'thirty days'],
    ['RETENTION_NOTIFICATIONS', '1.5d'],
    ['RETENTION_IDP_DELIVERIES', '3651d'],
    ['RETENTION_IDP_DELIVERIES', '999999999d'],
    ['RETENTION_EXECUTIONS', 'OFF'],
    ['RETENTION_EXECUTIONS', '1w'],
    ['RETENTION_IDEMPOTENCY_KEYS', '12h'],
    ['RETENTION_IDEMPOTENCY_KEYS', '0'],
    ['RETENTION_EXECUTIONS_KEEP_PER_RULE', '-1'],
    ['RETENTION_EXECUTIONS_KEEP_PER_RULE', 'many'],
    ['RETENTION_EXECUTIONS_KEEP_PER_RULE', '100001'],
    ['RETENTION_WEBHOOK_DELIVERIES', '0'],
    ['RETENTION_WEBHOOK_DELIVERIES', '30'],
    ['RETENTION_WEBHOOK_DELIVERIES', '3651d'],
    ['RETENTION_FEED_TOKENS', '-1d'],
    ['RETENTION_FEED_TOKENS', '1w'],
    ['RETENTION_FEED_TOKENS', 'never'],
    ['RETENTION_CHANGES', '0'],
    ['RETENTION_CHANGES', '1d'],
    ['RETENTION_CHANGES', '47h'],
    ['RETENTION_CHANGES', '2879m'],
    ['RETENTION_CHANGES', '31'],
    ['RETENTION_CHANGES', '3651d'],
    ['RETENTION_BATCH_SIZE', '0'],
    ['RETENTION_BATCH_SIZE', '1e3'],
    ['RETENTION_BATCH_SIZE', '100001']
  ]
  for (const [name, value] of refused) {
    void it(`refuses ${name}=${value} in one line naming the variable`, () => {
      assert.throws(() => loadConfig({ [name]: value }), (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.variable, name)
        assert.ok(err.message.startsWith(`invalid configuration: ${name} `), err.message)
        assert.ok(!err.message.includes('\n'))
        return true
      })
    })
  }
})

type Row = Record<string, unknown>

/** Inserts rows with the given columns into a table on the worker login (old timestamps need SQL). */
async function insert (t: TestApp, table: string, rows: Row[]): Promise<void> {
  if (rows.length === 0) return
  const columns = Object.keys(rows[0] ?? {})
  await withSystem(
    t.ctx.db,
    async trx =>
      await sql`insert into ${sql.table(table)} (${sql.join(columns.map(c => sql.ref(c)))})
    values ${sql.join(rows.map(r => sql`(${sql.join(columns.map(c => r[c]))})`))}`.execute(trx)
  )
}

/**
 * Copies an execution with some columns changed: json_populate_record keeps every other column
 * (whatever the table has), so the test does not depend on the executions' exact columns.
 */
async function copyExecution (t: TestApp, tenantId: string, fromId: string, changes: Row): Promise<string> {
  const id = crypto.randomUUID()
  await withSystem(
    t.ctx.db,
    async trx =>
      await sql`insert into automation_executions
    select (json_populate_record(e,
      ${JSON.stringify({ ...changes, id, trigger_key: changes.trigger_key ?? `test:${id}` })}::json)).*
    from automation_executions e where e.tenant_id = ${tenantId} and e.id = ${fromId}::uuid`.execute(trx)
  )
  return id
}

async function count (t: TestApp, table: string, tenantId: string, where = sql`true`): Promise<number> {
  const { rows } = await withSystem(
    t.ctx.db,
    async trx =>
      await sql<{
        n: number
      }>`select count(*)::int as n from ${sql.table(table)} where tenant_id = ${tenantId} and ${where}`.execute(trx)
  )
  return Number(rows[0]?.n ?? 0)
}

const ago = (now: Date, ms: number): Date => new Date(now.getTime() - ms)

function outboxRow (tenantId: string, created: Date, processed: Date | null): Row {
  return {
    tenant_id: tenantId,
    topic: 'test.old',
    aggregate_type: 'test',
    aggregate_id: '1',
    payload: '{}',
    created_at: created,
    processed_at: processed
  }
}

function notificationRow (tenantId: string, status: string, created: Date): Row {
  return {
    tenant_id: tenantId,
    channel: 'email',
    recipient: 'someone@example.test',
    subject: 'old',
    body: 'old',
    status,
    created_at: created
  }
}

/** A rule (through the API) and one manual execution of it, the model other executions are copied from. */
async function ruleWithExecution (t: TestApp, token: string): Promise<{ ruleId: string, executionId: string }> {
  const rule = await t.as(token, {
    method: 'POST',
    url: '/api/v1/automation/rules',
    payload: {
      name: 'Retained',
      scope: 'GLOBAL',
      schedule: { event_type: 'contact.created' },
      conditions: {},
      actions: [{ type: 'notify', to: 'creator', subject: 's', body: 'b' }]
    }
  })
  assert.equal(rule.statusCode, 201, rule.body)
  const run = await t.as(token, {
    method: 'POST',
    url: `/api/v1/automation/rules/${rule.json().id}/execute`,
    payload: {}
  })
  assert.equal(run.statusCode, 202, run.body)
  return { ruleId: rule.json().id, executionId: run.json().id }
}

for (const kind of databases()) {
  void describe(`${kind}: retention`, () => {
    const t = useTestApp(kind)

    void it('prunes every kind past its period, keeps what is still needed and what is new', async () => {
      const tenant = newTenant(t)
      const tid = tenant.id
      const alice = await tenant.user('alice')
      const now = new Date()

      // new rows through the API: a contact (an unprocessed domain event) with an Idempotency-Key, a rule, manual runs
      const contact = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts',
        headers: { 'idempotency-key': 'retention-1' },
        payload: { first_name: 'Ada', email: 'ada@example.org' }
      })
      assert.equal(contact.statusCode, 201, contact.body)
      const { ruleId, executionId } = await ruleWithExecution(t, alice)
      assert.equal(
        (await t.as(alice, { method: 'POST', url: `/api/v1/automation/rules/${ruleId}/execute`, payload: {} }))
          .statusCode,
        202
      )
      const apiOutbox = await count(t, 'outbox', tid)
      assert.ok(apiOutbox >= 2)

      // old and recent rows with SQL
      await insert(t, 'outbox', [
        ...Array.from({ length: 5 }, () => outboxRow(tid, ago(now, 30 * DAY), ago(now, 20 * DAY))),
        ...Array.from({ length: 2 }, () => outboxRow(tid, ago(now, 30 * DAY), null)), // never dispatched: still needed
        ...Array.from({ length: 2 }, () => outboxRow(tid, ago(now, 2 * DAY), ago(now, DAY)))
      ])
      await insert(t, 'notification_outbox', [
        ...['sent', 'sent', 'failed', 'undeliverable'].map(s => notificationRow(tid, s, ago(now, 40 * DAY))),
        ...['pending', 'pending'].map(s => notificationRow(tid, s, ago(now, 40 * DAY))), // retries still due: kept
        ...['sent', 'failed'].map(s => notificationRow(tid, s, ago(now, DAY)))
      ])
      const key = (k: string, created: Date, expires: Date): Row => ({
        tenant_id: tid,
        user_id: 'alice',
        key: k,
        method: 'POST',
        path: '/api/v1/contacts',
        request_hash: 'h',
        status_code: 201,
        response_body: '{}',
        created_at: created,
        expires_at: expires
      })
      await insert(t, 'idempotency_keys', [
        key('old-1', ago(now, 3 * DAY), ago(now, 2 * DAY)),
        key('old-2', ago(now, 2 * DAY), ago(now, DAY)),
        // older than the period but still inside its replay window: kept until it expires
        key('window', ago(now, 2 * DAY), new Date(now.getTime() + HOUR)),
        key('recent', ago(now, HOUR), new Date(now.getTime() + 23 * HOUR))
      ])
      const delivery = (seq: number, received: Date): Row => ({
        tenant_id: tid,
        instance_id: 'i',
        aggregate_id: 'u1',
        sequence: seq,
        event_type: 'user.human.changed',
        outcome: 'applied',
        received_at: received
      })
      await insert(t, 'idp_deliveries', [
        delivery(1, ago(now, 100 * DAY)),
        delivery(2, ago(now, 95 * DAY)),
        delivery(3, ago(now, 10 * DAY))
      ])

      const old = ago(now, 100 * DAY)
      const doomed = [
        await copyExecution(t, tid, executionId, { status: 'succeeded', created_at: old }),
        await copyExecution(t, tid, executionId, { status: 'failed', created_at: old }),
        await copyExecution(t, tid, executionId, { status: 'skipped', created_at: old }),
        // a relative trigger whose moment is long past: the scheduler cannot fire it again
        await copyExecution(t, tid, executionId, {
          status: 'succeeded',
          created_at: old,
          trigger_key: `starts_in:1:${ago(now, 99 * DAY).toISOString()}:1440`
        })
      ]
      const kept = [
        await copyExecution(t, tid, executionId, { status: 'queued', created_at: old }),
        await copyExecution(t, tid, executionId, { status: 'running', created_at: old }),
        // due until an hour after an event that starts in ten days: deleting it would let it fire again
        await copyExecution(t, tid, executionId, {
          status: 'succeeded',
          created_at: old,
          trigger_key: `starts_in:1:${new Date(now.getTime() + 10 * DAY).toISOString()}:525600`
        }),
        await copyExecution(t, tid, executionId, { status: 'succeeded', created_at: ago(now, DAY) })
      ]
      const executionsBefore = await count(t, 'automation_executions', tid)

      const retention = retentionOf({ RETENTION_EXECUTIONS_KEEP_PER_RULE: '2' })
      const first = await pruneRetention(t.ctx.db, { retention, now })
      assert.equal(first.complete, true)
      assert.ok(first.kinds.outbox.deleted >= 5)

      assert.equal(
        await count(t, 'outbox', tid),
        apiOutbox + 2 + 2,
        'old processed events gone; unprocessed and recent kept'
      )
      assert.equal(await count(t, 'outbox', tid, sql`processed_at is null`), apiOutbox + 2)
      assert.equal(await count(t, 'notification_outbox', tid), 2 + 2)
      assert.equal(await count(t, 'notification_outbox', tid, sql`status = 'pending'`), 2)
      assert.deepEqual(
        (
          await withSystem(
            t.ctx.db,
            async trx =>
              await trx
                .selectFrom('idempotency_keys')
                .select('key')
                .where('tenant_id', '=', tid)
                .orderBy('key')
                .execute()
          )
        ).map(r => r.key),
        ['recent', 'retention-1', 'window']
      )
      assert.equal(await count(t, 'idp_deliveries', tid), 1)
      assert.equal(await count(t, 'automation_executions', tid), executionsBefore - doomed.length)
      for (const id of kept) {
        assert.equal(await count(t, 'automation_executions', tid, sql`id = ${id}::uuid`), 1, `execution ${id} kept`)
      }
      for (const id of doomed) {
        assert.equal(await count(t, 'automation_executions', tid, sql`id = ${id}::uuid`), 0, `execution ${id} deleted`)
      }
      // the history the API shows holds what is left
      const history = await t.as(alice, {
        method: 'GET',
        url: `/api/v1/automation/rules/${ruleId}/executions?size=100`
      })
      assert.equal(history.statusCode, 200, history.body)
      assert.equal(history.json().total, executionsBefore - doomed.length)

      // a second pass at the same time finds nothing
      assert.equal((await pruneRetention(t.ctx.db, { retention, now })).deleted, 0)

      // eight days later: the recent processed events and every expired key go too; the rest stays
      const later = new Date(now.getTime() + 8 * DAY)
      await pruneRetention(t.ctx.db, { retention, now: later })
      assert.equal(await count(t, 'outbox', tid), apiOutbox + 2)
      assert.equal(await count(t, 'outbox', tid, sql`processed_at is not null`), 0)
      assert.equal(await count(t, 'idempotency_keys', tid), 0)
      assert.equal(await count(t, 'notification_outbox', tid), 4)
      assert.equal(await count(t, 'idp_deliveries', tid), 1)

      // with the executions' period off, nothing of them is pruned even a year later; the others are
      const executionsLeft = await count(t, 'automation_executions', tid)
      const yearLater = new Date(now.getTime() + 365 * DAY)
      const r = await pruneRetention(t.ctx.db, { retention: { ...retention, executions: null }, now: yearLater })
      assert.equal(r.kinds.executions.statements, 0)
      assert.equal(await count(t, 'automation_executions', tid), executionsLeft)
      assert.equal(await count(t, 'notification_outbox', tid), 2, 'only the pending notifications are left')
      assert.equal(await count(t, 'idp_deliveries', tid), 0)
    })

    void it('prunes finished webhook deliveries and revoked feed tokens past their periods', async () => {
      const tenant = newTenant(t)
      const tid = tenant.id
      const admin = await tenant.user('root', ['admin'])
      const alice = await tenant.user('alice')
      const now = new Date()

      // a subscription through the API (no worker delivers here), its delivery log with SQL
      const created = await t.as(admin, {
        method: 'POST',
        url: '/api/v1/webhooks',
        payload: { url: 'https://93.184.215.14/hook', event_types: ['contact.created'] }
      })
      assert.equal(created.statusCode, 201, created.body)
      const subId = created.json().id as string
      const delivery = (status: string, o: { created: Date, last: Date | null, next: Date | null }): Row => ({
        tenant_id: tid,
        id: crypto.randomUUID(),
        subscription_id: subId,
        msg_id: `msg_${crypto.randomUUID().replaceAll('-', '')}`,
        event_type: 'contact.created',
        body: '{}',
        status,
        attempts: o.last === null ? 0 : 1,
        last_attempt_at: o.last,
        next_attempt_at: o.next,
        created_at: o.created
      })
      const old = ago(now, 40 * DAY)
      const gone = [
        delivery('succeeded', { created: old, last: old, next: null }),
        // given up after its last retry
        delivery('failed', { created: ago(now, 45 * DAY), last: ago(now, 35 * DAY), next: null })
      ]
      const stay = [
        // waiting for a retry, and due (never attempted): whatever their age
        delivery('pending', { created: old, last: old, next: new Date(now.getTime() + HOUR) }),
        delivery('pending', { created: old, last: null, next: old }),
        // redelivered: created long ago, its last attempt recent
        delivery('failed', { created: ago(now, 60 * DAY), last: ago(now, 2 * DAY), next: null }),
        delivery('succeeded', { created: ago(now, DAY), last: ago(now, DAY), next: null })
      ]
      await insert(t, 'webhook_deliveries', [...gone, ...stay])

      // feed tokens through the API: one revoked long ago, one revoked now, one live for a year
      const token = async (): Promise<{ id: number, url: string }> => {
        const res = await t.as(alice, { method: 'POST', url: '/api/v1/feed-tokens', payload: { scope: 'personal' } })
        assert.equal(res.statusCode, 201, res.body)
        return res.json()
      }
      const [revokedLongAgo, revokedNow, live] = [await token(), await token(), await token()]
      for (const { id } of [revokedLongAgo, revokedNow]) {
        assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/feed-tokens/${id}` })).statusCode, 204)
      }
      await withSystem(t.ctx.db, async trx => {
        await sql`update feed_tokens set revoked_at = ${ago(now, 31 * DAY)}
          where tenant_id = ${tid} and id = ${revokedLongAgo.id}`.execute(trx)
        await sql`update feed_tokens set created_at = ${ago(now, 365 * DAY)}
          where tenant_id = ${tid} and id = ${live.id}`.execute(trx)
      })
      const feed = async (url: string): Promise<number> =>
        (await t.app.inject({ method: 'GET', url: url.replace(/^https?:\/\/[^/]+/, '') })).statusCode
      // a revoked token answers as an unknown one, before it is pruned and after
      assert.equal(await feed(revokedLongAgo.url), 404)

      const retention = retentionOf()
      const r = await pruneRetention(t.ctx.db, { retention, now })
      assert.equal(r.complete, true)
      assert.equal(r.kinds.webhookDeliveries.deleted, gone.length)
      assert.equal(r.kinds.feedTokens.deleted, 1)

      // the delivery log the API shows holds what is left; a pruned delivery is unknown
      const log = await t.as(admin, { method: 'GET', url: `/api/v1/webhooks/${subId}/deliveries?size=100` })
      assert.equal(log.statusCode, 200, log.body)
      const ids = (log.json().items as Array<{ id: string }>).map(d => d.id).sort()
      assert.deepEqual(ids, stay.map(d => d.id as string).sort())
      const redeliver = await t.as(admin, {
        method: 'POST',
        url: `/api/v1/webhooks/${subId}/deliveries/${gone[0]?.id as string}/redeliver`
      })
      assert.equal(redeliver.statusCode, 404, redeliver.body)

      const tokenIds = async (): Promise<number[]> =>
        (await withSystem(t.ctx.db, async trx =>
          await sql<{ id: string }>`select id from feed_tokens where tenant_id = ${tid} order by id`.execute(trx)))
          .rows.map(row => Number(row.id))
      assert.deepEqual(await tokenIds(), [revokedNow.id, live.id])
      assert.equal(await feed(revokedLongAgo.url), 404)
      assert.equal(await feed(revokedNow.url), 404)
      assert.equal(await feed(live.url), 200, 'a live token is never pruned, however old')

      // 31 days later: the token revoked now and the finished deliveries go; pending deliveries and the live token stay
      const later = new Date(now.getTime() + 31 * DAY)
      const r2 = await pruneRetention(t.ctx.db, { retention, now: later })
      assert.equal(r2.kinds.webhookDeliveries.deleted, 2)
      assert.equal(r2.kinds.feedTokens.deleted, 1)
      assert.equal(await count(t, 'webhook_deliveries', tid), 2)
      assert.equal(await count(t, 'webhook_deliveries', tid, sql`status = 'pending'`), 2)
      assert.deepEqual(await tokenIds(), [live.id])
      assert.equal(await feed(live.url), 200)

      // off: kept forever
      await insert(t, 'webhook_deliveries', [delivery('succeeded', { created: old, last: old, next: null })])
      const r3 = await pruneRetention(t.ctx.db, {
        retention: { ...retention, webhookDeliveries: null, feedTokens: null },
        now: new Date(now.getTime() + 365 * DAY)
      })
      assert.equal(r3.kinds.webhookDeliveries.statements, 0)
      assert.equal(r3.kinds.feedTokens.statements, 0)
      assert.equal(await count(t, 'webhook_deliveries', tid), 3)
    })

    void it('prunes the log of changes after RETENTION_CHANGES', async () => {
      const now = new Date()
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      // a contact written through the API logs a change (PostgreSQL and PGlite: migration 0026's triggers)
      const contact = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts',
        payload: { first_name: 'Grace', email: 'grace@example.org' }
      })
      assert.equal(contact.statusCode, 201, contact.body)
      const logged = await count(t, 'changes', tenant.id)
      assert.ok(logged >= 1)
      const retention = retentionOf({ RETENTION_CHANGES: '10d' })
      // nine days on: inside the period, kept
      await pruneRetention(t.ctx.db, { retention, now: new Date(now.getTime() + 9 * DAY) })
      assert.equal(await count(t, 'changes', tenant.id), logged)
      // the default (31 days) keeps them ten days on; RETENTION_CHANGES=10d does not
      await pruneRetention(t.ctx.db, { retention: retentionOf(), now: new Date(now.getTime() + 10 * DAY + HOUR) })
      assert.equal(await count(t, 'changes', tenant.id), logged)
      const r = await pruneRetention(t.ctx.db, { retention, now: new Date(now.getTime() + 10 * DAY + HOUR) })
      assert.ok(r.kinds.changes.deleted >= logged)
      assert.equal(await count(t, 'changes', tenant.id), 0)
    })

    void it('keeps the newest executions of each rule whatever their age', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const now = new Date()
      const { executionId } = await ruleWithExecution(t, alice)
      await withSystem(
        t.ctx.db,
        async trx =>
          await sql`update automation_executions set status = 'succeeded', created_at = ${ago(now, 200 * DAY)}
            where id = ${executionId}::uuid`.execute(
            trx
          )
      )
      // six old executions, one a day: with 4 kept per rule the two oldest go (and the API's, the oldest of all)
      const ids: string[] = []
      for (let i = 0; i < 6; i++) {
        ids.push(
          await copyExecution(t, tenant.id, executionId, { status: 'succeeded', created_at: ago(now, (150 - i) * DAY) })
        )
      }
      const r = await pruneRetention(t.ctx.db, {
        retention: retentionOf({ RETENTION_EXECUTIONS_KEEP_PER_RULE: '4' }),
        now
      })
      assert.equal(r.kinds.executions.deleted, 3)
      const left = await withSystem(
        t.ctx.db,
        async trx =>
          await trx
            .selectFrom('automation_executions')
            .select('id')
            .where('tenant_id', '=', tenant.id)
            .orderBy('created_at')
            .execute()
      )
      assert.deepEqual(left.map(e => e.id), ids.slice(2))
    })

    void it('deletes a batch per statement, over several rounds', async () => {
      const tenant = newTenant(t)
      const tid = tenant.id
      const alice = await tenant.user('alice')
      const now = new Date()
      await insert(
        t,
        'outbox',
        Array.from({ length: 25 }, () => outboxRow(tid, ago(now, 30 * DAY), ago(now, 30 * DAY)))
      )
      const { executionId } = await ruleWithExecution(t, alice)
      for (let i = 0; i < 23; i++) {
        await copyExecution(t, tid, executionId, { status: 'succeeded', created_at: ago(now, (200 - i) * DAY) })
      }
      const retention = retentionOf({ RETENTION_BATCH_SIZE: '10', RETENTION_EXECUTIONS_KEEP_PER_RULE: '0' })

      // one statement per kind per round: 10, 10, 5
      const rounds: number[] = []
      for (;;) {
        const r = await pruneRetention(t.ctx.db, { retention, now, maxStatements: 1 })
        for (const k of RETENTION_KINDS) {
          assert.ok(r.kinds[k].largest <= 10, `${k}: ${r.kinds[k].largest} rows in one statement`)
        }
        rounds.push(r.kinds.outbox.deleted)
        if (r.complete) break
        assert.ok(rounds.length < 10)
      }
      assert.deepEqual(rounds.slice(0, 3), [10, 10, 5])
      assert.equal(await count(t, 'outbox', tid, sql`processed_at is not null`), 0)
      // the executions (the one queued by the API stays) went the same way
      assert.equal(await count(t, 'automation_executions', tid), 1)

      // in one call: as many statements as batches, none above the batch
      await insert(
        t,
        'outbox',
        Array.from({ length: 35 }, () => outboxRow(tid, ago(now, 30 * DAY), ago(now, 30 * DAY)))
      )
      const all = await pruneRetention(t.ctx.db, { retention, now })
      assert.equal(all.kinds.outbox.deleted, 35)
      assert.equal(all.kinds.outbox.statements, 4)
      assert.equal(all.kinds.outbox.largest, 10)
    })

    void it('prunes tenant by tenant: each statement deletes one tenant\'s rows, a batch at a time', async () => {
      const now = new Date()
      // nothing else prunable at this clock: earlier tests pruned it
      await pruneRetention(t.ctx.db, { retention: retentionOf(), now })
      const [a, b, c] = [newTenant(t).id, newTenant(t).id, newTenant(t).id]
      await insert(t, 'outbox', [
        ...Array.from({ length: 12 }, () => outboxRow(a, ago(now, 30 * DAY), ago(now, 30 * DAY))),
        ...Array.from({ length: 3 }, () => outboxRow(b, ago(now, 30 * DAY), ago(now, 30 * DAY))),
        ...Array.from({ length: 2 }, () => outboxRow(c, ago(now, 2 * DAY), ago(now, DAY)))
      ])
      const r = await pruneRetention(t.ctx.db, { retention: retentionOf({ RETENTION_BATCH_SIZE: '10' }), now })
      assert.equal(r.complete, true)
      // a: 10 then 2; b: 3; c has nothing old enough
      assert.deepEqual(r.kinds.outbox, { deleted: 15, statements: 3, largest: 10 })
      assert.deepEqual(
        [await count(t, 'outbox', a), await count(t, 'outbox', b), await count(t, 'outbox', c)],
        [0, 0, 2]
      )
    })

    void it('calls with a small maxStatements get past tenants whose old executions are all kept', async () => {
      const now = new Date()
      const retention = retentionOf({ RETENTION_BATCH_SIZE: '5', RETENTION_EXECUTIONS_KEEP_PER_RULE: '1' })
      // nothing else prunable at this clock
      await pruneRetention(t.ctx.db, { retention, now })
      // two tenants whose one old execution is the newest of its rule (kept), one with twelve to delete
      for (let i = 0; i < 2; i++) {
        const tenant = newTenant(t)
        const { executionId } = await ruleWithExecution(t, await tenant.user('alice'))
        await withSystem(
          t.ctx.db,
          async trx =>
            await sql`update automation_executions set status = 'succeeded', created_at = ${ago(now, 200 * DAY)}
              where id = ${executionId}::uuid`.execute(
              trx
            )
        )
      }
      const busy = newTenant(t)
      const { executionId } = await ruleWithExecution(t, await busy.user('alice'))
      for (let i = 0; i < 12; i++) {
        await copyExecution(t, busy.id, executionId, { status: 'succeeded', created_at: ago(now, (150 - i) * DAY) })
      }
      let calls = 0
      let deleted = 0
      for (;;) {
        const r = await pruneRetention(t.ctx.db, { retention, now, maxStatements: 1 })
        calls++
        deleted += r.kinds.executions.deleted
        assert.ok(r.kinds.executions.statements <= 1)
        if (r.complete) break
        assert.ok(calls < 12, 'calls go on from where the last one stopped')
      }
      assert.equal(deleted, 12)
      // the API's execution (the newest of its rule) is what is left of the busy tenant
      assert.equal(await count(t, 'automation_executions', busy.id), 1)
      // the kept ones go with no execution kept per rule (the next tests count what is deleted)
      assert.equal(
        (await pruneRetention(t.ctx.db, { retention: { ...retention, executionsKeepPerRule: 0 }, now })).kinds
          .executions.deleted,
        2
      )
    })

    void it('two passes at once never fail and delete each row once', async () => {
      const tenant = newTenant(t)
      const tid = tenant.id
      const alice = await tenant.user('alice')
      const now = new Date()
      // nothing else prunable at this clock: earlier tests pruned it
      await pruneRetention(t.ctx.db, { retention: retentionOf(), now })
      await insert(
        t,
        'outbox',
        Array.from({ length: 1500 }, () => outboxRow(tid, ago(now, 30 * DAY), ago(now, 30 * DAY)))
      )
      await insert(
        t,
        'notification_outbox',
        Array.from({ length: 300 }, () => notificationRow(tid, 'sent', ago(now, 60 * DAY)))
      )
      const { executionId } = await ruleWithExecution(t, alice)
      for (let i = 0; i < 60; i++) {
        await copyExecution(t, tid, executionId, { status: 'succeeded', created_at: ago(now, 100 * DAY + i * 1000) })
      }
      const retention = retentionOf({ RETENTION_BATCH_SIZE: '50', RETENTION_EXECUTIONS_KEEP_PER_RULE: '0' })

      const [a, b] = await Promise.all([
        pruneRetention(t.ctx.db, { retention, now }),
        pruneRetention(t.ctx.db, { retention, now })
      ])
      assert.equal(a.kinds.outbox.deleted + b.kinds.outbox.deleted, 1500)
      assert.equal(a.kinds.notifications.deleted + b.kinds.notifications.deleted, 300)
      assert.equal(a.kinds.executions.deleted + b.kinds.executions.deleted, 60)
      assert.ok(a.kinds.outbox.largest <= 50 && b.kinds.outbox.largest <= 50)
      assert.equal(await count(t, 'outbox', tid, sql`processed_at is not null`), 0)
      assert.equal(await count(t, 'notification_outbox', tid), 0)
      assert.equal(await count(t, 'automation_executions', tid), 1)
    })

    void it('runs as a background loop that the app stops', async () => {
      const tenant = newTenant(t)
      const now = new Date()
      await insert(t, 'idp_deliveries', [
        {
          tenant_id: tenant.id,
          instance_id: 'i',
          aggregate_id: 'u',
          sequence: 1,
          event_type: 'x',
          outcome: 'applied',
          received_at: ago(now, 91 * DAY)
        }
      ])
      const lines: string[] = []
      const log = {
        info: (_o: unknown, msg: string) => {
          lines.push(msg)
        },
        error: (_o: unknown, msg: string) => {
          lines.push(msg)
        }
      }
      const loop = startRetention(t.ctx.db, retentionOf(), log as never, () => now)
      const r = await loop.tick()
      assert.equal(r?.kinds.idpDeliveries.deleted, 1)
      // the pass prunes, then folds the kept counts that earlier tests' writes left as delta rows; it never fails
      assert.equal(lines[0], 'retention: pruned old rows')
      assert.deepEqual(
        lines.filter(l => !/^retention: (event list|contact and execution) counts folded$/.test(l)),
        ['retention: pruned old rows']
      )
      await loop.stop()
      assert.equal(await loop.tick(), undefined, 'no pass after stop')
    })
  })
}

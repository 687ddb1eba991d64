import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { emit } from '../../platform/outbox.ts'
import { verifySignature } from '../identity/identity.idp-signature.ts'
import { addManager, createEvent, publishEvent, type Json } from '../events/events.fixtures.ts'
import { insertContacts } from '../attendees/attendees.fixtures.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { queuedNotifications } from '../../../test/helpers/outbox.ts'
import {
  addAttendee, addContact, drain, engineAt, eventAutomation, eventRule, executeRule, executions, rule
} from './automation.fixtures.ts'
import { TenantWorkError } from '../../platform/tenant-batches.ts'
import { claimExecution, handleJob, runExecution, sweepExecutions } from './automation.runner.ts'
import { dispatchOutbox, type DispatchResult } from './automation.dispatcher.ts'
import { MAX_DEPTH, type Engine } from './automation.engine.ts'
import { tickSchedules } from './automation.scheduler.ts'
import { EXPIRE_SEC, MAX_ATTEMPTS, QUEUE } from './automation.queue.ts'

interface Hook { status: number, received: Array<{ headers: http.IncomingHttpHeaders, body: string }> }

/** A local HTTP receiver on 127.0.0.1 answering `hook.status`. */
function useReceiver (): { hook: Hook, url: () => string } {
  const hook: Hook = { status: 200, received: [] }
  let server: http.Server | undefined
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        hook.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
        res.writeHead(hook.status).end()
      })
    })
    await new Promise<void>(resolve => server?.listen(0, '127.0.0.1', resolve))
  })
  after(async () => { await new Promise(resolve => server?.close(resolve)) })
  return { hook, url: () => `http://127.0.0.1:${(server?.address() as AddressInfo).port}/hook` }
}

async function activityKinds (t: TestApp, token: string, eventId: number): Promise<string[]> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/activity` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().items.map((r: Json) => r.kind)
}

async function attendeeStatuses (t: TestApp, token: string, eventId: number): Promise<Record<string, string>> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/attendees?size=100` })
  assert.equal(res.statusCode, 200, res.body)
  return Object.fromEntries(res.json().items.map((a: Json) => [a.contact_id, a.status]))
}

for (const kind of databases()) {
  void describe(`${kind}: automation engine`, () => {
    const t = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })
    const receiver = useReceiver()
    const clock = { now: new Date() }

    void it('runs a rule on a domain event: dispatch creates a queued execution and a job, ' +
      'the run applies the action once', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const r = await rule(t, alice, {
        schedule: { event_type: 'event.published' },
        actions: [{ type: 'activity', message: 'published {{title}}' }]
      })
      const event = await createEvent(t, alice, { title: 'Gala' })
      await publishEvent(t, alice, event.id)
      const d = await dispatchOutbox(engine)
      assert.ok(d.executions >= 1)
      const [queued] = await executions(t, alice, r.id)
      assert.deepEqual(
        [queued?.status, queued?.trigger_type, queued?.trigger.event_id, queued?.trigger.title],
        ['queued', 'event.published', event.id, 'Gala']
      )
      const boss = await engine.queue.ready()
      const jobs = await boss.fetch<{ executionId: string }>(QUEUE, { batchSize: 100 })
      const job = jobs.find(j => j.data.executionId === queued?.id)
      assert.ok(job !== undefined, 'a job was sent with the execution')
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: queued?.id as string }), 'succeeded')
      await boss.complete(QUEUE, job.id)
      const [done] = await executions(t, alice, r.id)
      assert.equal(done?.status, 'succeeded')
      assert.equal(done?.attempts, 1)
      assert.equal(done?.conditions_met, true)
      assert.deepEqual(
        done?.action_results.map((a: Json) => [a.type, a.status]),
        [['activity', 'succeeded']]
      )
      assert.ok(done?.started_at !== null && done?.finished_at !== null)
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: queued?.id as string }), 'done')
      assert.equal((await activityKinds(t, alice, event.id)).filter(k => k === 'automation').length, 1)
      // the outbox row is processed: dispatching again creates nothing
      assert.equal((await dispatchOutbox(engine)).executions, 0)
      assert.equal((await executions(t, alice, r.id)).length, 1)
    })

    void it('fires template-qualified triggers and evaluates conditions over the payload', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const qualified = await rule(t, alice, {
        schedule: { event_type: 'announcement.published' },
        actions: [{ type: 'notify', to: 'creator', subject: 'Out: {{title}}', body: 'v{{template_version}}' }]
      })
      const conditional = await rule(t, alice, {
        schedule: { event_type: 'contact.created' },
        conditions: {
          and: [{ '==': [{ var: 'payload.source' }, 'api'] }, { in: ['@vip.test', { var: 'payload.email' }] }]
        },
        actions: [{ type: 'webhook', url: receiver.url() }]
      })
      const generic = await createEvent(t, alice, { title: 'Plain' })
      await publishEvent(t, alice, generic.id)
      const news = await createEvent(t, alice, { title: 'News', template: 'announcement' })
      await publishEvent(t, alice, news.id)
      await addContact(t, alice, 'ann@vip.test')
      await addContact(t, alice, 'bob@other.test')
      await drain(engine)
      const q = await executions(t, alice, qualified.id)
      assert.deepEqual(q.map(e => [e.status, e.trigger.event_id]), [['succeeded', news.id]])
      const sent = await queuedNotifications(t, tenant.id)
      assert.deepEqual(sent.map(n => [n.recipient, n.subject]), [['user:alice', 'Out: News']])
      const c = await executions(t, alice, conditional.id)
      assert.deepEqual(
        c
          .map(e => [e.trigger.email, e.status, e.conditions_met, e.condition_results.map((r: Json) => r.result)])
          .sort(),
        [
          ['ann@vip.test', 'succeeded', true, [true, true]],
          ['bob@other.test', 'skipped', false, [true, false]]
        ]
      )
    })

    void it('notifies attendees by status and managers, and sets attendee status ' +
      '(its domain event carries depth + 1)', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const event = await createEvent(t, alice, { title: 'Dinner' })
      const ann = await addContact(t, alice, 'ann@example.test')
      const bob = await addContact(t, alice, 'bob@example.test')
      const cid = await addContact(t, alice, 'cid@example.test')
      await addAttendee(t, tenant.id, event.id, ann, 'invited')
      await addAttendee(t, tenant.id, event.id, bob, 'confirmed')
      await addAttendee(t, tenant.id, event.id, cid, 'declined')
      await addManager(t, tenant.id, event.id, 'mia', { role: 'event_manager:full' })
      const a = await eventAutomation(t, alice, event.id, {
        name: 'Nudge',
        trigger: { type: 'event.updated' },
        actions: [
          {
            type: 'notify',
            to: 'attendees',
            attendee_status: ['invited', 'confirmed'],
            subject: 'See you at {{title}}',
            body: 'b'
          },
          { type: 'notify', to: 'managers', channel: 'push', priority: 'high', subject: 'Heads up', body: 'b' },
          { type: 'set_attendee_status', from_status: ['invited'], status: 'tentative' }
        ]
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/automations/${a.id}/execute`, 202)
      await drain(engine)
      const [ex] = (
        await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/automations/${a.id}/executions` })
      ).json().items
      assert.equal(ex.status, 'succeeded', JSON.stringify(ex))
      assert.deepEqual(
        ex.action_results.map((r: Json) => r.recipients ?? r.updated),
        [2, 1, 1]
      )
      const sent = await queuedNotifications(t, tenant.id)
      assert.deepEqual(
        sent.map(n => [n.recipient, n.subject, n.channel, n.priority]),
        [
          ['ann@example.test', 'See you at Dinner', 'email', 'normal'],
          ['bob@example.test', 'See you at Dinner', 'email', 'normal'],
          ['user:mia', 'Heads up', 'push', 'high']
        ]
      )
      assert.deepEqual(await attendeeStatuses(t, alice, event.id), {
        [ann]: 'tentative',
        [bob]: 'confirmed',
        [cid]: 'declined'
      })
      const changed = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx
          .selectFrom('outbox')
          .select(['topic', 'depth', 'payload'])
          .where('tenant_id', '=', tenant.id)
          .where('topic', '=', 'attendee.status_changed')
          .execute()
      )
      assert.deepEqual(
        changed.map(c => [c.depth, c.payload.contact_id, c.payload.status, c.payload.previous_status]),
        [[1, ann, 'tentative', 'invited']]
      )
    })

    void it('confirms attendees through registration (capacity, waitlist) ' +
      'and marks no-shows after the end', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const over = { start_dt: '2020-01-01T10:00:00Z', end_dt: '2020-01-01T12:00:00Z' }
      const event = await createEvent(t, alice, { title: 'Seats', ...over })
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}/registration`, 200,
        { capacity: 1, waitlist_enabled: true })
      const ann = await addContact(t, alice, 'ann@example.test')
      const bob = await addContact(t, alice, 'bob@example.test')
      await addAttendee(t, tenant.id, event.id, ann, 'invited')
      await addAttendee(t, tenant.id, event.id, bob, 'invited')
      const a = await eventAutomation(t, alice, event.id, {
        name: 'Confirm all',
        trigger: { type: 'event.updated' },
        actions: [{ type: 'set_attendee_status', from_status: ['invited'], status: 'confirmed' }]
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/automations/${a.id}/execute`, 202)
      await drain(engine)
      // one seat: the first added gets it, the second waits (not two confirmed past capacity)
      assert.deepEqual(await attendeeStatuses(t, alice, event.id), { [ann]: 'confirmed', [bob]: 'waitlisted' })

      const n = await eventAutomation(t, alice, event.id, {
        name: 'No-shows',
        trigger: { type: 'event.updated' },
        actions: [{ type: 'mark_no_shows' }]
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/automations/${n.id}/execute`, 202)
      await drain(engine)
      const runs = (await t.as(alice, {
        method: 'GET', url: `/api/v1/events/${event.id}/automations/${n.id}/executions`
      })).json().items as Json[]
      assert.deepEqual(runs.map(r => [r.status, (r.action_results as Json[])[0]?.marked]), [['succeeded', 1]])
      assert.deepEqual(await attendeeStatuses(t, alice, event.id), { [ann]: 'no_show', [bob]: 'waitlisted' })
    })

    void it('transitions the event through its state machine, and fails at once on an illegal move', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const event = await createEvent(t, alice, { title: 'Parcel', template: 'delivery' })
      const ship = await eventRule(t, alice, event.id, {
        actions: [{ type: 'transition', to_state: 'in_transit', reason: 'scanned' }]
      })
      const deliver = await eventRule(t, alice, event.id, { actions: [{ type: 'transition', to_state: 'delivered' }] })
      await executeRule(t, alice, ship.id)
      await drain(engine)
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}` })).json().state, 'in_transit')
      assert.equal((await executions(t, alice, ship.id))[0]?.status, 'succeeded')
      await executeRule(t, alice, deliver.id)
      await drain(engine)
      const [failed] = await executions(t, alice, deliver.id)
      assert.deepEqual([failed?.status, failed?.attempts], ['failed', 1])
      assert.match(failed?.error, /proof_of_delivery/)
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}` })).json().state, 'in_transit')
    })

    void it('calls a webhook with a signed body; refuses private addresses and plain http elsewhere', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      receiver.hook.status = 200
      const secret = 'a-very-long-webhook-secret'
      const ok = await rule(t, alice, {
        schedule: { event_type: 'contact.created' },
        actions: [{ type: 'webhook', url: receiver.url(), secret }]
      })
      const before = receiver.hook.received.length
      await addContact(t, alice, 'hook@example.test')
      await drain(engine)
      const [ex] = await executions(t, alice, ok.id)
      assert.equal(ex?.status, 'succeeded', JSON.stringify(ex))
      assert.equal(ex?.action_results[0].http_status, 200)
      const got = receiver.hook.received.slice(before).find(r => JSON.parse(r.body).rule_id === ok.id)
      assert.ok(got !== undefined)
      assert.equal(got.headers['automation-execution'], ex?.id)
      assert.deepEqual(
        verifySignature(
          [got.headers['automation-signature'] as string],
          Buffer.from(got.body),
          [secret],
          clock.now.getTime() / 1000
        ),
        { ok: true }
      )
      assert.equal(JSON.parse(got.body).payload.email, 'hook@example.test')

      for (const url of ['https://10.1.2.3/hook', 'https://[::1]/hook', 'http://example.com/hook']) {
        const r = await rule(t, alice, {
          schedule: { event_type: 'schedule.cron', cron_expression: '0 0 1 1 *' },
          actions: [{ type: 'webhook', url }]
        })
        await executeRule(t, alice, r.id)
        await drain(engine)
        const [e] = await executions(t, alice, r.id)
        assert.deepEqual([e?.status, e?.attempts], ['failed', 1], url)
        assert.match(e?.error, /private or reserved|must use https/)
      }
    })

    void it('retries a failing webhook with a documented number of attempts, then gives up', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      receiver.hook.status = 503
      const event = await createEvent(t, alice)
      const r = await eventRule(t, alice, event.id, {
        actions: [{ type: 'activity' }, { type: 'webhook', url: receiver.url() }]
      })
      const id = (await executeRule(t, alice, r.id)).id as string
      for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
        assert.equal((await runExecution(engine, { tenantId: tenant.id, executionId: id })).outcome, 'retry')
        const [e] = await executions(t, alice, r.id)
        assert.deepEqual([e?.status, e?.attempts], ['queued', attempt])
        assert.match(e?.error, /503/)
      }
      assert.equal((await runExecution(engine, { tenantId: tenant.id, executionId: id })).outcome, 'failed')
      const [e] = await executions(t, alice, r.id)
      assert.deepEqual(
        [e?.status, e?.attempts, e?.action_results.map((a: Json) => a.status)],
        ['failed', MAX_ATTEMPTS, ['succeeded', 'failed']]
      )
      assert.ok(e?.finished_at !== null)
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: id }), 'done')
      // every attempt rolled back its activity row
      assert.equal((await activityKinds(t, alice, event.id)).filter(k => k === 'automation').length, 0)
      receiver.hook.status = 200
    })

    /**
     * A manual run, queued, of a rule that adds an activity row to alice's event, with an engine on
     * `at`: the tenant, alice, the engine, the event, the rule and the execution's id.
     */
    async function queuedActivityRun (at: { now: Date }) {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, at)
      const event = await createEvent(t, alice)
      const r = await eventRule(t, alice, event.id, { actions: [{ type: 'activity' }] })
      const id = (await executeRule(t, alice, r.id)).id as string
      return { tenant, alice, engine, event, r, id }
    }

    void it('two workers racing for one execution: exactly one applies it; ' +
      'pg-boss hands the job to one of them', async () => {
      const { tenant, alice, engine, event, r, id } = await queuedActivityRun(clock)
      const boss = await engine.queue.ready()
      const fetched = await Promise.all([
        boss.fetch<{ executionId: string }>(QUEUE, { batchSize: 100 }),
        boss.fetch<{ executionId: string }>(QUEUE, { batchSize: 100 })
      ])
      assert.equal(fetched.flat().filter(j => j.data.executionId === id).length, 1)
      const outcomes = await Promise.all([
        runExecution(engine, { tenantId: tenant.id, executionId: id }),
        runExecution(engine, { tenantId: tenant.id, executionId: id })
      ])
      const kinds = outcomes.map(o => o.outcome)
      assert.equal(kinds.filter(k => k === 'succeeded').length, 1, JSON.stringify(outcomes))
      assert.ok(
        kinds.every(k => k === 'succeeded' || k === 'busy' || k === 'done'),
        JSON.stringify(outcomes)
      )
      assert.equal((await activityKinds(t, alice, event.id)).filter(k => k === 'automation').length, 1)
      const [e] = await executions(t, alice, r.id)
      assert.deepEqual([e?.status, e?.attempts], ['succeeded', 1])
    })

    void it('a killed worker\'s execution is run again after its expiry, and the effect applies once', async () => {
      const at = { now: new Date() }
      const { tenant, alice, engine, event, r, id } = await queuedActivityRun(at)
      const boss = await engine.queue.ready()
      const jobs = await boss.fetch<{ executionId: string }>(QUEUE, { batchSize: 100 })
      const job = jobs.find(j => j.data.executionId === id)
      assert.ok(job !== undefined)
      // the worker claims the execution and dies before finishing
      const claimed = await claimExecution(engine, { tenantId: tenant.id, executionId: id }, crypto.randomUUID())
      assert.equal(typeof claimed, 'object')
      assert.equal((await executions(t, alice, r.id))[0]?.status, 'running')
      assert.equal((await runExecution(engine, { tenantId: tenant.id, executionId: id })).outcome, 'busy')
      // pg-boss expires the job (its start moved back past the expiry) and offers it again
      await sql`update pgboss.job set started_on = now() - make_interval(secs => ${EXPIRE_SEC + 60})
        where id = ${job.id}::uuid`.execute(
        engine.db
      )
      await boss.maintain()
      const again = (await boss.fetch<{ executionId: string }>(QUEUE, { batchSize: 100, ignoreStartAfter: true })).find(
        j => j.id === job.id
      )
      assert.ok(again !== undefined, 'the expired job is offered again')
      at.now = new Date(at.now.getTime() + (EXPIRE_SEC + 1) * 1000)
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: id }), 'succeeded')
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: id }), 'done')
      const [e] = await executions(t, alice, r.id)
      assert.deepEqual([e?.status, e?.attempts], ['succeeded', 2])
      assert.equal((await activityKinds(t, alice, event.id)).filter(k => k === 'automation').length, 1)
    })

    void it('fails an execution whose last attempt\'s worker died', async () => {
      const at = { now: new Date() }
      const { tenant, alice, engine, event, r, id } = await queuedActivityRun(at)
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        assert.equal(
          typeof (await claimExecution(engine, { tenantId: tenant.id, executionId: id }, crypto.randomUUID())),
          'object'
        )
        at.now = new Date(at.now.getTime() + (EXPIRE_SEC + 1) * 1000)
      }
      assert.equal(await sweepExecutions(engine), 1)
      const [e] = await executions(t, alice, r.id)
      assert.deepEqual([e?.status, e?.attempts], ['failed', MAX_ATTEMPTS])
      assert.match(e?.error, /stopped before finishing/)
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: id }), 'done')
      assert.equal((await activityKinds(t, alice, event.id)).filter(k => k === 'automation').length, 0)
    })

    void it(`stops a rule that triggers itself at depth ${MAX_DEPTH}`, async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const event = await createEvent(t, alice)
      const r = await eventRule(t, alice, event.id, {
        schedule: { event_type: 'event.activity_added' },
        actions: [{ type: 'activity' }]
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/activity`, 201, { kind: 'note' })
      await drain(engine)
      const list = await executions(t, alice, r.id)
      assert.deepEqual(list.map(e => [e.depth, e.status]).sort(), [
        [0, 'succeeded'],
        [1, 'succeeded'],
        [2, 'succeeded'],
        [3, 'skipped']
      ])
      assert.match(list.find(e => e.depth === 3)?.error, /depth limit/)
      assert.equal((await activityKinds(t, alice, event.id)).filter(k => k === 'automation').length, 3)
    })

    void it('fires cron rules in their time zone with an injectable clock, once per slot', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const r = await rule(t, alice, {
        schedule: { event_type: 'schedule.cron', cron_expression: '0 9 * * *', timezone: 'Pacific/Auckland' },
        actions: []
      })
      const nine = DateTime.now()
        .setZone('Pacific/Auckland')
        .plus({ days: 2 })
        .set({ hour: 9, minute: 0, second: 0, millisecond: 0 })
      const slot = nine.toUTC().toISO({ suppressMilliseconds: false })
      const engine = (at: DateTime) => engineAt(t, { now: at.toJSDate() })
      const before = nine.minus({ seconds: 1 })
      await tickSchedules(engine(before))
      // an earlier slot (the day before) fires once when the clock first passes it
      const first = await executions(t, alice, r.id)
      assert.ok(first.every(e => new Date(e.trigger.scheduled_for) < nine.toJSDate()))
      const count = first.length
      await tickSchedules(engine(nine.plus({ seconds: 30 })))
      await tickSchedules(engine(nine.plus({ minutes: 5 })))
      const list = await executions(t, alice, r.id)
      assert.equal(list.length, count + 1)
      const fired = list.find(e => e.trigger_key === `cron:${slot}`)
      assert.ok(fired !== undefined, `expected a slot at ${slot}`)
      assert.deepEqual(
        [fired.status, fired.trigger_type, fired.trigger.timezone],
        ['queued', 'schedule.cron', 'Pacific/Auckland']
      )
      assert.equal(new Date(fired.trigger.scheduled_for).toISOString(), nine.toUTC().toJSDate().toISOString())
    })

    void it('fires event.starts_in before an event starts, once per event and start time', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const start = DateTime.now().plus({ days: 3 }).startOf('minute')
      const event = await createEvent(t, alice, {
        title: 'Concert',
        start_dt: start.toUTC().toISO(),
        end_dt: start.plus({ hours: 2 }).toUTC().toISO()
      })
      await publishEvent(t, alice, event.id)
      const a = await eventAutomation(t, alice, event.id, {
        name: 'Reminder',
        trigger: { type: 'event.starts_in', offset_minutes: 1440 },
        actions: [{ type: 'notify', to: 'creator', subject: '{{title}} tomorrow', body: 'at {{start_dt}}' }]
      })
      const at = (dt: DateTime) => engineAt(t, { now: dt.toJSDate() })
      await tickSchedules(at(start.minus({ hours: 25 })))
      assert.equal((await executions(t, alice, a.id)).length, 0)
      await tickSchedules(at(start.minus({ hours: 23 })))
      await tickSchedules(at(start.minus({ hours: 1 })))
      await tickSchedules(at(start.plus({ hours: 2 })))
      const list = await executions(t, alice, a.id)
      assert.equal(list.length, 1)
      assert.deepEqual([list[0]?.trigger_type, list[0]?.trigger.event_id], ['event.starts_in', event.id])
      await drain(at(start.minus({ hours: 22 })))
      assert.equal((await executions(t, alice, a.id))[0]?.status, 'succeeded')
      assert.deepEqual((await queuedNotifications(t, tenant.id)).map(n => n.subject), ['Concert tomorrow'])
    })

    void it('a bulk add of attendees triggers one execution per attendee, in the order they were added', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const r = await rule(t, alice, { schedule: { event_type: 'attendee.added' }, actions: [{ type: 'activity' }] })
      const event = await createEvent(t, alice, { title: 'Crowd' })
      const ids = await insertContacts(t, tenant.id, 'alice', 150)
      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/attendees/bulk`,
        payload: { contact_ids: ids }
      })
      assert.equal(res.statusCode, 204, res.body)
      for (let round = 0; round < 5 && (await dispatchOutbox(engine)).events > 0; round++);
      const all = [
        ...(await executions(t, alice, r.id)),
        ...(
          await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${r.id}/executions?size=100&page=2` })
        ).json().items
      ]
      const byOutboxId = all
        .map(e => [Number(String(e.trigger_key).replace('outbox:', '')), e.trigger.contact_id] as const)
        .sort((a, b) => a[0] - b[0])
      assert.deepEqual(byOutboxId.map(([, contact]) => contact), ids)
      assert.ok(all.every(e => e.trigger_type === 'attendee.added' && e.trigger.event_id === event.id))
    })

    void it('a rolled-back request leaves no execution and no job', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const r = await rule(t, alice, { schedule: { event_type: 'contact.created' }, actions: [{ type: 'activity' }] })
      await assert.rejects(withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        await emit(trx, {
          tenantId: tenant.id,
          topic: 'contact.created',
          aggregateType: 'contact',
          aggregateId: 'x',
          actorId: 'alice',
          payload: { contact_id: 'x' }
        })
        throw new Error('request failed')
      }))
      await dispatchOutbox(engine)
      assert.equal((await executions(t, alice, r.id)).length, 0)
    })

    /** Two tenants with a contact.created rule each, and nothing left in the outbox. */
    async function twoTenants (engine: Engine) {
      const a = newTenant(t)
      const b = newTenant(t)
      // tenant admins with rules on user.changed: they are told of every user (the outbound rule), so the rows
      // below need no user, and these tests see the dispatch alone
      const alice = await a.user('alice', ['admin'])
      const bob = await b.user('bob', ['admin'])
      const ra = await rule(t, alice, { schedule: { event_type: 'user.changed' }, actions: [{ type: 'activity' }] })
      const rb = await rule(t, bob, { schedule: { event_type: 'user.changed' }, actions: [{ type: 'activity' }] })
      for (let round = 0; round < 50 && (await dispatchOutbox(engine)).events > 0; round++);
      return {
        a: { id: a.id, token: alice, rule: ra.id as string },
        b: { id: b.id, token: bob, rule: rb.id as string }
      }
    }

    /** `n` user.changed domain events of a tenant (one emit each). */
    async function emitUsers (tenantId: string, n: number, prefix = 'c'): Promise<void> {
      await withTenant(t.ctx.db, { tenantId }, async (trx) => {
        for (let i = 0; i < n; i++) {
          await emit(trx, {
            tenantId,
            topic: 'user.changed',
            aggregateType: 'user',
            aggregateId: `${prefix}${i}`,
            actorId: 'someone',
            payload: { user_id: `${prefix}${i}` }
          })
        }
      })
    }

    async function unprocessed (tenantId: string): Promise<number> {
      return await withTenant(t.ctx.db, { tenantId }, async trx =>
        Number(
          (
            await trx
              .selectFrom('outbox')
              .select(eb => eb.fn.countAll<number>().as('n'))
              .where('tenant_id', '=', tenantId)
              .where('processed_at', 'is', null)
              .executeTakeFirstOrThrow()
          ).n
        )
      )
    }

    void it('dispatches per tenant: one call shares its limit among the tenants with pending rows, ' +
      'each in id order', async () => {
      const engine = engineAt(t, clock)
      const { a, b } = await twoTenants(engine)
      await emitUsers(a.id, 6)
      await emitUsers(b.id, 2)
      // a limit of 4: a (the oldest pending row) gets 2, b its 2; b's turn is not taken by a's backlog
      assert.deepEqual(await dispatchOutbox(engine, 4), { events: 4, executions: 4, skipped: 0 })
      const firstA = await executions(t, a.token, a.rule)
      assert.deepEqual(firstA.map(e => e.trigger.user_id).sort(), ['c0', 'c1'])
      assert.equal((await executions(t, b.token, b.rule)).length, 2)
      // the rest of a's backlog, in id order; then nothing is left
      assert.deepEqual(await dispatchOutbox(engine, 4), { events: 4, executions: 4, skipped: 0 })
      assert.deepEqual(await dispatchOutbox(engine, 4), { events: 0, executions: 0, skipped: 0 })
      const all = await executions(t, a.token, a.rule)
      const byOutboxId = all
        .map(e => [Number(String(e.trigger_key).replace('outbox:', '')), e.trigger.user_id] as const)
        .sort((x, y) => x[0] - y[0])
      assert.deepEqual(
        byOutboxId.map(([, user]) => user),
        ['c0', 'c1', 'c2', 'c3', 'c4', 'c5']
      )
      // a limit above the pending rows: one tenant alone gets the whole limit
      await emitUsers(b.id, 5, 'd')
      assert.deepEqual(await dispatchOutbox(engine, 100), { events: 5, executions: 5, skipped: 0 })
      assert.equal((await unprocessed(a.id)) + (await unprocessed(b.id)), 0)
    })

    void it('two dispatches at once process every row once: each execution is created once', async () => {
      const engine = engineAt(t, clock)
      const { a, b } = await twoTenants(engine)
      await emitUsers(a.id, 40)
      await emitUsers(b.id, 40)
      const results: DispatchResult[] = []
      for (let round = 0; round < 20; round++) {
        const pair = await Promise.all([dispatchOutbox(engine, 15), dispatchOutbox(engine, 15)])
        results.push(...pair)
        if (pair.every(r => r.events === 0)) break
      }
      assert.equal(results.reduce((n, r) => n + r.events, 0), 80, 'each outbox row claimed by one dispatch')
      assert.equal(results.reduce((n, r) => n + r.executions, 0), 80, 'each execution created by one dispatch')
      assert.ok(results.every(r => r.events <= 15))
      for (const x of [a, b]) {
        const rows = await executions(t, x.token, x.rule)
        assert.equal(rows.length, 40)
        assert.equal(new Set(rows.map(e => e.trigger_key)).size, 40)
        assert.equal(await unprocessed(x.id), 0)
      }
    })

    void it('a tenant whose dispatch fails holds up no other: the others are dispatched, ' +
      'then the failure is thrown', async () => {
      const engine = engineAt(t, clock)
      const { a, b } = await twoTenants(engine)
      await emitUsers(a.id, 3)
      await emitUsers(b.id, 3)
      const failing: Engine = {
        ...engine,
        queue: {
          ready: async () => await engine.queue.ready(),
          stop: async () => {
            await engine.queue.stop()
          },
          send: async (trx, job) => {
            if (job.tenantId === a.id) throw new Error('the queue refuses this tenant')
            return await engine.queue.send(trx, job)
          }
        }
      }
      const err = await dispatchOutbox(failing).then(
        () => undefined,
        (e: unknown) => e
      )
      assert.ok(err instanceof TenantWorkError, String(err))
      assert.deepEqual(
        err.failures.map(f => f.tenantId),
        [a.id]
      )
      assert.match(err.message, /the queue refuses this tenant/)
      assert.deepEqual(err.result, { events: 3, executions: 3, skipped: 0 })
      assert.equal((await executions(t, b.token, b.rule)).length, 3)
      // a's transaction was rolled back: no execution, its rows still pending, taken by the next dispatch
      assert.equal((await executions(t, a.token, a.rule)).length, 0)
      assert.equal(await unprocessed(a.id), 3)
      assert.deepEqual(await dispatchOutbox(engine), { events: 3, executions: 3, skipped: 0 })
      assert.equal((await executions(t, a.token, a.rule)).length, 3)
    })
  })
}

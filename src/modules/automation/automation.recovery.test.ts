/**
 * Automation you can audit and recover (docs/automation.md, "Versions, retries and pausing"): an
 * execution runs the rule version it was queued with; failed executions can be retried; the
 * history filters by status, trigger type and time; a rule failing N times in a row is paused and
 * its creator told; stale If-Match on a rule is a 412. The engine is driven directly, with a clock
 * that moves one second per run (the history orders finished runs by time).
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { queuedNotifications } from '../../../test/helpers/outbox.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { errorLocations, problemIssues } from '../../../test/helpers/problem.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { emit } from '../../platform/outbox.ts'
import { addManager, createEvent, type Json } from '../events/events.fixtures.ts'
import { claimExecution, handleJob, runExecution } from './automation.runner.ts'
import { dispatchOutbox } from './automation.dispatcher.ts'
import { drain, engineAt, eventAutomation, executeRule, executions, rule } from './automation.fixtures.ts'

const PAUSE_AFTER = 3

async function getRule (t: TestApp, token: string, id: string): Promise<Json> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/automation/rules/${id}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/** The messages of the automation activity rows of an event, oldest first. */
async function activityMessages (t: TestApp, token: string, eventId: number): Promise<string[]> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/activity` })
  assert.equal(res.statusCode, 200, res.body)
  return res
    .json()
    .items.filter((r: Json) => r.payload?.rule_id !== undefined)
    .map((r: Json) => r.payload.message)
    .reverse()
}

/** A domain event `event.updated` of an event, as the events module writes it. */
async function touch (t: TestApp, tenantId: string, eventId: number): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async (trx) => {
    await emit(trx, {
      tenantId,
      topic: 'event.updated',
      aggregateType: 'event',
      aggregateId: eventId,
      actorId: 'someone',
      payload: { event_id: eventId, title: 'x', status: 'draft' }
    })
  })
}

async function setManagerRole (
  t: TestApp,
  tenantId: string,
  eventId: number,
  userId: string,
  role: string
): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx
      .updateTable('event_managers')
      .set({ role })
      .where('tenant_id', '=', tenantId)
      .where('event_id', '=', eventId)
      .where('user_id', '=', userId)
      .execute()
  })
}

async function retry (t: TestApp, token: string, ruleId: string, executionId: string) {
  return await t.as(token, {
    method: 'POST',
    url: `/api/v1/automation/rules/${ruleId}/executions/${executionId}/retry`
  })
}

async function pausedNotices (t: TestApp, tenantId: string): Promise<Json[]> {
  return (await queuedNotifications(t, tenantId)).filter(r => (r.payload as Json).kind === 'automation.rule_paused')
}

for (const kind of databases()) {
  void describe(`${kind}: automation versions, retries, filters, pausing`, () => {
    const t = useTestApp(kind, { env: { AUTOMATION_PAUSE_AFTER_FAILURES: String(PAUSE_AFTER) } })
    const clock = { now: new Date() }

    void it('runs the version an execution was queued with, not a later edit, and records it; ' +
      "a deleted rule's queued run never runs", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const event = await createEvent(t, alice, { title: 'Gala' })
      const r = await rule(t, alice, {
        schedule: { event_type: 'event.updated' },
        actions: [{ type: 'activity', message: 'version one' }]
      })
      assert.equal(r.version, 1)
      await touch(t, tenant.id, event.id)
      await dispatchOutbox(engine)
      const [queued] = await executions(t, alice, r.id)
      assert.deepEqual([queued?.status, queued?.rule_version], ['queued', 1])

      // edited while the execution waits: new conditions (never true) and a new message
      const put = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/automation/rules/${r.id}`,
        payload: {
          name: 'rule',
          scope: 'GLOBAL',
          schedule: { event_type: 'event.updated' },
          conditions: { '==': [1, 2] },
          actions: [{ type: 'activity', message: 'version two' }]
        }
      })
      assert.equal(put.statusCode, 200, put.body)
      assert.equal(put.json().version, 2)
      await drain(engine, { clock, tenantId: tenant.id })
      const [done] = await executions(t, alice, r.id)
      assert.deepEqual(
        [done?.id, done?.status, done?.rule_version, done?.conditions_met],
        [queued?.id, 'succeeded', 1, true]
      )
      assert.deepEqual(await activityMessages(t, alice, event.id), ['version one'])

      // a trigger after the edit runs version 2 (whose condition is false)
      await touch(t, tenant.id, event.id)
      await drain(engine, { clock, tenantId: tenant.id })
      const [second] = await executions(t, alice, r.id)
      assert.deepEqual([second?.status, second?.rule_version, second?.conditions_met], ['skipped', 2, false])
      assert.deepEqual(await activityMessages(t, alice, event.id), ['version one'])

      // queued, then the rule is deleted (its history with it): the job finds nothing and never runs it
      const patched = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/automation/rules/${r.id}`,
        payload: { conditions: {} }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      await touch(t, tenant.id, event.id)
      await dispatchOutbox(engine)
      const [pending] = await executions(t, alice, r.id)
      assert.deepEqual([pending?.status, pending?.rule_version], ['queued', 3])
      assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/automation/rules/${r.id}` })).statusCode, 204)
      assert.equal(await handleJob(engine, { tenantId: tenant.id, executionId: pending?.id as string }), 'missing')
      assert.deepEqual(await activityMessages(t, alice, event.id), ['version one'])
    })

    /**
     * Carol's event, which alice sees (a check-in manager) but may not edit, and a rule of alice's
     * that adds `message` to the activity of an event updated.
     */
    async function aliceRuleOnCarolsEvent (message: string) {
      const tenant = newTenant(t)
      const carol = await tenant.user('carol')
      const alice = await tenant.user('alice')
      const event = await createEvent(t, carol, { title: "Carol's" })
      await addManager(t, tenant.id, event.id, 'alice', { role: 'event_manager:checkin' })
      const r = await rule(t, alice, {
        schedule: { event_type: 'event.updated' },
        actions: [{ type: 'activity', message }]
      })
      return { tenant, carol, alice, event, r }
    }

    void it('runs as the writer of the queued version: their rights, checked when it runs', async () => {
      const { tenant, carol, event, r } = await aliceRuleOnCarolsEvent('by alice')
      const admin = await tenant.user('root', ['admin'])
      const engine = engineAt(t, clock)
      await touch(t, tenant.id, event.id)
      await dispatchOutbox(engine)
      // an admin takes the rule over (version 2 acts as the admin); the queued run is still version 1's, alice's
      const patched = await t.as(admin, {
        method: 'PATCH',
        url: `/api/v1/automation/rules/${r.id}`,
        payload: { name: 'taken over' }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json().creator_id, 'root')
      await drain(engine, { clock, tenantId: tenant.id })
      const [run] = await executions(t, admin, r.id)
      assert.equal(run?.status, 'failed')
      assert.equal(run?.rule_version, 1)
      assert.match(String(run?.error), /the rule's creator may not add activity to event/)
      assert.deepEqual(await activityMessages(t, carol, event.id), [])
    })

    void it('retries a failed execution as a new attempt of the same version once the cause is fixed; ' +
      'refuses other states with 409', async () => {
      const { tenant, carol, alice, event, r } = await aliceRuleOnCarolsEvent('logged')
      const bob = await tenant.user('bob')
      const engine = engineAt(t, clock)
      await touch(t, tenant.id, event.id)
      await drain(engine, { clock, tenantId: tenant.id })
      const [failed] = await executions(t, alice, r.id)
      assert.equal(failed?.status, 'failed')
      assert.match(String(failed?.error), /may not add activity/)

      // still without the right: the retry is refused as a manual run would be, nothing queued
      const early = await retry(t, alice, r.id, failed?.id as string)
      assert.equal(early.statusCode, 403, early.body)
      assert.equal((await executions(t, alice, r.id)).length, 1)
      // bob may not manage alice's rule
      const other = await retry(t, bob, r.id, failed?.id as string)
      assert.equal(other.statusCode, 403, other.body)

      // the cause is fixed: alice may now edit the event
      await setManagerRole(t, tenant.id, event.id, 'alice', 'event_manager:editor')
      const again = await retry(t, alice, r.id, failed?.id as string)
      assert.equal(again.statusCode, 202, again.body)
      const queued = again.json()
      assert.deepEqual(
        [
          queued.status,
          queued.retry_of,
          queued.rule_version,
          queued.trigger_key,
          queued.trigger_type,
          queued.trigger.event_id
        ],
        ['queued', failed?.id, failed?.rule_version, `retry:${String(failed?.id)}`, 'event.updated', event.id]
      )
      // a failed execution is retried once
      const twice = await retry(t, alice, r.id, failed?.id as string)
      assert.equal(twice.statusCode, 409, twice.body)
      assert.deepEqual(problemIssues(twice), [])
      assert.match(twice.json().detail, /retried already/)
      // the queued retry is not retried
      const ofQueued = await retry(t, alice, r.id, queued.id)
      assert.equal(ofQueued.statusCode, 409, ofQueued.body)
      assert.match(ofQueued.json().detail, /the execution is queued/)
      // nor while it runs
      const claimed = await claimExecution(engine, { tenantId: tenant.id, executionId: queued.id }, crypto.randomUUID())
      assert.equal(typeof claimed, 'object')
      const ofRunning = await retry(t, alice, r.id, queued.id)
      assert.equal(ofRunning.statusCode, 409, ofRunning.body)
      assert.match(ofRunning.json().detail, /the execution is running/)
      // its worker died: the lease runs out and the run is claimed again and succeeds
      clock.now = new Date(clock.now.getTime() + 10 * 60_000)
      assert.deepEqual(await runExecution(engine, { tenantId: tenant.id, executionId: queued.id }), {
        outcome: 'succeeded'
      })
      const after = await executions(t, alice, r.id)
      const retried = after.find(e => e.id === queued.id)
      assert.equal(retried?.status, 'succeeded')
      assert.equal(after.find(e => e.id === failed?.id)?.status, 'failed', 'the failed attempt stays in the history')
      assert.deepEqual(await activityMessages(t, carol, event.id), ['logged'])
      const ofSucceeded = await retry(t, alice, r.id, queued.id)
      assert.equal(ofSucceeded.statusCode, 409, ofSucceeded.body)
      assert.match(ofSucceeded.json().detail, /the execution is succeeded/)

      // an execution of another rule, or none: 404
      const r2 = await rule(t, alice, { schedule: { event_type: 'event.created' }, actions: [] })
      assert.equal((await retry(t, alice, r2.id, failed?.id as string)).statusCode, 404)
      assert.equal((await retry(t, alice, r.id, crypto.randomUUID())).statusCode, 404)
      const badId = await retry(t, alice, r.id, 'not-a-uuid')
      assert.equal(badId.statusCode, 400)
      assert.deepEqual(errorLocations(badId), ['path.id'])
    })

    void it('retries a failed execution of an event automation through the event\'s path', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const event = await createEvent(t, alice, { title: 'Mine' })
      const created = await eventAutomation(t, alice, event.id, {
        name: 'to draft',
        trigger: { type: 'event.updated' },
        actions: [{ type: 'transition', to_state: 'no-such-state' }]
      })
      const base = `/api/v1/events/${event.id}/automations/${created.id as string}`
      await touch(t, tenant.id, event.id)
      await drain(engine, { clock, tenantId: tenant.id })
      const list = await t.as(alice, { method: 'GET', url: `${base}/executions?status=failed` })
      assert.equal(list.statusCode, 200, list.body)
      const [failed] = list.json().items
      assert.equal(failed?.status, 'failed')
      const res = await t.as(alice, { method: 'POST', url: `${base}/executions/${failed.id as string}/retry` })
      assert.equal(res.statusCode, 202, res.body)
      assert.deepEqual([res.json().status, res.json().retry_of], ['queued', failed.id])
      const again = await t.as(alice, { method: 'POST', url: `${base}/executions/${res.json().id as string}/retry` })
      assert.equal(again.statusCode, 409, again.body)
    })

    void it('filters the history by status, trigger type and time; ' +
      'bad values are a 400 naming the query field', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const event = await createEvent(t, alice, { title: 'Filtered' })
      const r = await rule(t, alice, {
        schedule: { event_type: 'event.updated' },
        conditions: { '==': [{ var: 'payload.title' }, 'x'] },
        actions: [{ type: 'activity', message: 'hit' }]
      })
      await touch(t, tenant.id, event.id)
      await drain(engine, { clock, tenantId: tenant.id })
      const before = new Date()
      await new Promise(resolve => setTimeout(resolve, 20))
      await executeRule(t, alice, r.id, { trigger_type: 'manual.check', trigger_context: { event_id: event.id } })
      const all = await executions(t, alice, r.id)
      assert.equal(all.length, 2)
      const ids = async (q: string) => (await executions(t, alice, r.id, q)).map(e => e.id)
      const [manualRun, domainRun] = all
      assert.deepEqual(await ids('&status=succeeded'), [domainRun?.id])
      assert.deepEqual(await ids('&status=queued'), [manualRun?.id])
      assert.deepEqual(await ids('&status=failed'), [])
      assert.deepEqual(await ids('&trigger_type=manual.check'), [manualRun?.id])
      assert.deepEqual(await ids('&trigger_type=event.updated'), [domainRun?.id])
      assert.deepEqual(await ids(`&from=${encodeURIComponent(before.toISOString())}`), [manualRun?.id])
      assert.deepEqual(await ids(`&to=${encodeURIComponent(before.toISOString())}`), [domainRun?.id])
      assert.deepEqual(await ids('&status=queued&trigger_type=event.updated'), [])
      const total = await t.as(alice, {
        method: 'GET',
        url: `/api/v1/automation/rules/${r.id}/executions?status=succeeded`
      })
      assert.equal(total.json().total, 1)

      for (const [q, location] of [
        ['status=done', 'query.status'],
        ['from=yesterday', 'query.from'],
        ['from=2016-12-31T23:59:60Z', 'query.from'],
        ['to=2024-13-45T00:00:00Z', 'query.to'],
        ['from=2025-01-02T00:00:00Z&to=2025-01-01T00:00:00Z', 'query.to'],
        ['trigger_type=', 'query.trigger_type']
      ] as const) {
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${r.id}/executions?${q}` })
        assert.equal(res.statusCode, 400, `${q}: ${res.body}`)
        assert.deepEqual(problemIssues(res), [])
        assert.deepEqual(errorLocations(res), [location], q)
        const onEvent = await t.as(alice, {
          method: 'GET',
          url: `/api/v1/events/${event.id}/automations/${r.id}/executions?${q}`
        })
        assert.ok(onEvent.statusCode === 400 || onEvent.statusCode === 404, `${q}: ${onEvent.body}`)
      }
    })

    void it('pages the history by cursor as by page (executions queued together share ' +
      'created_at), per filter', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const r = await rule(t, alice, {
        schedule: { event_type: 'event.updated' },
        conditions: { '==': [1, 1] },
        actions: [{ type: 'activity', message: 'hit' }]
      })
      const other = await rule(t, alice, {
        schedule: { event_type: 'event.updated' },
        conditions: { '==': [1, 1] },
        actions: [{ type: 'activity', message: 'hit' }]
      })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('automation_executions')
          .values(
            Array.from({ length: 13 }, (_, i) => ({
              tenant_id: tenant.id,
              rule_id: r.id as string,
              rule_version: 1,
              trigger_key: `k${i}`,
              trigger_type: i % 3 === 0 ? 'manual.check' : 'event.updated',
              trigger_payload: '{}',
              depth: 0,
              max_attempts: 3
            }))
          )
          .execute()
      })
      for (const q of ['', '&trigger_type=event.updated']) {
        const all = (await executions(t, alice, r.id, q)).map(e => e.id)
        assert.equal(all.length, q === '' ? 13 : 8)
        const walked = (await itemsByCursor(t, alice, `/api/v1/automation/rules/${r.id}/executions?size=3${q}`))
          .map(e => e.id)
        assert.deepEqual(walked, all, q)
      }
      const first = (
        await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${r.id}/executions?size=3` })
      ).json()
      for (const url of [
        `/api/v1/automation/rules/${other.id}/executions?size=3`,
        `/api/v1/automation/rules/${r.id}/executions?size=3&status=queued`
      ]) {
        assert.deepEqual(errorLocations(await refusedCursor(t, alice, url, first.next_cursor)), ['query.cursor'])
      }
    })

    void it(`pauses a rule after ${PAUSE_AFTER} failed executions in a row, says why and tells its creator; ` +
      'a success in between resets the count', async () => {
      const tenant = newTenant(t)
      const carol = await tenant.user('carol')
      const alice = await tenant.user('alice')
      const engine = engineAt(t, clock)
      const theirs = await createEvent(t, carol, { title: "Carol's" })
      const mine = await createEvent(t, alice, { title: "Alice's" })
      await addManager(t, tenant.id, theirs.id, 'alice', { role: 'event_manager:checkin' })
      const r = await rule(t, alice, {
        name: 'Logger',
        schedule: { event_type: 'event.updated' },
        actions: [{ type: 'activity', message: 'logged' }]
      })
      const fire = async (eventId: number) => {
        await touch(t, tenant.id, eventId)
        await drain(engine, { clock, tenantId: tenant.id })
      }

      // fail, fail, succeed, fail, fail: never three in a row
      for (const id of [theirs.id, theirs.id, mine.id, theirs.id, theirs.id]) await fire(id)
      const statuses = (await executions(t, alice, r.id)).map(e => e.status)
      assert.deepEqual(statuses, ['failed', 'failed', 'succeeded', 'failed', 'failed'])
      let current = await getRule(t, alice, r.id)
      assert.deepEqual([current.enabled, current.disabled_reason], [true, null])
      assert.deepEqual(await pausedNotices(t, tenant.id), [])

      // the third in a row pauses it; a run queued behind it is skipped
      await touch(t, tenant.id, theirs.id)
      await fire(theirs.id)
      current = await getRule(t, alice, r.id)
      assert.equal(current.enabled, false)
      assert.match(
        String(current.disabled_reason),
        new RegExp(`^paused after ${PAUSE_AFTER} failed executions in a row .*may not add activity`)
      )
      const notices = await pausedNotices(t, tenant.id)
      assert.equal(notices.length, 1)
      assert.equal(notices[0]?.recipient, 'user:alice')
      assert.match(String(notices[0]?.subject), /Logger/)
      assert.equal((notices[0]?.payload as Json).rule_id, r.id)

      const history = await executions(t, alice, r.id)
      assert.deepEqual(history.map(e => e.status).sort(), [
        'failed',
        'failed',
        'failed',
        'failed',
        'failed',
        'skipped',
        'succeeded'
      ])
      assert.equal(history.find(e => e.status === 'skipped')?.error, 'the rule is disabled')
      // paused: no trigger fires it any more, and there is no second notice
      await fire(theirs.id)
      await fire(mine.id)
      assert.equal((await executions(t, alice, r.id)).length, 7)
      assert.equal((await pausedNotices(t, tenant.id)).length, 1)

      // enabling it again clears the reason and resumes it
      const enabled = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/automation/rules/${r.id}`,
        payload: { enabled: true }
      })
      assert.equal(enabled.statusCode, 200, enabled.body)
      assert.equal(enabled.json().disabled_reason, null)
      await fire(mine.id)
      assert.equal((await executions(t, alice, r.id))[0]?.status, 'succeeded')
    })

    void it('sends the version as ETag and answers 412 to PUT, PATCH and DELETE naming another, ' +
      'changing nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const body = { name: 'etag', scope: 'GLOBAL', schedule: { event_type: 'event.updated' }, actions: [] }
      const created = await t.as(alice, { method: 'POST', url: '/api/v1/automation/rules', payload: body })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.headers.etag, '"1"')
      const id = created.json().id as string
      const got = await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${id}` })
      assert.equal(got.headers.etag, '"1"')
      const patched = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/automation/rules/${id}`,
        headers: { 'if-match': '"1"' },
        payload: { name: 'etag 2' }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.headers.etag, '"2"')
      const stale = { 'if-match': '"1"' }
      for (const req of [
        { method: 'PUT' as const, payload: { ...body, name: 'stale put' } },
        { method: 'PATCH' as const, payload: { name: 'stale patch' } },
        { method: 'DELETE' as const }
      ]) {
        const res = await t.as(alice, { ...req, url: `/api/v1/automation/rules/${id}`, headers: stale })
        assert.equal(res.statusCode, 412, `${req.method}: ${res.body}`)
        assert.deepEqual(problemIssues(res), [])
      }
      const after = await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${id}` })
      assert.equal(after.statusCode, 200)
      assert.deepEqual([after.json().name, after.json().version, after.headers.etag], ['etag 2', 2, '"2"'])
      const put = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/automation/rules/${id}`,
        headers: { 'if-match': '"2"' },
        payload: body
      })
      assert.equal(put.statusCode, 200, put.body)
      assert.equal(put.headers.etag, '"3"')
      const del = await t.as(alice, {
        method: 'DELETE',
        url: `/api/v1/automation/rules/${id}`,
        headers: { 'if-match': '"3"' }
      })
      assert.equal(del.statusCode, 204, del.body)
    })
  })
}

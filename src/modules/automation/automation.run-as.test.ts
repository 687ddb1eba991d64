/**
 * Automation runs as someone (docs/automation.md, "Whom a rule acts as"): a rule acts with its
 * creator's rights, re-checked at each execution; manual runs stay on the rule's scope and check
 * the caller; execution details and webhook URLs are shown only to those who may manage the rule.
 * Each test reproduces an attack that worked while the engine acted with the service's rights.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { queuedNotifications } from '../../../test/helpers/outbox.ts'
import { errorLocations } from '../../../test/helpers/problem.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { addManager, createEvent, insertSpace, publishEvent, type Json } from '../events/events.fixtures.ts'
import { idpEvent, idpWebhook } from '../identity/identity.fixtures.ts'
import { tickSchedules } from './automation.scheduler.ts'
import { type Engine } from './automation.engine.ts'
import { addAttendee, addContact, drain, eventAutomation, eventRule, executions, rule } from './automation.fixtures.ts'

const IDP_SECRET = 'automation-run-as-idp-secret'

/** What the owner of an event sees of it afterwards: state, attendee statuses, automation activity rows. */
async function eventSnapshot (t: TestApp, token: string, eventId: number): Promise<Json> {
  const event = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}` })
  assert.equal(event.statusCode, 200, event.body)
  const attendees = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/attendees?size=100` })
  assert.equal(attendees.statusCode, 200, attendees.body)
  const activity = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/activity` })
  assert.equal(activity.statusCode, 200, activity.body)
  return {
    state: event.json().state,
    attendees: Object.fromEntries(attendees.json().items.map((a: Json) => [a.contact_id, a.status])),
    automationActivity: activity
      .json()
      .items.filter((r: Json) => r.kind === 'automation' || r.payload?.rule_id !== undefined).length
  }
}

async function notificationCount (t: TestApp, tenantId: string): Promise<number> {
  return (await queuedNotifications(t, tenantId)).length
}

async function idpRemove (t: TestApp, tenantId: string, userId: string): Promise<void> {
  assert.equal(await idpWebhook(IDP_SECRET).deliver(t, idpEvent(tenantId, userId, 10, 'user.removed')), 'applied')
}

/** A schedule that fires once a year: the rules that have it run by hand in these tests. */
const BY_HAND = { event_type: 'schedule.cron', cron_expression: '0 0 1 1 *' }
/** Moves a delivery on. */
const TO_TRANSIT = [{ type: 'transition', to_state: 'in_transit' }]

/** Every action of the attack: change state, decline attendees, write activity, e-mail attendees. */
const ATTACK = [
  { type: 'notify', to: 'attendees', subject: 'from bob', body: 'his own text about {{title}}' },
  { type: 'set_attendee_status', from_status: ['invited', 'confirmed'], status: 'declined' },
  { type: 'activity', message: 'bob was here' },
  { type: 'transition', to_state: 'in_transit' }
]

for (const kind of databases()) {
  void describe(`${kind}: automation runs as its creator`, () => {
    const t = useTestApp(kind, { env: { IDP_WEBHOOK_SECRET: IDP_SECRET } })
    const engine = (): Engine => t.ctx.engines.automation
    /** A manual run of a rule naming an event as what triggered it: asserts `status`; the answer. */
    const runOn = async (token: string, ruleId: string, eventId: number | string, status: number) =>
      await expectStatus(t, token, 'POST', `/api/v1/automation/rules/${ruleId}/execute`, status, {
        trigger_context: { event_id: eventId }
      })

    void it("a member's GLOBAL rule cannot touch another member's private event: nothing changes, nothing is sent, " +
      'no title leaks', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const event = await createEvent(t, alice, { title: 'Secret merger', template: 'delivery', visibility: 10 })
      await expectStatus(t, bob, 'GET', `/api/v1/events/${event.id}`, 404)
      const ann = await addContact(t, alice, 'ann@example.test')
      await addAttendee(t, tenant.id, event.id, ann, 'invited')
      const before = await eventSnapshot(t, alice, event.id)
      const sentBefore = await notificationCount(t, tenant.id)

      const r = await rule(t, bob, {
        schedule: { event_type: 'event.updated' },
        conditions: { in: ['Secret', { var: 'event.title' }] },
        actions: ATTACK
      })
      const soon = await rule(t, bob, {
        schedule: { event_type: 'event.starts_in', offset_minutes: 1440 },
        actions: ATTACK
      })
      const contacts = await rule(t, bob, { schedule: { event_type: 'contact.created' }, actions: [] })
      const start = new Date(Date.now() + 3_600_000)
      assert.equal(
        (
          await t.as(alice, {
            method: 'PATCH',
            url: `/api/v1/events/${event.id}`,
            payload: {
              description: 'edited',
              start_dt: start.toISOString(),
              end_dt: new Date(start.getTime() + 3_600_000).toISOString()
            }
          })
        ).statusCode,
        200
      )
      await publishEvent(t, alice, event.id)
      await addContact(t, alice, 'alice-personal@example.test')
      await tickSchedules(engine())
      await drain(engine())

      // nothing of the private event or the personal contact triggered bob's rules, so nothing entered his history
      for (const id of [r.id, soon.id, contacts.id]) assert.deepEqual(await executions(t, bob, id), [])
      assert.deepEqual(await eventSnapshot(t, alice, event.id), before)
      assert.equal(await notificationCount(t, tenant.id), sentBefore)
    })

    void it('a manual run of a GLOBAL rule naming an event the caller cannot see is a 400, ' +
      'and nothing runs', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const event = await createEvent(t, alice, { title: 'Private', template: 'delivery', visibility: 10 })
      const ann = await addContact(t, alice, 'ann@example.test')
      await addAttendee(t, tenant.id, event.id, ann, 'confirmed')
      const before = await eventSnapshot(t, alice, event.id)
      const r = await rule(t, bob, {
        schedule: BY_HAND,
        actions: ATTACK
      })
      const res = await runOn(bob, r.id, event.id, 400)
      assert.deepEqual(errorLocations(res), ['body.trigger_context.event_id'])
      await drain(engine())
      assert.equal((await executions(t, bob, r.id)).length, 0)
      assert.deepEqual(await eventSnapshot(t, alice, event.id), before)
    })

    void it('the caller of a manual run must be allowed to change the target event, not only the creator', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const carol = await tenant.user('carol')
      const event = await createEvent(t, alice, { title: 'Public', template: 'delivery', visibility: 40 })
      const r = await rule(t, alice, { schedule: BY_HAND, actions: TO_TRANSIT })
      await runOn(carol, r.id, event.id, 403)
      await drain(engine())
      assert.equal((await executions(t, alice, r.id)).length, 0)
      assert.equal((await eventSnapshot(t, alice, event.id)).state, 'pending')
      // the rule's creator herself may
      await runOn(alice, r.id, String(event.id), 202)
      await drain(engine())
      assert.equal((await executions(t, alice, r.id))[0]?.status, 'succeeded')
      assert.equal((await eventSnapshot(t, alice, event.id)).state, 'in_transit')
    })

    void it('a manual run cannot redirect an EVENT rule to another event, nor a SPACE rule outside its space (400, ' +
      'nothing changes)', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const own = await createEvent(t, alice, { title: 'Own', template: 'delivery' })
      const other = await createEvent(t, alice, { title: 'Other', template: 'delivery' })
      const ownRule = await eventRule(t, alice, own.id, { actions: TO_TRANSIT })
      const res = await runOn(alice, ownRule.id, other.id, 400)
      assert.deepEqual(errorLocations(res), ['body.trigger_context.event_id'])
      const space = await insertSpace(t, tenant.id, { creator_id: 'alice' })
      const spaceRule = await rule(t, alice, {
        scope: 'SPACE',
        scope_id: String(space),
        schedule: { event_type: 'event.updated' },
        actions: TO_TRANSIT
      })
      const outside = await runOn(alice, spaceRule.id, other.id, 400)
      assert.deepEqual(errorLocations(outside), ['body.trigger_context.event_id'])
      const deep = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/automation/rules/${ownRule.id}/execute`,
        payload: { trigger_context: JSON.parse('{"a":'.repeat(20) + '1' + '}'.repeat(20)) }
      })
      assert.deepEqual([deep.statusCode, errorLocations(deep)], [400, ['body.trigger_context']])
      await drain(engine())
      assert.equal((await executions(t, alice, ownRule.id)).length, 0)
      assert.equal((await executions(t, alice, spaceRule.id)).length, 0)
      assert.equal((await eventSnapshot(t, alice, other.id)).state, 'pending')
      assert.equal((await eventSnapshot(t, alice, own.id)).state, 'pending')
      // the rule's own event: accepted, and the run acts there
      await runOn(alice, ownRule.id, own.id, 202)
      await drain(engine())
      assert.equal((await eventSnapshot(t, alice, own.id)).state, 'in_transit')
      assert.equal((await eventSnapshot(t, alice, other.id)).state, 'pending')
    })

    void it('execution history: trigger payloads and results only for those who may manage the rule', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'acme' })
      const admin = await tenant.user('adam', ['admin'])
      const vera = await tenant.user('vera', ['viewer'], { orgId: 'acme' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'acme' })
      const r = await rule(t, alice, {
        schedule: { event_type: 'contact.created' },
        conditions: { in: ['@', { var: 'payload.email' }] },
        actions: []
      })
      await addContact(t, alice, 'ceo-private@example.test')
      await drain(engine())
      const [full] = await executions(t, alice, r.id)
      assert.equal(full?.trigger.email, 'ceo-private@example.test')
      assert.equal(full?.redacted, false)
      assert.equal((await executions(t, admin, r.id))[0]?.trigger.email, 'ceo-private@example.test')
      for (const reader of [vera, bob]) {
        const [seen] = await executions(t, reader, r.id)
        assert.deepEqual(
          [
            seen?.status,
            seen?.redacted,
            seen?.trigger,
            seen?.conditions_met,
            seen?.condition_results,
            seen?.action_results,
            seen?.error
          ],
          ['succeeded', true, {}, null, null, null, null]
        )
        assert.ok(!JSON.stringify(seen).includes('ceo-private'))
      }

      // an EVENT rule: holders of automations:manage on the event see the details, other readers do not
      const event = await createEvent(t, alice, { title: 'Board meeting', visibility: 40 })
      await addManager(t, tenant.id, event.id, 'mia', { role: 'event_manager:full' })
      const mia = await tenant.user('mia')
      const a = await eventAutomation(t, alice, event.id, {
        name: 'Log',
        trigger: { type: 'event.updated' },
        actions: [{ type: 'activity', message: 'about {{title}}' }]
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/automations/${a.id}/execute`, 202)
      await drain(engine())
      const history = async (token: string) =>
        (await t.as(token, { method: 'GET', url: `/api/v1/events/${event.id}/automations/${a.id}/executions` })).json()
          .items[0]
      assert.equal((await history(mia)).trigger.event_id, event.id)
      assert.equal((await history(mia)).action_results[0].status, 'succeeded')
      assert.deepEqual(
        [(await history(vera)).redacted, (await history(vera)).trigger, (await history(vera)).action_results],
        [true, {}, null]
      )
    })

    void it('webhook URLs are shown in full only to those who may manage the rule', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const vera = await tenant.user('vera', ['viewer'])
      const bob = await tenant.user('bob')
      const url = 'https://hooks.example.com/services/T000/B000/XXXXsecretXXXX?token=abc'
      const r = await rule(t, alice, {
        schedule: { event_type: 'contact.created' },
        actions: [{ type: 'webhook', url, secret: 'a-very-long-webhook-secret' }]
      })
      const masked = [{ type: 'webhook', url: 'https://hooks.example.com/…', secret: '********' }]
      assert.deepEqual((await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${r.id}` })).json().actions, [
        { type: 'webhook', url, secret: '********' }
      ])
      for (const reader of [vera, bob]) {
        assert.deepEqual(
          (await t.as(reader, { method: 'GET', url: `/api/v1/automation/rules/${r.id}` })).json().actions,
          masked
        )
        const list = (await t.as(reader, { method: 'GET', url: '/api/v1/automation/rules' })).json()
        assert.deepEqual(list.items.find((x: Json) => x.id === r.id)?.actions, masked)
        assert.ok(!JSON.stringify(list).includes('XXXXsecret'))
      }
      const event = await createEvent(t, alice, { visibility: 40 })
      const a = await eventAutomation(t, alice, event.id, {
        name: 'Hook',
        trigger: { type: 'event.updated' },
        actions: [{ type: 'webhook', url }]
      })
      assert.deepEqual(a.actions, [{ type: 'webhook', url }])
      assert.deepEqual(
        (await t.as(vera, { method: 'GET', url: `/api/v1/events/${event.id}/automations/${a.id}` })).json().actions,
        [{ type: 'webhook', url: 'https://hooks.example.com/…' }]
      )
      assert.deepEqual(
        (await t.as(vera, { method: 'GET', url: `/api/v1/events/${event.id}/automations` })).json().items[0].actions,
        [{ type: 'webhook', url: 'https://hooks.example.com/…' }]
      )
    })

    void it('a creator removed by the identity provider: the rule is disabled and says why, the execution fails, ' +
      'nothing is done', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('adam', ['admin'])
      const bob = await tenant.user('bob')
      const event = await createEvent(t, bob, { title: "Bob's" })
      const r = await eventRule(t, bob, event.id, { actions: [{ type: 'activity', message: 'ran' }] })
      await idpRemove(t, tenant.id, 'bob')
      await expectStatus(t, admin, 'PATCH', `/api/v1/events/${event.id}`, 200, { description: 'edited by the admin' })
      await drain(engine())
      const got = (await t.as(admin, { method: 'GET', url: `/api/v1/automation/rules/${r.id}` })).json()
      assert.equal(got.enabled, false)
      assert.match(got.disabled_reason, /creator bob was removed/)
      const [ex] = await executions(t, admin, r.id)
      assert.equal(ex?.status, 'failed')
      assert.match(ex?.error, /creator bob was removed/)
      assert.equal((await eventSnapshot(t, admin, event.id)).automationActivity, 0)
      const reported = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx
          .selectFrom('outbox')
          .select(['topic', 'payload'])
          .where('tenant_id', '=', tenant.id)
          .where('topic', '=', 'automation.rule_disabled')
          .execute()
      )
      assert.deepEqual(
        reported.map(o => o.payload.rule_id),
        [r.id]
      )
      // the rule stays off: further triggers run nothing
      await expectStatus(t, admin, 'PATCH', `/api/v1/events/${event.id}`, 200, { description: 'again' })
      await drain(engine())
      assert.deepEqual(
        (await executions(t, admin, r.id)).map(e => e.status),
        ['failed']
      )
      assert.equal((await eventSnapshot(t, admin, event.id)).automationActivity, 0)
      // an admin enabling it again takes it over: it acts as the admin, and the reason is cleared
      const enabled = (
        await t.as(admin, { method: 'PATCH', url: `/api/v1/automation/rules/${r.id}`, payload: { enabled: true } })
      ).json()
      assert.deepEqual([enabled.enabled, enabled.disabled_reason, enabled.creator_id], [true, null, 'adam'])
    })

    void it('a creator demoted as event manager: the action fails for good with a clear error, ' +
      'the event is unchanged', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const event = await createEvent(t, alice, { title: 'Parcel', template: 'delivery', visibility: 10 })
      await addManager(t, tenant.id, event.id, 'bob', { role: 'event_manager:full' })
      const a = await eventAutomation(t, bob, event.id, {
        name: 'Ship',
        trigger: { type: 'event.updated' },
        actions: TO_TRANSIT
      })
      await expectStatus(t, alice, 'PUT', `/api/v1/events/${event.id}/managers/bob`, 200, {
        permissions: [],
        role: 'event_manager:checkin'
      })
      // the event's creator runs it by hand: she may, but the rule acts as bob
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/automations/${a.id}/execute`, 202)
      await drain(engine())
      const [ex] = (
        await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/automations/${a.id}/executions` })
      ).json().items
      assert.deepEqual([ex.status, ex.attempts], ['failed', 1])
      assert.match(ex.error, /the rule's creator may not change the state of event \d+/)
      assert.equal(ex.action_results[0].status, 'failed')
      assert.equal((await eventSnapshot(t, alice, event.id)).state, 'pending')
    })

    void it('the rule acts as its last writer; a rule row from before run-as was stored acts as a member', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('adam', ['admin'])
      const bob = await tenant.user('bob')
      const carol = await tenant.user('carol')
      const event = await createEvent(t, carol, { title: 'Carol\'s', template: 'delivery', visibility: 10 })
      const r = await rule(t, admin, { schedule: BY_HAND, actions: TO_TRANSIT })
      // bob edits the admin's rule: it now acts as bob, who cannot see carol's event
      const patched = await t.as(bob, {
        method: 'PATCH',
        url: `/api/v1/automation/rules/${r.id}`,
        payload: { name: 'mine now' }
      })
      assert.equal(patched.json().creator_id, 'bob')
      await runOn(admin, r.id, event.id, 202)
      await drain(engine())
      const [ex] = await executions(t, admin, r.id)
      assert.deepEqual(
        [ex?.status, ex?.error],
        ['skipped', `the rule's creator may not see event ${event.id}; the rule did not run`]
      )
      assert.deepEqual(
        ex?.trigger,
        { manual: true, withheld: true },
        'the history keeps nothing the creator may not see'
      )
      assert.equal((await eventSnapshot(t, carol, event.id)).state, 'pending')

      // a row written without creator_roles (as migration 0011 left older rules) acts as a member, even for an admin
      // creator
      const legacy = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx
          .insertInto('automation_rules')
          .values({
            tenant_id: tenant.id,
            name: 'old',
            scope: 'GLOBAL',
            event_type: 'schedule.cron',
            schedule: JSON.stringify({ ...BY_HAND, timezone: 'UTC' }),
            conditions: '{}',
            actions: JSON.stringify(TO_TRANSIT),
            creator_id: 'adam'
          })
          .returning('id')
          .executeTakeFirstOrThrow()
      )
      await runOn(admin, legacy.id, event.id, 202)
      await drain(engine())
      const [old] = await executions(t, admin, legacy.id)
      assert.equal(old?.status, 'skipped')
      assert.equal((await eventSnapshot(t, carol, event.id)).state, 'pending')
    })

    /**
     * Generated over the action catalogue: for every action type (and notify recipient kind) whose
     * policy row needs a grant on the target event, a rule of bob's acts on his own event and is refused
     * on alice's, which he sees (visibility 40) but holds no grant on; her event is unchanged afterwards.
     * A new action type fails this test until it has a sample here.
     */
    void it('every event action of the catalogue is refused on an event the creator sees but holds no grant on, ' +
      'and acts on his own', async () => {
      const SAMPLES: Record<string, Json[]> = {
        notify: [{ type: 'notify', to: 'attendees', subject: 'from bob', body: 'about {{title}}' }],
        set_attendee_status: [{ type: 'set_attendee_status', from_status: ['invited'], status: 'declined' }],
        mark_no_shows: [{ type: 'mark_no_shows' }],
        send_invitations: [{ type: 'send_invitations', all: true }],
        activity: [{ type: 'activity', message: 'bob was here' }],
        transition: TO_TRANSIT,
        webhook: [] // names no event: it sends what the creator's rule was triggered with, which he sees
      }
      const catalogue = await t.as(await newTenant(t).user('reader'), {
        method: 'GET',
        url: '/api/v1/automation/actions'
      })
      const types = (catalogue.json().actions as Json[]).map(a => a.type as string)
      assert.deepEqual(
        types.filter(x => SAMPLES[x] === undefined),
        [],
        'add a sample for every action type'
      )
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      // both over, so that marking no-shows may run
      const over = { start_dt: '2020-01-01T10:00:00Z', end_dt: '2020-01-01T12:00:00Z' }
      const hers = await createEvent(t, alice, { title: 'Hers', template: 'delivery', visibility: 40, ...over })
      const his = await createEvent(t, bob, { title: 'His', template: 'delivery', visibility: 40, ...over })
      await addAttendee(t, tenant.id, hers.id, await addContact(t, alice, 'ann@example.test'), 'invited')
      await addAttendee(t, tenant.id, his.id, await addContact(t, bob, 'ben@example.test'), 'invited')
      await drain(engine())
      const before = await eventSnapshot(t, alice, hers.id)
      const sentBefore = await notificationCount(t, tenant.id)
      const rules: Array<{ id: string; action: Json }> = []
      for (const action of Object.values(SAMPLES).flat()) {
        rules.push({
          id: (await rule(t, bob, { schedule: { event_type: 'event.updated' }, actions: [action] })).id,
          action
        })
      }
      await expectStatuses(t, [
        [alice, 'PATCH', `/api/v1/events/${hers.id}`, 200, { description: 'edited by alice' }],
        [bob, 'PATCH', `/api/v1/events/${his.id}`, 200, { description: 'edited by bob' }]
      ])
      await drain(engine())
      for (const r of rules) {
        const runs = await executions(t, bob, r.id)
        const on = (id: number) => runs.find(x => Number(x.trigger?.event_id) === id)
        assert.equal(
          on(his.id)?.status,
          'succeeded',
          `${JSON.stringify(r.action)} on bob's own event: ${JSON.stringify(on(his.id))}`
        )
        assert.equal(
          on(hers.id)?.status,
          'failed',
          `${JSON.stringify(r.action)} on alice's event: ${JSON.stringify(on(hers.id))}`
        )
        assert.match(String(on(hers.id)?.error), /creator may not/)
      }
      assert.deepEqual(await eventSnapshot(t, alice, hers.id), before)
      // bob's notify reached his own attendee only
      assert.equal(await notificationCount(t, tenant.id), sentBefore + 1)
    })
  })
}

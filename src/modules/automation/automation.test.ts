import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { assertBadRequestAt } from '../../../test/helpers/problem.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { addManager, createEvent, type Json } from '../events/events.fixtures.ts'

const notifyCreator = { type: 'notify', to: 'creator', subject: 'Hello {{title}}', body: 'It happened' }

function ruleBody (extra: Json = {}): Json {
  return {
    name: 'Welcome',
    scope: 'GLOBAL',
    schedule: { event_type: 'contact.created' },
    conditions: { '==': [{ var: 'payload.source' }, 'api'] },
    actions: [notifyCreator],
    ...extra
  }
}

async function ruleCount (t: TestApp, token: string): Promise<number> {
  const res = await t.as(token, { method: 'GET', url: '/api/v1/automation/rules' })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().total
}

for (const kind of databases()) {
  void describe(`${kind}: automation rules`, () => {
    const t = useTestApp(kind)

    void it('creates, reads, lists with filters, replaces, patches and deletes a rule', async () => {
      const alice = await newTenant(t).user('alice')
      const created = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/automation/rules',
        payload: ruleBody({ description: 'greets', priority: 5 })
      })
      assert.equal(created.statusCode, 201, created.body)
      const rule = created.json()
      assert.match(rule.id, /^[0-9a-f-]{36}$/)
      assert.equal(created.headers.location, `/api/v1/automation/rules/${rule.id}`)
      assert.deepEqual({ ...rule, $schema: undefined, id: undefined, created_at: undefined, updated_at: undefined }, {
        $schema: undefined,
        id: undefined,
        created_at: undefined,
        updated_at: undefined,
        name: 'Welcome',
        description: 'greets',
        enabled: true,
        priority: 5,
        scope: 'GLOBAL',
        scope_id: null,
        org_id: null,
        schedule: { event_type: 'contact.created' },
        conditions: { '==': [{ var: 'payload.source' }, 'api'] },
        actions: [{ ...notifyCreator, channel: 'email', priority: 'normal' }],
        created_by_kind: 'user',
        creator_id: 'alice',
        version: 1,
        disabled_reason: null
      })
      const got = await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${rule.id}` })
      assert.equal(got.statusCode, 200)
      assert.deepEqual(got.json(), rule)

      const event = await createEvent(t, alice)
      const eventRule = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/automation/rules',
        payload: ruleBody({
          name: 'On publish',
          scope: 'EVENT',
          scope_id: String(event.id),
          schedule: { event_type: 'announcement.published' },
          enabled: false,
          conditions: {}
        })
      })
      assert.equal(eventRule.statusCode, 201, eventRule.body)

      const list = async (q: string) =>
        (await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules?${q}` })).json()
      assert.equal((await list('')).total, 2)
      assert.deepEqual((await list('scope=EVENT')).items.map((r: Json) => r.name), ['On publish'])
      assert.deepEqual((await list(`scope_id=${event.id}`)).items.map((r: Json) => r.name), ['On publish'])
      assert.deepEqual((await list('event_type=contact.created')).items.map((r: Json) => r.name), ['Welcome'])
      assert.deepEqual((await list('enabled=false')).items.map((r: Json) => r.name), ['On publish'])
      const page = await list('page=2&size=1')
      assert.deepEqual([page.page, page.size, page.total, page.items.length], [2, 1, 2, 1])

      const put = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/automation/rules/${rule.id}`,
        payload: ruleBody({
          name: 'Renamed',
          schedule: { event_type: 'schedule.cron', cron_expression: '0 9 * * 1', timezone: 'Europe/Berlin' }
        })
      })
      assert.equal(put.statusCode, 200, put.body)
      assert.deepEqual(
        [put.json().name, put.json().version, put.json().description, put.json().schedule],
        ['Renamed', 2, null, { event_type: 'schedule.cron', cron_expression: '0 9 * * 1', timezone: 'Europe/Berlin' }]
      )
      const patch = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/automation/rules/${rule.id}`,
        payload: { enabled: false }
      })
      assert.equal(patch.statusCode, 200, patch.body)
      assert.deepEqual([patch.json().name, patch.json().enabled, patch.json().version], ['Renamed', false, 3])

      const del = await t.as(alice, { method: 'DELETE', url: `/api/v1/automation/rules/${rule.id}` })
      assert.equal(del.statusCode, 204)
      await expectStatus(t, alice, 'GET', `/api/v1/automation/rules/${rule.id}`, 404)
      assert.equal(await ruleCount(t, alice), 1)
    })

    void it('refuses unknown triggers, actions and malformed conditions with the field named, ' +
      'and changes nothing', async () => {
      const alice = await newTenant(t).user('alice')
      const post = (payload: Json) => t.as(alice, { method: 'POST', url: '/api/v1/automation/rules', payload })
      assertBadRequestAt(
        await post(ruleBody({ schedule: { event_type: 'event.exploded' } })),
        'body.schedule.event_type'
      )
      assertBadRequestAt(
        await post(ruleBody({ actions: [notifyCreator, { type: 'launch_rockets' }] })),
        'body.actions[1].type'
      )
      assertBadRequestAt(
        await post(ruleBody({ actions: [{ type: 'notify', to: 'everyone', subject: 's', body: 'b' }] })),
        'body.actions[0].to'
      )
      assertBadRequestAt(
        await post(ruleBody({ actions: [{ type: 'webhook', url: 'ftp://example.com/x' }] })),
        'body.actions[0].url'
      )
      assertBadRequestAt(
        await post(ruleBody({ actions: [{ type: 'set_attendee_status', status: 'gone' }] })),
        'body.actions[0].status'
      )
      assertBadRequestAt(
        await post(ruleBody({ conditions: { method: ['payload', 'toString'] } })),
        'body.conditions.method'
      )
      assertBadRequestAt(await post(ruleBody({ conditions: { '==': [1, 1], '!=': [1, 2] } })), 'body.conditions')
      let deep: unknown = true
      for (let i = 0; i < 12; i++) deep = { '!': [deep] }
      assertBadRequestAt(await post(ruleBody({ conditions: deep })), 'body.conditions.![0].![0].![0].![0]')
      assertBadRequestAt(
        await post(ruleBody({ schedule: { event_type: 'schedule.cron', cron_expression: 'every tuesday' } })),
        'body.schedule.cron_expression'
      )
      assertBadRequestAt(
        await post(
          ruleBody({
            schedule: { event_type: 'schedule.cron', cron_expression: '0 9 * * *', timezone: 'Mars/Olympus' }
          })
        ),
        'body.schedule.timezone'
      )
      assertBadRequestAt(
        await post(ruleBody({ schedule: { event_type: 'event.starts_in' } })),
        'body.schedule.offset_minutes'
      )
      assertBadRequestAt(await post(ruleBody({ scope: 'EVENT' })), 'body.scope_id')
      assertBadRequestAt(await post(ruleBody({ scope: 'GLOBAL', scope_id: '12' })), 'body.scope_id')
      assertBadRequestAt(await post(ruleBody({ scope: 'CONTACT', scope_id: 'nope' })), 'body.scope_id')
      assert.equal(await ruleCount(t, alice), 0)
    })

    void it('needs automation permissions, and the event permission automations:manage for event rules', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vera', ['viewer'])
      await expectStatuses(t, [
        [viewer, 'POST', '/api/v1/automation/rules', 403, ruleBody()],
        [viewer, 'GET', '/api/v1/automation/rules', 200]
      ])
      const event = await createEvent(t, alice, { visibility: 40 })
      const forEvent = ruleBody({ scope: 'EVENT', scope_id: String(event.id) })
      const automations = `/api/v1/events/${event.id}/automations`
      const automation = { name: 'x', trigger: { type: 'event.updated' }, actions: [] }
      await expectStatuses(t, [
        [bob, 'POST', '/api/v1/automation/rules', 403, forEvent],
        [bob, 'POST', automations, 403, automation]
      ])
      await addManager(t, tenant.id, event.id, 'bob', { permissions: ['automations:manage'] })
      const other = await newTenant(t).user('mallory')
      await expectStatuses(t, [
        [bob, 'POST', '/api/v1/automation/rules', 201, forEvent],
        [other, 'POST', automations, 404, automation]
      ])
      assert.equal(await ruleCount(t, other), 0)
    })

    void it('hides rules of events the caller cannot see', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const event = await createEvent(t, alice, { visibility: 10 })
      const r = (
        await t.as(alice, {
          method: 'POST',
          url: '/api/v1/automation/rules',
          payload: ruleBody({ scope: 'EVENT', scope_id: String(event.id) })
        })
      ).json()
      const global = (
        await t.as(alice, { method: 'POST', url: '/api/v1/automation/rules', payload: ruleBody() })
      ).json()
      await expectStatuses(t, [
        [bob, 'GET', `/api/v1/automation/rules/${r.id}`, 404],
        [bob, 'GET', `/api/v1/automation/rules/${r.id}/executions`, 404],
        [bob, 'PATCH', `/api/v1/automation/rules/${r.id}`, 404, { enabled: false }],
        [bob, 'POST', `/api/v1/automation/rules/${r.id}/execute`, 404, {}]
      ])
      assert.deepEqual(
        (await t.as(bob, { method: 'GET', url: '/api/v1/automation/rules' })).json().items.map((x: Json) => x.id),
        [global.id]
      )
      assert.equal((await t.as(alice, { method: 'GET', url: '/api/v1/automation/rules' })).json().total, 2)
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${r.id}` })).json().enabled, true)
    })

    void it('refuses text that jsonb cannot store, naming the field', async () => {
      const alice = await newTenant(t).user('alice')
      const r = (await t.as(alice, { method: 'POST', url: '/api/v1/automation/rules', payload: ruleBody() })).json()
      const lone = '{"trigger_context":{"note":"a\\ud800b"}}'
      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/automation/rules/${r.id}/execute`,
        headers: { 'content-type': 'application/json' },
        payload: lone
      })
      assertBadRequestAt(res, 'body.trigger_context.note')
      assertBadRequestAt(
        await t.as(alice, {
          method: 'POST',
          url: '/api/v1/automation/rules',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(ruleBody()).replace('"api"', '"\\udc00"')
        }),
        'body.conditions.==[1]'
      )
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${r.id}/executions` })).json().total,
        0
      )
      assert.equal(await ruleCount(t, alice), 1)
    })

    void it('never shows webhook secrets; sending the mask back keeps the stored secret', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const secret = 'a-very-long-webhook-secret'
      const hook = { type: 'webhook', url: 'https://hooks.example.com/in', secret }
      const created = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/automation/rules',
        payload: ruleBody({ actions: [hook] })
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.deepEqual(created.json().actions, [{ ...hook, secret: '********' }])
      const got = (await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${created.json().id}` })).json()
      assert.deepEqual(got.actions, [{ ...hook, secret: '********' }])
      const {
        id,
        $schema,
        created_at: _c,
        updated_at: _u,
        version: _v,
        org_id: _o,
        created_by_kind: _k,
        creator_id: _cr,
        disabled_reason: _d,
        ...writable
      } = got
      await expectStatus(t, alice, 'PUT', `/api/v1/automation/rules/${id}`, 200, { ...writable, name: 'Renamed' })
      const stored = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx.selectFrom('automation_rules').select('actions').where('id', '=', id).executeTakeFirstOrThrow()
      )
      assert.deepEqual(stored.actions, [hook])
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PUT',
          url: `/api/v1/automation/rules/${id}`,
          payload: { ...writable, actions: [{ ...hook, url: 'https://elsewhere.example.com/', secret: '********' }] }
        }),
        'body.actions[0].secret'
      )
      void $schema
    })

    void it('serves the trigger and action catalogues', async () => {
      const alice = await newTenant(t).user('alice')
      const triggers = await t.as(alice, { method: 'GET', url: '/api/v1/automation/triggers' })
      assert.equal(triggers.statusCode, 200)
      const types = triggers.json().triggers.map((x: Json) => x.type)
      for (const type of [
        'event.published',
        'attendee.status_changed',
        'space.published',
        'contact.created',
        'user.added',
        'schedule.cron',
        'event.starts_in'
      ]) { assert.ok(types.includes(type), type) }
      const actions = await t.as(alice, { method: 'GET', url: '/api/v1/automation/actions' })
      assert.deepEqual(
        actions.json().actions.map((x: Json) => x.type),
        ['notify', 'activity', 'transition', 'set_attendee_status', 'mark_no_shows', 'send_invitations', 'webhook']
      )
    })
  })

  void describe(`${kind}: event automations`, () => {
    const t = useTestApp(kind)

    void it('creates, lists, reads, replaces and deletes automations of an event', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      const base = `/api/v1/events/${event.id}/automations`
      const body = {
        name: 'Decline alert',
        trigger: { type: 'attendee.status_changed', conditions: { '==': [{ var: 'payload.status' }, 'declined'] } },
        actions: [{ type: 'notify', to: 'managers', subject: 'Declined', body: '{{contact_id}}' }]
      }
      const created = await t.as(alice, { method: 'POST', url: base, payload: body })
      assert.equal(created.statusCode, 201, created.body)
      const a = created.json()
      assert.deepEqual({ ...a, $schema: undefined, id: undefined, created_at: undefined, updated_at: undefined }, {
        $schema: undefined,
        id: undefined,
        created_at: undefined,
        updated_at: undefined,
        name: 'Decline alert',
        description: null,
        enabled: true,
        trigger: body.trigger,
        actions: [{ ...body.actions[0], channel: 'email', priority: 'normal' }]
      })
      const rule = (await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${a.id}` })).json()
      assert.deepEqual(
        [rule.scope, rule.scope_id, rule.schedule],
        ['EVENT', String(event.id), { event_type: 'attendee.status_changed' }]
      )

      const list = await t.as(alice, { method: 'GET', url: base })
      assert.deepEqual([list.json().total, list.json().items[0].id], [1, a.id])
      assert.deepEqual((await t.as(alice, { method: 'GET', url: `${base}/${a.id}` })).json(), a)

      const put = await t.as(alice, {
        method: 'PUT',
        url: `${base}/${a.id}`,
        payload: {
          name: 'Reminder',
          enabled: false,
          trigger: { type: 'event.starts_in', offset_minutes: 60 },
          actions: [{ type: 'activity' }]
        }
      })
      assert.equal(put.statusCode, 200, put.body)
      assert.deepEqual(
        [put.json().name, put.json().enabled, put.json().trigger, put.json().actions],
        ['Reminder', false, { type: 'event.starts_in', offset_minutes: 60 }, [{ type: 'activity', kind: 'automation' }]]
      )

      const refused: Array<[location: string, method: 'POST' | 'PUT', url: string, payload: Json]> = [
        ['body.trigger.type', 'PUT', `${base}/${a.id}`, { name: 'x', trigger: { type: 'nope.never' }, actions: [] }],
        ['body.actions[1].type', 'POST', base, {
          name: 'x',
          trigger: { type: 'event.updated' },
          actions: [{ type: 'activity' }, { type: 'explode' }]
        }],
        ['body.trigger.conditions.==[0].var', 'POST', base, {
          name: 'x',
          trigger: { type: 'event.updated', conditions: { '==': [{ var: { x: 1 } }, 1] } },
          actions: []
        }]
      ]
      for (const [location, method, url, payload] of refused) {
        assertBadRequestAt(await t.as(alice, { method, url, payload }), location)
      }
      assert.equal((await t.as(alice, { method: 'GET', url: `${base}/${a.id}` })).json().name, 'Reminder')

      const other = await createEvent(t, alice)
      await expectStatuses(t, [
        [alice, 'GET', `/api/v1/events/${other.id}/automations/${a.id}`, 404],
        [alice, 'DELETE', `${base}/${a.id}`, 204],
        [alice, 'GET', `${base}/${a.id}`, 404]
      ])
      assert.equal((await t.as(alice, { method: 'GET', url: base })).json().total, 0)
    })

    void it('offers templates per event template that can be posted back as they are', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice, { template: 'announcement' })
      const res = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/automations/templates` })
      assert.equal(res.statusCode, 200)
      const templates = res.json() as Json[]
      assert.ok(templates.some(x => x.trigger.type === 'event.starts_in' && x.trigger.offset_minutes === 1440))
      assert.ok(templates.some(x => x.trigger.type === 'announcement.published'))
      for (const tpl of templates) {
        const posted = await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${event.id}/automations`,
          payload: tpl
        })
        assert.equal(posted.statusCode, 201, posted.body)
      }
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/automations` })).json().total,
        templates.length
      )
    })

    void it('runs an automation on request: 202 and a queued execution in the history at once', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      const base = `/api/v1/events/${event.id}/automations`
      const a = (
        await t.as(alice, {
          method: 'POST',
          url: base,
          payload: { name: 'Log', trigger: { type: 'event.updated' }, actions: [{ type: 'activity' }] }
        })
      ).json()
      const run = await t.as(alice, { method: 'POST', url: `${base}/${a.id}/execute` })
      assert.equal(run.statusCode, 202, run.body)
      assert.equal(run.body, '')
      const history = await t.as(alice, { method: 'GET', url: `${base}/${a.id}/executions` })
      assert.equal(history.statusCode, 200)
      assert.equal(history.json().total, 1)
      const ex = history.json().items[0]
      assert.deepEqual(
        [ex.status, ex.attempts, ex.trigger_type, ex.trigger.event_id, ex.started_at, ex.conditions_met],
        ['queued', 0, 'event.updated', event.id, null, null]
      )
      const byRule = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/automation/rules/${a.id}/execute`,
        payload: { trigger_context: { note: 'manual' } }
      })
      assert.equal(byRule.statusCode, 202, byRule.body)
      assert.deepEqual([byRule.json().status, byRule.json().trigger.note], ['queued', 'manual'])
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/automation/rules/${a.id}/executions` })).json().total,
        2
      )
    })

    void it('pages the rules by cursor as by page, per filter (rules created together share created_at)', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      for (let i = 0; i < 5; i++) {
        const res = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/automation/rules',
          payload: ruleBody({ name: `R${i}`, enabled: i % 2 === 0 })
        })
        assert.equal(res.statusCode, 201, res.body)
      }
      // two more rows with one created_at: the order falls back to the id
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.updateTable('automation_rules').set({ created_at: new Date('2026-01-01T00:00:00Z') })
          .where('tenant_id', '=', tenant.id).where('name', 'in', ['R1', 'R3']).execute()
      })
      for (const q of ['', '&enabled=true']) {
        const all = ((await getJson(t, alice, `/api/v1/automation/rules?size=100${q}`)).items as Json[]).map(r => r.id)
        const walked = (await itemsByCursor(t, alice, `/api/v1/automation/rules?size=2${q}`)).map(r => r.id)
        assert.deepEqual(walked, all, q)
        assert.equal(all.length, q === '' ? 5 : 3)
      }
      const first = await getJson(t, alice, '/api/v1/automation/rules?size=2')
      await refusedCursor(t, alice, '/api/v1/automation/rules?size=2&enabled=false', first.next_cursor)
    })
  })
}

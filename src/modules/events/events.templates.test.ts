import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { transitionEvent } from './events.service.ts'
import { permissionsOf } from '../../platform/auth/permissions.ts'
import { createEvent, getEvent, outboxTopics, type Json } from './events.fixtures.ts'

for (const kind of databases()) {
  void describe(`${kind}: event templates, transitions and activity`, () => {
    const t = useTestApp(kind)

    void it('lists templates and reads the latest version of one', async () => {
      const viewer = await newTenant(t).user('vera', ['viewer'])
      const list = await expectStatus(t, viewer, 'GET', '/api/v1/event-templates', 200)
      const ids = (list.json().items as Json[]).map(i => i.id)
      for (const id of ['generic', 'announcement', 'meeting', 'delivery']) assert.ok(ids.includes(id), id)
      const d = await expectStatus(t, viewer, 'GET', '/api/v1/event-templates/delivery', 200)
      const body = d.json()
      assert.equal(body.$schema, 'http://localhost:8080/schemas/EventTemplate.json')
      assert.equal(body.version, 2)
      assert.deepEqual(body.versions, [1, 2])
      assert.equal(body.initial_state, 'pending')
      assert.ok(body.states.includes('in_transit'))
      assert.ok(body.allowed_attachment_kinds.includes('proof_of_delivery'))
      assert.ok(body.participant_roles.includes('courier'))
      const guarded = (body.transitions as Json[]).find(tr => tr.to === 'delivered')
      assert.deepEqual(guarded?.guard?.required_payload, ['proof_of_delivery'])
      const v1 = await t.as(viewer, { method: 'GET', url: '/api/v1/event-templates/delivery?version=1' })
      assert.equal(v1.json().version, 1)
      const generic = (await t.as(viewer, { method: 'GET', url: '/api/v1/event-templates/generic' })).json()
      assert.equal(generic.states, null)
      await expectStatuses(t, [
        [viewer, 'GET', '/api/v1/event-templates/party', 404],
        [viewer, 'GET', '/api/v1/event-templates/delivery?version=9', 404]
      ])
    })

    void it('moves a delivery along its machine: 409 for moves not allowed, 422 when the guard refuses', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { template: 'delivery' })
      const url = `/api/v1/events/${e.id}/transition`

      const jump = await t.as(alice, {
        method: 'POST',
        url,
        payload: { to_state: 'delivered', payload: { proof_of_delivery: 'x' } }
      })
      assert.equal(jump.statusCode, 409)
      assert.match(jump.json().detail, /allowed: in_transit, cancelled/)

      const go = await t.as(alice, {
        method: 'POST',
        url,
        headers: { 'if-match': '"1"' },
        payload: { to_state: 'in_transit', reason: 'picked up', payload: { carrier: 'ACME' } }
      })
      assert.equal(go.statusCode, 200, go.body)
      assert.equal(go.json().state, 'in_transit')
      assert.equal(go.json().$schema, 'http://localhost:8080/schemas/Event.json')

      const noProof = await t.as(alice, { method: 'POST', url, payload: { to_state: 'delivered', payload: {} } })
      assert.equal(noProof.statusCode, 422)
      assert.deepEqual(noProof.json().errors.map((x: Json) => x.location), ['body.payload.proof_of_delivery'])
      assert.equal((await getEvent(t, alice, e.id)).json().state, 'in_transit')

      const done = await t.as(alice, {
        method: 'POST',
        url,
        payload: { to_state: 'delivered', payload: { proof_of_delivery: 'signature-42' }, reason: 'handed over' }
      })
      assert.equal(done.statusCode, 200)
      assert.equal((await getEvent(t, alice, e.id)).json().state, 'delivered')
      const final = await t.as(alice, { method: 'POST', url, payload: { to_state: 'in_transit' } })
      assert.equal(final.statusCode, 409)
      assert.match(final.json().detail, /allowed: none/)

      const rows = (
        await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}/activity?kind=state_changed` })
      ).json().items as Json[]
      assert.equal(rows.length, 2)
      assert.equal(rows[0]?.payload.reason, 'handed over')
      assert.equal(rows[0]?.payload.from_state, 'in_transit')
      assert.equal(rows[0]?.payload.to_state, 'delivered')
      assert.equal(rows[0]?.actor_id, 'alice')
      assert.equal(rows[1]?.payload.reason, 'picked up')
      const topics = await outboxTopics(t, tenant.id)
      assert.deepEqual(topics.filter(x => x === 'event.transitioned').length, 2)
    })

    void it('refuses transitions of templates without a machine, bad bodies, and callers without rights', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vera', ['viewer'])
      const other = await newTenant(t).user('mallory', ['admin'])
      const g = await createEvent(t, alice, { visibility: 40 })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${g.id}/transition`, 409, { to_state: 'done' })
      const d = await createEvent(t, alice, { template: 'delivery', visibility: 40 })
      const url = `/api/v1/events/${d.id}/transition`
      const missing = await t.as(alice, { method: 'POST', url, payload: { reason: 'x' } })
      assert.equal(missing.statusCode, 400)
      assert.equal(missing.json().errors[0].location, 'body.to_state')
      const badPayload = await t.as(alice, { method: 'POST', url, payload: { to_state: 'in_transit', payload: 'x' } })
      assert.equal(badPayload.statusCode, 400)
      assert.equal(badPayload.json().errors[0].location, 'body.payload')
      assert.equal((await t.as(viewer, { method: 'POST', url, payload: { to_state: 'in_transit' } })).statusCode, 403)
      assert.equal((await t.as(bob, { method: 'POST', url, payload: { to_state: 'in_transit' } })).statusCode, 403)
      assert.equal((await t.as(other, { method: 'POST', url, payload: { to_state: 'in_transit' } })).statusCode, 404)
      assert.equal((await getEvent(t, alice, d.id)).json().state, 'pending')
    })

    void it('records a move by an automation acting as its creator with no actor and the chain depth', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { template: 'delivery', visibility: 10 })
      const row = await withTenant(
        t.ctx.db,
        { tenantId: tenant.id },
        async trx =>
          await transitionEvent(
            trx,
            {
              userId: 'alice',
              tenantId: tenant.id,
              email: null,
              orgId: null,
              roles: ['member'],
              effectiveRole: 'member',
              permissions: new Set(permissionsOf(['member'])),
              exp: 0,
              depth: 1
            },
            e.id,
            'in_transit',
            {},
            'scheduled dispatch'
          )
      )
      assert.equal(row.state, 'in_transit')
      const rows = (
        await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}/activity?kind=state_changed` })
      ).json().items as Json[]
      assert.equal(rows[0]?.actor_id, null)
      const [depth] = await outboxEvents(t, tenant.id, 'event.transitioned')
      assert.ok(depth !== undefined, 'an event.transitioned domain event')
      assert.equal(depth.depth, 1)
      assert.equal(depth.actor_id, null)
      assert.equal(depth.payload.state, 'in_transit')
      assert.equal(depth.payload.template, 'delivery')
      assert.equal(depth.payload.event_id, e.id)
    })

    void it('appends and lists activity rows: template kinds, limit, kind filter, newest first', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-1' })
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vera', ['viewer'])
      const other = await newTenant(t).user('mallory', ['admin'])
      const e = await createEvent(t, alice, { template: 'delivery', visibility: 40 })
      const url = `/api/v1/events/${e.id}/activity`
      const add = await t.as(alice, {
        method: 'POST',
        url,
        payload: { kind: 'location_update', payload: { lat: 1, lng: 2 } }
      })
      assert.equal(add.statusCode, 201, add.body)
      const row = add.json()
      assert.equal(row.$schema, 'http://localhost:8080/schemas/ActivityRow.json')
      assert.deepEqual(
        { ...row, id: 0, at: '' },
        {
          $schema: row.$schema,
          id: 0,
          event_id: e.id,
          org_id: 'org-1',
          actor_id: 'alice',
          kind: 'location_update',
          payload: { lat: 1, lng: 2 },
          at: ''
        }
      )
      assert.equal((await t.as(alice, { method: 'POST', url, payload: { kind: 'note' } })).statusCode, 201)

      for (const [payload, location] of [
        [{ kind: 'acknowledged' }, 'body.kind'],
        [{ kind: 'published' }, 'body.kind'],
        [{ payload: {} }, 'body.kind'],
        [{ kind: 'note', payload: [1] }, 'body.payload']
      ] as Array<[Json, string]>) {
        const res = await t.as(alice, { method: 'POST', url, payload })
        assert.equal(res.statusCode, 400, res.body)
        assert.equal(res.json().errors[0].location, location)
      }
      assert.equal((await t.as(viewer, { method: 'POST', url, payload: { kind: 'note' } })).statusCode, 403)
      assert.equal((await t.as(bob, { method: 'POST', url, payload: { kind: 'note' } })).statusCode, 403)
      assert.equal((await t.as(other, { method: 'POST', url, payload: { kind: 'note' } })).statusCode, 404)
      assert.equal((await t.as(other, { method: 'GET', url })).statusCode, 404)

      const all = (await t.as(viewer, { method: 'GET', url })).json().items as Json[]
      assert.deepEqual(all.map(i => i.kind), ['note', 'location_update', 'created'])
      const one = (await t.as(viewer, { method: 'GET', url: `${url}?limit=1` })).json().items as Json[]
      assert.deepEqual(one.map(i => i.kind), ['note'])
      const filtered = (await t.as(viewer, { method: 'GET', url: `${url}?kind=location_update` })).json()
        .items as Json[]
      assert.deepEqual(filtered.map(i => i.kind), ['location_update'])
      for (const q of ['limit=0', 'limit=1001', 'limit=x']) {
        const res = await t.as(viewer, { method: 'GET', url: `${url}?${q}` })
        assert.equal(res.statusCode, 400, q)
        assert.equal(res.json().errors[0].location, 'query.limit')
      }
    })
  })
}

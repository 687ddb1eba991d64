/**
 * What leaves the service shows only what its reader may read (docs/security.md, "What leaves the service"; the
 * outbound rule, src/modules/disclosure/disclosure.ts). Each case is a finding of the second attack pass, played by a
 * member of the same tenant with fewer rights: a resource they may not read is created and changed with a marker in
 * its text, and the channel they read (a rule's history, a webhook receiver, a contact's timeline, space analytics
 * and their CSV, the notifications list, a calendar feed) must not carry it.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from './helpers/build-app.ts'
import { expectStatus } from './helpers/requests.ts'
import { insertRow } from './helpers/rows.ts'
import { createEvent, publishEvent } from '../src/modules/events/events.fixtures.ts'
import { createSpace, publish } from '../src/modules/spaces/spaces.fixtures.ts'
import { drain, executions, rule } from '../src/modules/automation/automation.fixtures.ts'
import { dispatchOutbox } from '../src/modules/automation/automation.dispatcher.ts'
import { allowListOf } from '../src/platform/http/outbound.ts'
import { deliverDue, dispatchWebhooks } from '../src/modules/webhooks/webhooks.delivery.ts'

type Json = Record<string, any>

const marker = (): string => `MARK${Math.random().toString(36).slice(2, 10)}`

for (const kind of databases()) {
  void describe(`${kind}: what leaves the service shows only what its reader may read`, () => {
    const t = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })
    const received: string[] = []
    const receiver = http.createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => { body += c.toString() })
      req.on('end', () => { received.push(body); res.writeHead(204).end() })
    })
    before(async () => { await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve)) })
    after(async () => { await new Promise(resolve => receiver.close(resolve)) })
    const receiverUrl = (): string => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

    const contact = async (token: string, body: Json): Promise<Json> =>
      (await expectStatus(t, token, 'POST', '/api/v1/contacts', 201, body)).json()

    void it("(1) a member's GLOBAL space rule never runs on another member's private draft space", async () => {
      const tenant = newTenant(t)
      const mallory = await tenant.user('mallory')
      const bob = await tenant.user('bob')
      const created = await rule(t, mallory, { schedule: { event_type: 'space.created' }, actions: [] })
      const linked = await rule(t, mallory, { schedule: { event_type: 'space.contact_added' }, actions: [] })
      const secret = marker()
      const draft = await createSpace(t, bob, { title: `Private ${secret}` })
      const personal = await contact(bob, { first_name: `Personal ${secret}` })
      await expectStatus(t, bob, 'POST', `/api/v1/spaces/${draft.id as number}/contacts`, 201,
        { contact_id: personal.id })
      await drain(t.ctx.engines.automation, { tenantId: tenant.id })
      await expectStatus(t, mallory, 'GET', `/api/v1/spaces/${draft.id as number}`, 404)
      const history = [...await executions(t, mallory, created.id), ...await executions(t, mallory, linked.id)]
      assert.deepEqual(history, [], 'no run of what mallory may not read')
      assert.ok(!JSON.stringify(history).includes(secret))
      assert.ok(!JSON.stringify(history).includes(personal.id as string))
    })

    void it('(2) a GLOBAL rule on attendee.added never runs for an event whose attendees its creator ' +
      'may not read', async () => {
      const tenant = newTenant(t)
      const mallory = await tenant.user('mallory')
      const olga = await tenant.user('olga')
      const r = await rule(t, mallory, { schedule: { event_type: 'attendee.added' }, actions: [] })
      const event = await createEvent(t, olga, { title: 'Open day', visibility: 40 })
      await publishEvent(t, olga, event.id as number)
      const guest = await contact(olga, { first_name: 'Guest' })
      await expectStatus(t, olga, 'POST', `/api/v1/events/${event.id as number}/attendees`, 201,
        { contact_id: guest.id, status: 'confirmed' })
      await drain(t.ctx.engines.automation, { tenantId: tenant.id })
      await expectStatus(t, mallory, 'GET', `/api/v1/events/${event.id as number}`, 200)
      await expectStatus(t, mallory, 'GET', `/api/v1/events/${event.id as number}/attendees`, 403)
      const history = await executions(t, mallory, r.id)
      assert.deepEqual(history.map(x => x.trigger?.contact_id), [], 'no run tells who attends')
    })

    void it("(3) a contact's timeline shows no automation item of an attendance the caller may not read", async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
      const olga = await tenant.user('olga', ['member'], { orgId: 'org-a' })
      const mia = await tenant.user('mia', ['member'], { orgId: 'org-a' })
      // a rule of the admin on attendee.added runs (the admin reads every attendee list)
      await rule(t, admin, { schedule: { event_type: 'attendee.added' }, actions: [] })
      const secret = marker()
      const event = await createEvent(t, olga, { title: `Closed meeting ${secret}`, visibility: 30 })
      await publishEvent(t, olga, event.id as number)
      // a contact made by a member of org-a is the organization's (every member of it reads it)
      const shared = await contact(olga, { first_name: 'Shared' })
      await expectStatus(t, olga, 'POST', `/api/v1/events/${event.id as number}/attendees`, 201,
        { contact_id: shared.id, status: 'confirmed' })
      await drain(t.ctx.engines.automation, { tenantId: tenant.id })
      // mia sees the organization's contact and the event, but not who attends it
      await expectStatus(t, mia, 'GET', `/api/v1/events/${event.id as number}/attendees`, 403)
      const theirs = (await expectStatus(t, mia, 'GET', `/api/v1/contacts/${shared.id as string}/timeline`, 200)).json()
      assert.deepEqual(theirs.items, [], JSON.stringify(theirs))
      // the admin's timeline still shows the attendance and the run
      const admins =
        (await expectStatus(t, admin, 'GET', `/api/v1/contacts/${shared.id as string}/timeline`, 200)).json()
      assert.deepEqual(admins.items.map((i: Json) => i.kind).sort(), ['attendance', 'automation'])
    })

    void it("(4) space analytics and their CSV leave out a linked event the space's manager may not see", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const carol = await tenant.user('carol')
      const space = await createSpace(t, alice, { title: 'Club' })
      await publish(t, alice, space.id as number)
      const secret = marker()
      const hidden = await createEvent(t, carol, { title: `Private ${secret}`, visibility: 10 })
      await publishEvent(t, carol, hidden.id as number)
      const shown = await createEvent(t, alice, { title: 'Open evening', visibility: 40 })
      await publishEvent(t, alice, shown.id as number)
      // a link written by hand (carol has no right on the space): what the analytics read must still hide it
      await insertRow(t, tenant.id, 'event_spaces', { event_id: hidden.id as number, space_id: space.id as number })
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${space.id as number}/events`, 201, { event_id: shown.id })
      await expectStatus(t, alice, 'GET', `/api/v1/events/${hidden.id as number}`, 404)
      const json = (await expectStatus(t, alice, 'GET', `/api/v1/spaces/${space.id as number}/analytics`, 200)).body
      const csv =
        (await expectStatus(t, alice, 'GET', `/api/v1/spaces/${space.id as number}/analytics/export`, 200)).body
      for (const text of [json, csv]) {
        assert.ok(!text.includes(secret), text.slice(0, 500))
        assert.ok(text.includes('Open evening'))
      }
    })

    void it("(5) a tenant admin's webhook never receives another member's personal contact", async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
      // a member of no organization: his contacts are his alone (admins included)
      const bob = await tenant.user('bob', ['member'])
      const mia = await tenant.user('mia', ['member'], { orgId: 'org-a' })
      await expectStatus(t, admin, 'POST', '/api/v1/webhooks', 201,
        { url: receiverUrl(), event_types: ['contact.created'] })
      const secret = marker()
      const personal = await contact(bob, { first_name: 'Private', email: `${secret}@example.test` })
      const shared = await contact(mia, { first_name: 'Shared', email: `shared-${secret}@example.test` })
      await expectStatus(t, admin, 'GET', `/api/v1/contacts/${personal.id as string}`, 404)
      const engine = { db: t.ctx.db, allow: allowListOf(['127.0.0.1']), timeoutMs: 2000 }
      await dispatchWebhooks(engine)
      await deliverDue(engine)
      const mine = received.filter(b => b.includes(secret))
      assert.equal(mine.length, 1, 'the organization contact only')
      assert.ok(mine[0]?.includes(shared.id as string), mine[0])
      assert.ok(!received.some(b => b.includes(personal.id as string) || b.includes(`"${secret}@`)),
        received.join('\n'))
    })

    void it('(6) the notifications list withholds the address of a contact the admin may not read', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
      // a member of no organization: her contacts are hers alone (admins included)
      const olga = await tenant.user('olga', ['member'])
      const secret = marker()
      const event = await createEvent(t, olga, { title: 'Dinner', visibility: 40 })
      await publishEvent(t, olga, event.id as number)
      const personal = await contact(olga, { first_name: 'Private', email: `${secret}@example.test` })
      await expectStatus(t, olga, 'POST', `/api/v1/events/${event.id as number}/attendees`, 201,
        { contact_id: personal.id, status: 'invited' })
      // the cancellation tells every attendee by mail
      await expectStatus(t, olga, 'POST', `/api/v1/events/${event.id as number}/cancel`, 200, { reason: 'rain' })
      await expectStatus(t, admin, 'GET', `/api/v1/contacts/${personal.id as string}`, 404)
      const list = (await expectStatus(t, admin, 'GET', '/api/v1/notifications?size=100', 200)).json()
      assert.ok(list.items.length > 0)
      assert.ok(!JSON.stringify(list).includes(secret), JSON.stringify(list).slice(0, 800))
      assert.ok(list.items.some((n: Json) => n.recipient === 'withheld'))
    })

    void it('(7) a calendar feed reads as its user is now: a move to another organization hides the first ' +
      'one\'s events', async () => {
      const tenant = newTenant(t)
      const olga = await tenant.user('olga', ['member'], { orgId: 'org-a' })
      const secret = marker()
      const event = await createEvent(t, olga, {
        title: `Board ${secret}`,
        visibility: 30,
        start_dt: new Date(Date.now() + 7 * 86_400_000).toISOString(),
        end_dt: new Date(Date.now() + 7 * 86_400_000 + 3_600_000).toISOString()
      })
      await publishEvent(t, olga, event.id as number)
      const space = await createSpace(t, olga, { title: 'Org space', visibility: 30 })
      await publish(t, olga, space.id as number)
      await expectStatus(t, olga, 'POST', `/api/v1/spaces/${space.id as number}/events`, 201, { event_id: event.id })
      // his first token was issued a minute before the one that moves him
      const vic = await tenant.user('vic', ['member'], { orgId: 'org-a', issuedAt: Math.floor(Date.now() / 1000) - 60 })
      const token = (await expectStatus(t, vic, 'POST', '/api/v1/feed-tokens', 201,
        { scope: 'space', space_id: space.id })).json().token as string
      const url = `/api/v1/spaces/${space.id as number}/calendar.ics?token=${token}`
      const before = await t.app.inject({ method: 'GET', url })
      assert.equal(before.statusCode, 200, before.body)
      assert.ok(before.body.includes(secret), before.body.slice(0, 600))
      // vic moves to org-b: his next request carries the new organization
      const moved = await tenant.user('vic', ['member'], { orgId: 'org-b' })
      await expectStatus(t, moved, 'GET', `/api/v1/events/${event.id as number}`, 404)
      const later = await t.app.inject({ method: 'GET', url })
      assert.ok(!later.body.includes(secret), later.body.slice(0, 400))
      // his older token, still within its lifetime, does not move him back
      await expectStatus(t, vic, 'GET', '/api/v1/auth/me', 200)
      const again = await t.app.inject({ method: 'GET', url })
      assert.ok(!again.body.includes(secret), again.body.slice(0, 400))
    })
    void it('a run re-checks: a rule whose creator lost sight of its event between dispatch and run neither runs nor ' +
      'keeps what it was told', async () => {
      const tenant = newTenant(t)
      const olga = await tenant.user('olga', ['member'], { orgId: 'org-a' })
      const mallory = await tenant.user('mallory', ['member'], { orgId: 'org-a' })
      const r = await rule(t, mallory, {
        schedule: { event_type: 'event.updated' },
        actions: [{ type: 'webhook', url: receiverUrl() }]
      })
      const event = await createEvent(t, olga, { title: 'Board', visibility: 30 })
      await publishEvent(t, olga, event.id as number)
      const engine = t.ctx.engines.automation
      await drain(engine, { tenantId: tenant.id })
      const secret = marker()
      await expectStatus(t, olga, 'PATCH', `/api/v1/events/${event.id as number}`, 200,
        { title: `Board ${secret}`, description: secret })
      // dispatched while mallory sees the event: a run is queued with what the domain event said
      await dispatchOutbox(engine)
      // then she moves to org-b (her next request carries it) before the run
      const moved = await tenant.user('mallory', ['member'], { orgId: 'org-b' })
      await expectStatus(t, moved, 'GET', `/api/v1/events/${event.id as number}`, 404)
      const sent = received.length
      await drain(engine, { tenantId: tenant.id })
      const history = await executions(t, moved, r.id)
      const run = history.find(x => x.trigger_type === 'event.updated')
      assert.equal(run?.status, 'skipped', JSON.stringify(history))
      assert.equal(run?.trigger?.withheld, true, JSON.stringify(run))
      assert.ok(!JSON.stringify(history).includes(secret), JSON.stringify(history))
      assert.ok(!received.slice(sent).some(b => b.includes(secret)), 'the webhook action never posted it')
    })
  })
}

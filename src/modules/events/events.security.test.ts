/**
 * Security findings of the events module: linking an event to a space needs rights on both
 * (finding 5), and a draft clone is judged by its published row's audience (finding 12).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { createSpace, publish } from '../spaces/spaces.fixtures.ts'
import { createEvent, getEvent, publishEvent, type Json } from './events.fixtures.ts'

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString()

async function spacesOfEvent (t: TestApp, token: string, id: number) {
  const got = await getEvent(t, token, id)
  assert.equal(got.statusCode, 200, got.body)
  const links = await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/spaces` })
  assert.equal(links.statusCode, 200, links.body)
  return { spaces: got.json().spaces as Json[], revision: got.headers.etag, links: links.json().total as number }
}

const publicPage = async (t: TestApp, id: number) =>
  await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${id}` })

for (const kind of databases()) {
  void describe(`${kind}: event security (space links, draft clones)`, () => {
    const t = useTestApp(kind)

    void it('a member cannot link her event to a hidden draft space: 404 without its title, nothing linked, ' +
      'nothing on its public page', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('ada', ['admin'])
      const alice = await tenant.user('alice')
      const hidden = await createSpace(t, admin, { title: 'Secret merger plans', visibility: 40 })
      const e = await createEvent(t, alice, {
        title: 'Alice open day',
        visibility: 40,
        start_dt: future(3),
        end_dt: future(4)
      })
      await publishEvent(t, alice, e.id)
      const before = await spacesOfEvent(t, alice, e.id)
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${hidden.id}` })).statusCode,
        404,
        'the draft space is hidden from alice'
      )

      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${e.id}/spaces`,
        payload: { space_id: hidden.id }
      })
      assert.equal(res.statusCode, 404, res.body)
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
      assert.equal(res.body.includes('Secret merger plans'), false, 'the title does not leak')
      const del = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${e.id}/spaces/${hidden.id}` })
      assert.equal(del.statusCode, 404, del.body)

      const after = await spacesOfEvent(t, alice, e.id)
      assert.deepEqual(after, before, 'spaces, links and revision unchanged')
      assert.deepEqual(after.spaces, [])
      assert.equal((await t.as(admin, { method: 'GET', url: `/api/v1/spaces/${hidden.id}/events` })).json().total, 0)
      assert.equal((await publicPage(t, hidden.id)).statusCode, 404, 'still a draft: no public page')

      // once published, the page shows only what was linked legitimately, and only published public events
      await publish(t, admin, hidden.id)
      const legit = await createEvent(t, admin, { title: 'Admin public', visibility: 40, start_dt: future(5) })
      await publishEvent(t, admin, legit.id)
      const priv = await createEvent(t, admin, { title: 'Admin private', visibility: 10, start_dt: future(5) })
      await publishEvent(t, admin, priv.id)
      const members = await createEvent(t, admin, { title: 'Admin members-only', visibility: 20, start_dt: future(5) })
      await publishEvent(t, admin, members.id)
      const draft = await createEvent(t, admin, { title: 'Admin unpublished', visibility: 40, start_dt: future(5) })
      for (const ev of [legit, priv, members, draft]) {
        const link = await t.as(admin, {
          method: 'POST',
          url: `/api/v1/events/${ev.id}/spaces`,
          payload: { space_id: hidden.id }
        })
        assert.equal(link.statusCode, 201, link.body)
      }
      // a widened draft clone of the private event does not reach the page either
      const clone = (await t.as(admin, { method: 'POST', url: `/api/v1/events/${priv.id}/edit` })).json()
      await expectStatus(t, admin, 'PATCH', `/api/v1/events/${clone.id}`, 200, { visibility: 40 })
      const page = await publicPage(t, hidden.id)
      assert.equal(page.statusCode, 200, page.body)
      assert.deepEqual(
        (page.json().upcoming_events as Json[]).map(x => x.title),
        ['Admin public']
      )
      assert.equal(page.json().stats.events_count, 1)
      for (const hiddenTitle of ['Alice open day', 'Admin private', 'Admin members-only', 'Admin unpublished']) {
        assert.equal(page.body.includes(hiddenTitle), false, hiddenTitle)
      }
    })

    void it('linking needs the space:events right on a visible space (403), and unlinking too', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('ada', ['admin'])
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const space = await createSpace(t, admin, { title: 'Town hall', visibility: 40 })
      await publish(t, admin, space.id)
      const e = await createEvent(t, alice, { visibility: 40 })
      const before = await spacesOfEvent(t, alice, e.id)
      const link = async (token: string) =>
        await t.as(token, { method: 'POST', url: `/api/v1/events/${e.id}/spaces`, payload: { space_id: space.id } })

      // visible, but alice neither created nor manages it
      const res = await link(alice)
      assert.equal(res.statusCode, 403, res.body)
      // a member of the space only reads (docs/spaces.md): still 403
      const managers = `/api/v1/spaces/${space.id}/managers`
      await expectStatus(t, admin, 'POST', `/api/v1/spaces/${space.id}/members`, 201, {
        user_id: 'alice',
        role: 'space_member'
      })
      assert.equal((await link(alice)).statusCode, 403)
      // a manager without space:events: 403
      await expectStatus(t, admin, 'POST', managers, 201, { user_id: 'alice', permissions: ['space:edit'] })
      assert.equal((await link(alice)).statusCode, 403)
      assert.deepEqual(await spacesOfEvent(t, alice, e.id), before, 'nothing linked by the refused attempts')

      // with space:events she may; bob (no write on the event) may not even see it
      await expectStatus(t, admin, 'PUT', `${managers}/alice`, 200, { permissions: ['space:edit', 'space:events'] })
      assert.equal((await link(alice)).statusCode, 201)
      assert.deepEqual((await spacesOfEvent(t, alice, e.id)).spaces, [{ id: space.id, title: 'Town hall' }])
      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/events/${e.id}/spaces/${space.id}` })).statusCode,
        403,
        'bob sees the public event but may not edit it'
      )

      // without space:events again, alice cannot unlink either
      await expectStatuses(t, [
        [admin, 'PUT', `${managers}/alice`, 200, { permissions: ['space:edit'] }],
        [alice, 'DELETE', `/api/v1/events/${e.id}/spaces/${space.id}`, 403]
      ])
      assert.deepEqual((await spacesOfEvent(t, alice, e.id)).spaces, [{ id: space.id, title: 'Town hall' }])
      await expectStatus(t, admin, 'DELETE', `/api/v1/events/${e.id}/spaces/${space.id}`, 204)
      assert.deepEqual((await spacesOfEvent(t, alice, e.id)).spaces, [])

      // her own space she may link to; an archived one takes no events (409, as POST /spaces/{id}/events)
      const own = await createSpace(t, alice, { title: 'Mine' })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/spaces`, 201, { space_id: own.id })
      await publish(t, alice, own.id)
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${own.id}/archive`, 204)
      const e2 = await createEvent(t, alice)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${e2.id}/spaces`, 409, { space_id: own.id })
    })

    void it('a draft clone is judged by its published row: ' +
      'widening its visibility shows it to no one new', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-b' })
      const ann = await tenant.user('ann', ['member'], { orgId: 'org-a' })
      const priv = await createEvent(t, alice, { title: 'Private plan', visibility: 10 })
      await publishEvent(t, alice, priv.id)
      const clone = (await t.as(alice, { method: 'POST', url: `/api/v1/events/${priv.id}/edit` })).json()
      const widened = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${clone.id}`,
        payload: { visibility: 40, title: 'Draft secret' }
      })
      assert.equal(widened.statusCode, 200, widened.body)
      assert.equal(widened.json().visibility, 40)

      for (const who of [bob, ann]) {
        const res = await getEvent(t, who, clone.id)
        assert.equal(res.statusCode, 404, res.body)
        assert.equal(res.body.includes('Draft secret'), false)
        assert.equal((await getEvent(t, who, priv.id)).statusCode, 404)
        await expectStatuses(t, [
          [who, 'PATCH', `/api/v1/events/${clone.id}`, 404, { title: 'x' }],
          [who, 'GET', `/api/v1/events/${clone.id}/attendees`, 404]
        ])
      }
      const own = await getEvent(t, alice, clone.id)
      assert.equal(own.statusCode, 200)
      assert.equal(own.json().title, 'Draft secret')

      // an organization event: its organization sees the clone, another organization does not
      const org = await createEvent(t, alice, { visibility: 30 })
      await publishEvent(t, alice, org.id)
      const orgClone = (await t.as(alice, { method: 'POST', url: `/api/v1/events/${org.id}/edit` })).json()
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${orgClone.id}`, 200, { visibility: 40 })
      assert.equal((await getEvent(t, ann, orgClone.id)).statusCode, 200)
      assert.equal((await getEvent(t, bob, orgClone.id)).statusCode, 404)

      // after publishing, the new visibility is the published row's: now everyone sees it
      await publishEvent(t, alice, priv.id)
      const published = await getEvent(t, bob, priv.id)
      assert.equal(published.statusCode, 200, published.body)
      assert.equal(published.json().title, 'Draft secret')
    })
  })
}

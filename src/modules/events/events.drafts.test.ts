import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { queuedNotifications } from '../../../test/helpers/outbox.ts'
import { activityKinds, createEvent, getEvent, outboxTopics, publishEvent, type Json } from './events.fixtures.ts'

for (const kind of databases()) {
  void describe(`${kind}: event drafts and publishing`, () => {
    const t = useTestApp(kind)

    void it('publishes a new draft: status, published_at, version', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      assert.equal(e.status, 'draft')
      await publishEvent(t, alice, e.id)
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.status, 'published')
      assert.equal(got.version, 1)
      assert.ok(Date.parse(got.published_at) > 0)
      assert.deepEqual(await outboxTopics(t, tenant.id), ['event.created', 'event.published'])
      assert.deepEqual(await activityKinds(t, alice, e.id), ['published', 'created'])
    })

    void it('edits through one draft clone: readers keep the published version until publish', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const e = await createEvent(t, alice, { visibility: 40, description: 'v1' })
      await publishEvent(t, alice, e.id)

      await expectStatus(t, alice, 'GET', `/api/v1/events/${e.id}/draft`, 404)
      const edit = await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/edit`, 200)
      const draft = edit.json()
      assert.notEqual(draft.id, e.id)
      assert.equal(draft.published_id, e.id)
      assert.equal(draft.status, 'draft')
      assert.equal(draft.description, 'v1')
      const again = await t.as(alice, { method: 'POST', url: `/api/v1/events/${e.id}/edit` })
      assert.equal(again.json().id, draft.id)

      // edits sent to the published id or to the draft id both land on the draft
      const p1 = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id}`, 200, { title: 'Renamed' })
      assert.equal(p1.json().id, draft.id)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${draft.id}`, 200, { description: 'v2' })
      const readers = (await getEvent(t, bob, e.id)).json()
      assert.equal(readers.title, 'Launch party')
      assert.equal(readers.description, 'v1')
      const seenDraft = (await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}/draft` })).json()
      assert.equal(seenDraft.title, 'Renamed')
      assert.equal(seenDraft.description, 'v2')
      // draft clones never appear in lists
      const list = (await t.as(alice, { method: 'GET', url: '/api/v1/events' })).json()
      assert.deepEqual((list.items as Json[]).map(i => i.id), [e.id])
      const drafts = (await t.as(alice, { method: 'GET', url: '/api/v1/events?status=draft' })).json()
      assert.equal(drafts.total, 0)

      await publishEvent(t, alice, e.id, {
        notify: true,
        channels: ['email', 'push'],
        message: 'New version',
        priority: 'high'
      })
      const after = (await getEvent(t, bob, e.id)).json()
      assert.equal(after.id, e.id)
      assert.equal(after.title, 'Renamed')
      assert.equal(after.description, 'v2')
      assert.equal(after.version, 2)
      assert.equal(after.status, 'published')
      assert.equal((await getEvent(t, alice, draft.id)).statusCode, 404)
      await expectStatus(t, alice, 'GET', `/api/v1/events/${e.id}/draft`, 404)
      const notes = (await queuedNotifications(t, tenant.id)).map(({ channel, recipient, priority, body }) =>
        ({ channel, recipient, priority, body }))
      assert.deepEqual(notes, [
        // e-mail goes to the caller's address (token claim), never to a user id; push addresses the user
        { channel: 'email', recipient: 'alice@example.test', priority: 'high', body: 'New version' },
        { channel: 'push', recipient: 'alice', priority: 'high', body: 'New version' }
      ])
      assert.deepEqual(await activityKinds(t, alice, e.id), [
        'published',
        'edited',
        'edited',
        'draft_started',
        'published',
        'created'
      ])
      assert.deepEqual(await outboxTopics(t, tenant.id), [
        'event.created',
        'event.published',
        'event.draft_started',
        'event.updated',
        'event.updated',
        'event.published'
      ])
    })

    void it('discards the draft and keeps the published version', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      await publishEvent(t, alice, e.id)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/discard`, 404)
      const draft = (await t.as(alice, { method: 'POST', url: `/api/v1/events/${e.id}/edit` })).json()
      await t.as(alice, { method: 'PATCH', url: `/api/v1/events/${draft.id}`, payload: { title: 'Changed' } })
      await expectStatuses(t, [
        [alice, 'POST', `/api/v1/events/${e.id}/discard`, 204],
        [alice, 'GET', `/api/v1/events/${e.id}/draft`, 404]
      ])
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.title, 'Launch party')
      assert.equal(got.version, 1)
      assert.deepEqual(await activityKinds(t, alice, e.id), [
        'draft_discarded',
        'edited',
        'draft_started',
        'published',
        'created'
      ])
      // a new draft can be started afterwards
      const next = await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/edit`, 200)
      assert.equal(next.json().title, 'Launch party')
    })

    void it('refuses drafts of an unpublished event, and drafts for those who may not edit', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vera', ['viewer'])
      const e = await createEvent(t, alice, { visibility: 40 })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/edit`, 409)
      await publishEvent(t, alice, e.id)
      await expectStatuses(t, [
        [bob, 'POST', `/api/v1/events/${e.id}/edit`, 403],
        [viewer, 'POST', `/api/v1/events/${e.id}/edit`, 403],
        [bob, 'POST', `/api/v1/events/${e.id}/publish`, 403]
      ])
      const other = await newTenant(t).user('mallory', ['admin'])
      for (const path of ['edit', 'discard', 'publish']) {
        assert.equal(
          (await t.as(other, { method: 'POST', url: `/api/v1/events/${e.id}/${path}` })).statusCode,
          404,
          path
        )
      }
      await expectStatus(t, other, 'GET', `/api/v1/events/${e.id}/draft`, 404)
      assert.equal((await getEvent(t, alice, e.id)).json().version, 1)
    })

    void it('validates the publish options', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      const cases: Array<[Json, string]> = [
        [{ channels: ['fax'] }, 'body.channels[0]'],
        [{ priority: 'urgent' }, 'body.priority'],
        [{ notify: 'yes' }, 'body.notify'],
        [{ extra: 1 }, 'body.extra']
      ]
      for (const [payload, location] of cases) {
        const res = await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/publish`, 400, payload)
        assert.ok(res.json().errors.some((x: Json) => x.location === location), `${location} in ${res.body}`)
      }
      assert.equal((await getEvent(t, alice, e.id)).json().status, 'draft')
    })

    void it('publishing the draft clone id promotes it too; ' +
      'deleting the published event removes its draft', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      await publishEvent(t, alice, e.id)
      const draft = (await t.as(alice, { method: 'POST', url: `/api/v1/events/${e.id}/edit` })).json()
      await t.as(alice, { method: 'PATCH', url: `/api/v1/events/${draft.id}`, payload: { title: 'Via clone' } })
      await publishEvent(t, alice, draft.id)
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.title, 'Via clone')
      assert.equal(got.version, 2)
      const d2 = (await t.as(alice, { method: 'POST', url: `/api/v1/events/${e.id}/edit` })).json()
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${e.id}`, 204)
      assert.equal((await getEvent(t, alice, d2.id)).statusCode, 404)
      assert.equal((await getEvent(t, alice, e.id)).statusCode, 404)
    })

    void it('republishes a published event without draft (version + 1); ' +
      'deleting a draft clone discards it', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice)
      await publishEvent(t, alice, e.id)
      await publishEvent(t, alice, e.id)
      assert.equal((await getEvent(t, alice, e.id)).json().version, 2)
      const draft = (await t.as(alice, { method: 'POST', url: `/api/v1/events/${e.id}/edit` })).json()
      await expectStatuses(t, [
        [alice, 'DELETE', `/api/v1/events/${draft.id}`, 204],
        [alice, 'GET', `/api/v1/events/${e.id}/draft`, 404]
      ])
      const got = (await getEvent(t, alice, e.id)).json()
      assert.equal(got.is_deleted, false)
      assert.equal(got.version, 2)
      assert.deepEqual((await activityKinds(t, alice, e.id)).slice(0, 2), ['draft_discarded', 'draft_started'])
    })
  })
}

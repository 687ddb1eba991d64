/**
 * If-Match on attendees and managers (issue #17): each carries an ETag (a digest of its row), and a
 * write naming a stale one answers 412 ErrorModel and changes nothing, as on every resource with an
 * ETag.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { updateRows } from '../../../test/helpers/rows.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import { createContact, type Json } from './attendees.fixtures.ts'

function assert412 (res: { statusCode: number, headers: Record<string, unknown>, json: () => any }): void {
  assert.equal(res.statusCode, 412)
  assert.match(String(res.headers['content-type']), /application\/problem\+json/)
  assert.equal(res.json().status, 412)
}

async function attendee (t: TestApp, token: string, eventId: number, contactId: string): Promise<Json | undefined> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/events/${eventId}/attendees` })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json().items as Json[]).find(i => i.contact_id === contactId)
}

for (const kind of databases()) {
  void describe(`${kind}: If-Match on attendees and managers`, () => {
    const t = useTestApp(kind)

    void it('attendees: PATCH, DELETE and check-in with a stale ETag answer 412 and change nothing', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const id = event.id as number
      const contact = await createContact(t, alice)
      const url = `/api/v1/events/${id}/attendees/${contact}`

      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${id}/attendees`,
        payload: { contact_id: contact }
      })
      assert.equal(add.statusCode, 201, add.body)
      const first = String(add.headers.etag)
      assert.match(first, /^"[\w-]+"$/)

      const patched = await t.as(alice, {
        method: 'PATCH',
        url,
        headers: { 'if-match': first },
        payload: { status: 'confirmed', notes: 'yes' }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      const second = String(patched.headers.etag)
      assert.notEqual(second, first)
      const seen = await attendee(t, alice, id, contact)

      assert412(
        await t.as(alice, { method: 'PATCH', url, headers: { 'if-match': first }, payload: { status: 'declined' } })
      )
      assert412(await t.as(alice, { method: 'DELETE', url, headers: { 'if-match': first } }))
      assert412(
        await t.as(alice, { method: 'POST', url: `${url}/check-in`, headers: { 'if-match': first }, payload: {} })
      )
      assert.deepEqual(await attendee(t, alice, id, contact), seen)

      // a change made by another path (automation, SQL) makes the tag stale too
      await updateRows(t, tenant.id, 'attendees', { status: 'tentative' }, { contact_id: contact })
      assert412(
        await t.as(alice, { method: 'PATCH', url, headers: { 'if-match': second }, payload: { status: 'declined' } })
      )
      assert.equal((await attendee(t, alice, id, contact))?.status, 'tentative')

      // * passes (the attendee exists), and so does a list holding the current tag
      const current = await t.as(alice, {
        method: 'PATCH',
        url,
        headers: { 'if-match': '*' },
        payload: { status: 'confirmed' }
      })
      assert.equal(current.statusCode, 200, current.body)
      const third = String(current.headers.etag)
      const checkIn = await t.as(alice, {
        method: 'POST',
        url: `${url}/check-in`,
        headers: { 'if-match': `"nope", ${third}` },
        payload: {}
      })
      assert.equal(checkIn.statusCode, 204, checkIn.body)
      assert.equal((await attendee(t, alice, id, contact))?.status, 'checked_in')
      assert412(await t.as(alice, { method: 'DELETE', url, headers: { 'if-match': third } }))
      const del = await t.as(alice, { method: 'DELETE', url, headers: { 'if-match': '*' } })
      assert.equal(del.statusCode, 204, del.body)
      assert.equal(await attendee(t, alice, id, contact), undefined)
    })

    void it('managers: PUT and DELETE with a stale ETag answer 412 and change nothing', async () => {
      const { alice, event } = await aliceWithEvent(t)
      const url = `/api/v1/events/${event.id as number}/managers/mia`
      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id as number}/managers`,
        payload: { user_id: 'mia', permissions: ['event:edit'] }
      })
      assert.equal(add.statusCode, 201, add.body)
      const first = String(add.headers.etag)
      const got = await t.as(alice, { method: 'GET', url })
      assert.equal(got.headers.etag, first)

      const put = await t.as(alice, {
        method: 'PUT',
        url,
        headers: { 'if-match': first },
        payload: { permissions: ['event:edit', 'attendees:read'] }
      })
      assert.equal(put.statusCode, 200, put.body)
      const second = String(put.headers.etag)
      assert.notEqual(second, first)
      const seen = (await t.as(alice, { method: 'GET', url })).json()

      assert412(
        await t.as(alice, {
          method: 'PUT',
          url,
          headers: { 'if-match': first },
          payload: { permissions: ['event:edit'] }
        })
      )
      assert412(await t.as(alice, { method: 'DELETE', url, headers: { 'if-match': first } }))
      const after = await t.as(alice, { method: 'GET', url })
      assert.equal(after.statusCode, 200)
      assert.deepEqual(after.json(), seen)
      assert.equal(after.headers.etag, second)

      const del = await t.as(alice, { method: 'DELETE', url, headers: { 'if-match': second } })
      assert.equal(del.statusCode, 204, del.body)
      assert.equal((await t.as(alice, { method: 'GET', url })).statusCode, 404)
    })
  })
}

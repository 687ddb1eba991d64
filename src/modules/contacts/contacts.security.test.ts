/**
 * Security finding 8: the batch upsert writes a matched contact only under the rule of PATCH
 * (its owner or a tenant admin); any other match is reported as skipped and left untouched.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'

type Json = Record<string, any>

for (const kind of databases()) {
  void describe(`${kind}: contacts upsert respects ownership`, () => {
    const t = useTestApp(kind)

    void it('skips a matched contact of another member (PATCH would be 403) and leaves it unchanged', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
      const created = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts',
        payload: { first_name: 'Ada', company: 'Acme', email: 'Ada@Example.com' }
      })
      assert.equal(created.statusCode, 201, created.body)
      const ada = created.json()
      const before = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${ada.id as string}` })
      assert.equal(
        (
          await t.as(bob, {
            method: 'PATCH',
            url: `/api/v1/contacts/${ada.id as string}`,
            payload: { first_name: 'Hijacked' }
          })
        ).statusCode,
        403
      )

      const res = await t.as(bob, {
        method: 'POST',
        url: '/api/v1/contacts/upsert',
        payload: {
          contacts: [
            { email: 'ada@example.com', first_name: 'Hijacked', company: null },
            { email: 'new@example.com', first_name: 'New' }
          ]
        }
      })
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      assert.deepEqual(body.items.map((i: Json) => i.action), ['skipped', 'created'])
      assert.deepEqual([body.created, body.updated, body.skipped], [1, 0, 1])
      assert.equal(body.items[0].contact.id, ada.id)
      assert.equal(body.items[0].contact.first_name, 'Ada')
      assert.equal(body.items[0].error.status, 403)
      assert.match(body.items[0].error.detail, /owner or an admin/)
      assert.equal(body.items[1].error, undefined)

      const after = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${ada.id as string}` })
      assert.deepEqual(after.json(), before.json(), 'the owner reads her contact unchanged')
      assert.equal(after.headers.etag, before.headers.etag)
      // no second contact with the e-mail was created in the organization
      const search = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?search=ada@example.com' })
      assert.equal(search.json().total, 1)

      // a contact of his own with the same e-mail is the one updated; alice's stays untouched
      const mine = await t.as(bob, {
        method: 'POST',
        url: '/api/v1/contacts',
        payload: { first_name: 'Bob copy', email: 'ada@example.com' }
      })
      const again = await t.as(bob, {
        method: 'POST',
        url: '/api/v1/contacts/upsert',
        payload: { contacts: [{ email: 'ADA@example.com', first_name: 'Bobs' }] }
      })
      assert.equal(again.json().items[0].action, 'updated')
      assert.equal(again.json().items[0].contact.id, mine.json().id)
      assert.deepEqual(
        (await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${ada.id as string}` })).json(),
        before.json()
      )

      // an admin may change it, as with PATCH: the oldest match is updated
      const byAdmin = await t.as(admin, {
        method: 'POST',
        url: '/api/v1/contacts/upsert',
        payload: { contacts: [{ email: 'ada@example.com', city: 'Oslo' }] }
      })
      assert.equal(byAdmin.json().items[0].action, 'updated')
      assert.equal(byAdmin.json().items[0].contact.id, ada.id)
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${ada.id as string}` })).json().city,
        'Oslo'
      )
    })
  })
}

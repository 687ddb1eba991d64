import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import {
  assertInvitedEmailShown, assertUnheldPermissionsRefused, INVITEE, managerRoutes
} from '../../../test/helpers/managers.ts'
import { outboxTopics, queuedNotifications } from '../../../test/helpers/outbox.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { insertContacts } from '../attendees/attendees.fixtures.ts'
import { alicePublishedSpace, createSpace } from './spaces.fixtures.ts'

type Json = Record<string, any>

for (const kind of databases()) {
  void describe(`${kind}: space members, managers and contacts`, () => {
    const t = useTestApp(kind)
    const routes = managerRoutes(t, 'spaces')
    const { invite, pending, accept } = routes
    const ACCEPT = '/api/v1/spaces/managers/accept'

    void it('adds, lists and removes members; only managers may', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 20 })
      const bob = await tenant.user('bob')
      await t.ctx.db
        .insertInto('users')
        .values({ tenant_id: tenant.id, id: 'bob', display_name: 'Bob Builder', email: 'bob@example.test' })
        .execute()

      const url = `/api/v1/spaces/${s.id}`
      const bad = await expectStatus(t, alice, 'POST', `${url}/members`, 400, { user_id: 'bob', role: 'king' })
      assert.equal(bad.json().errors[0].location, 'body.role')
      await expectStatus(t, bob, 'GET', url, 404)

      const add = await expectStatus(t, alice, 'POST', `${url}/members`, 201, { user_id: 'bob', role: 'space_member' })
      assert.deepEqual(
        { ...(add.json() as Json), created_at: '', updated_at: '' },
        {
          $schema: 'http://localhost:8080/schemas/SpaceMember.json',
          space_id: s.id,
          user_id: 'bob',
          org_id: null,
          role: 'space_member',
          is_active: true,
          created_at: '',
          updated_at: ''
        }
      )
      const change = await expectStatus(t, alice, 'POST', `${url}/members`, 200, {
        user_id: 'bob',
        role: 'space_viewer'
      })
      assert.equal(change.json().role, 'space_viewer')

      // bob can now see the members-only space, but not manage its people
      await expectStatuses(t, [
        [bob, 'GET', url, 200],
        [bob, 'POST', `${url}/members`, 403, { user_id: 'carol', role: 'space_member' }]
      ])

      const list = await t.as(bob, { method: 'GET', url: `${url}/members` })
      assert.deepEqual(list.json().items.map((m: Json) => [m.user_id, m.role]), [['bob', 'space_viewer']])
      assert.equal(list.json().total, 1)

      const activity = await t.as(alice, { method: 'GET', url: `${url}/activity` })
      assert.deepEqual(
        activity.json().items.map((a: Json) => [a.type, a.title, a.message, a.resource_id]),
        [['member', 'Bob Builder', 'joined the space', 'bob']]
      )

      // a member may leave on their own
      await expectStatus(t, bob, 'DELETE', `${url}/members/bob`, 204)
      assert.equal((await t.as(alice, { method: 'GET', url: `${url}/members` })).json().total, 0)
      await expectStatus(t, alice, 'DELETE', `${url}/members/bob`, 404)
      assert.deepEqual(await outboxTopics(t, tenant.id, 'space.member'), [
        'space.member_added',
        'space.member_updated',
        'space.member_removed'
      ])
    })

    void it('adds, reads, changes and removes managers but never the last one', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const carol = await tenant.user('carol')
      const s = await createSpace(t, alice)
      const url = `/api/v1/spaces/${s.id}`

      const bad = await expectStatus(t, alice, 'POST', `${url}/managers`, 400, {
        user_id: 'bob',
        permissions: ['space:fly']
      })
      assert.equal(bad.json().errors[0].location, 'body.permissions[0]')
      const add = await expectStatus(t, alice, 'POST', `${url}/managers`, 201, {
        user_id: 'bob',
        permissions: ['space:members'],
        notify: true,
        channels: ['push']
      })
      assert.deepEqual(
        [add.json().user_id, add.json().permissions, add.json().role, add.json().status, add.json().invited_by],
        ['bob', ['space:members'], null, 'active', 'alice']
      )
      const note = await queuedNotifications(t, tenant.id)
      assert.deepEqual(note.map(n => ({ channel: n.channel, recipient: n.recipient })), [
        { channel: 'push', recipient: 'bob' }
      ])
      await expectStatuses(t, [
        [alice, 'POST', `${url}/managers`, 409, { user_id: 'bob', permissions: [] }],
        // bob may manage members (his permission) but not edit the space
        [bob, 'POST', `${url}/members`, 201, { user_id: 'carol', role: 'space_member' }],
        [bob, 'PATCH', url, 403, { title: 'x' }]
      ])
      assert.equal(
        (await t.as(carol, { method: 'GET', url: `${url}/managers` })).statusCode,
        404,
        'a draft is seen by its managers only'
      )

      const put = await expectStatus(t, alice, 'PUT', `${url}/managers/bob`, 200, {
        permissions: ['space:edit', 'space:publish']
      })
      assert.deepEqual(put.json().permissions, ['space:edit', 'space:publish'])
      const one = await t.as(bob, { method: 'GET', url: `${url}/managers/bob` })
      assert.deepEqual(one.json().permissions, ['space:edit', 'space:publish'])
      await expectStatus(t, bob, 'PATCH', url, 200, { title: 'Bob was here' })

      const perms = await t.as(bob, { method: 'GET', url: '/api/v1/spaces/manager-permissions' })
      assert.deepEqual(perms.json().permissions, [
        'space:edit', 'space:publish', 'space:members', 'space:managers', 'space:events', 'space:contacts'
      ])

      await expectStatuses(t, [
        [bob, 'DELETE', `${url}/managers/alice`, 403],
        [alice, 'DELETE', `${url}/managers/bob`, 204],
        [alice, 'GET', `${url}/managers/bob`, 404],
        [bob, 'GET', url, 404]
      ])
      const last = await expectStatus(t, alice, 'DELETE', `${url}/managers/alice`, 409)
      assert.match(last.json().detail, /last manager/)
      const list = await t.as(alice, { method: 'GET', url: `${url}/managers` })
      assert.deepEqual(list.json().items.map((m: Json) => m.user_id), ['alice'])
      await expectStatuses(t, [
        [alice, 'DELETE', `${url}/managers/nobody`, 404],
        // re-adding a removed manager works; a manager may then step down
        [alice, 'POST', `${url}/managers`, 201, { user_id: 'bob', permissions: [], role: 'space_manager:full' }],
        [bob, 'DELETE', `${url}/managers/bob`, 204]
      ])
    })

    void it('links contacts, records the activity and unlinks them', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const c = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts',
        payload: { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.test' }
      })
      const contactId = c.json().id as string
      const url = `/api/v1/spaces/${s.id}`
      const missing = await expectStatus(t, alice, 'POST', `${url}/contacts`, 400, { contact_id: crypto.randomUUID() })
      assert.equal(missing.json().errors[0].location, 'body.contact_id')
      const link = await expectStatus(t, alice, 'POST', `${url}/contacts`, 201, { contact_id: contactId })
      assert.deepEqual([link.json().space_id, link.json().contact_id], [s.id, contactId])
      await expectStatus(t, alice, 'POST', `${url}/contacts`, 409, { contact_id: contactId })
      const list = await t.as(alice, { method: 'GET', url: `${url}/contacts` })
      assert.deepEqual(list.json().items.map((x: Json) => x.contact_id), [contactId])
      const activity = await t.as(alice, { method: 'GET', url: `${url}/activity?size=1` })
      assert.equal(activity.json().$schema, 'http://localhost:8080/schemas/PagedBodySpaceActivity.json')
      assert.deepEqual(
        activity.json().items.map((a: Json) => [a.type, a.title, a.resource_id]),
        [['contact', 'Ada Lovelace', contactId]]
      )
      await expectStatus(t, alice, 'DELETE', `${url}/contacts/${contactId}`, 204)
      assert.equal((await t.as(alice, { method: 'GET', url: `${url}/contacts` })).json().total, 0)
    })

    void it('invites a manager by e-mail; the invitee sees the invite and accepts it once', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const dora = await tenant.user('dora')
      const eve = await tenant.user('eve')
      const s = await createSpace(t, alice, { title: 'Quiet' })
      const bad = await invite(alice, s.id, { email: 'not-an-address', permissions: [] })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'body.email')
      const inv = await invite(alice, s.id, { email: 'Dora@Example.test', permissions: ['space:edit'] })
      assert.equal(inv.statusCode, 201, inv.body)
      assert.deepEqual(
        [inv.json().status, inv.json().user_id, inv.json().invited_email, inv.json().invited_by],
        ['pending', null, 'dora@example.test', 'alice']
      )
      assert.equal('invite_token' in inv.json(), false)
      assert.equal(Date.parse(inv.json().expires_at) - Date.parse(inv.json().invited_at), 7 * 24 * 3600 * 1000)
      assert.equal((await invite(alice, s.id, { email: 'dora@example.test', permissions: [] })).statusCode, 409)

      const [mail] = await queuedNotifications(t, tenant.id)
      assert.equal(mail?.recipient, 'dora@example.test')
      const token = (mail?.payload as Json).invite_token as string

      const waiting = await pending(dora)
      assert.deepEqual(waiting.json().items.map((m: Json) => [m.space_id, m.status]), [[s.id, 'pending']])
      assert.deepEqual((await pending(eve)).json().items, [])
      await expectStatuses(t, [
        [dora, 'GET', `/api/v1/spaces/${s.id}`, 404],
        [eve, 'POST', ACCEPT, 403, { token }],
        [dora, 'POST', ACCEPT, 404, { token: 'x'.repeat(40) }]
      ])
      const ok = await accept(dora, { token })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([ok.json().status, ok.json().user_id, ok.json().permissions], ['active', 'dora', ['space:edit']])
      await expectStatuses(t, [
        [dora, 'POST', ACCEPT, 404, { token }],
        [dora, 'PATCH', `/api/v1/spaces/${s.id}`, 200, { title: 'Dora edits' }]
      ])
      const list = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })
      assert.deepEqual(
        list.json().items.map((m: Json) => [m.user_id, m.status]),
        [
          ['alice', 'active'],
          ['dora', 'active']
        ]
      )
    })

    void it('a space manager with only space:managers grants nobody more than she holds, ' +
      'never changes her own grant, and cannot touch a stronger manager', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const s = await createSpace(t, alice)
      const url = `/api/v1/spaces/${s.id}/managers`
      await expectStatuses(t, [
        [alice, 'POST', url, 201, { user_id: 'bob', permissions: ['space:managers'] }],
        [alice, 'POST', url, 201, { user_id: 'carol', permissions: ['space:managers', 'space:edit'] }]
      ])
      const grants = async () =>
        ((await t.as(alice, { method: 'GET', url })).json().items as Json[]).map(
          m => [m.user_id, m.status, m.role, m.permissions]
        )
      const before = await grants()

      const self = await expectStatus(t, bob, 'PUT', `${url}/bob`, 403, {
        permissions: ['space:managers', 'space:edit']
      })
      assert.equal(self.json().errors[0].location, 'path.user_id')
      const full = await expectStatus(t, bob, 'POST', url, 403, {
        user_id: 'sock',
        permissions: [],
        role: 'space_manager:full'
      })
      assert.equal(full.json().errors[0].location, 'body.role')
      await assertUnheldPermissionsRefused(t, bob, url, {
        user_id: 'sock',
        permissions: ['space:managers', 'space:edit']
      }, ['space:edit'])
      await expectStatuses(t, [
        [bob, 'POST', `${url}/invite`, 403, {
          email: 'sock@example.test',
          permissions: [],
          role: 'space_manager:full'
        }],
        [bob, 'PUT', `${url}/carol`, 403, { permissions: ['space:managers'] }],
        [bob, 'DELETE', `${url}/carol`, 403],
        [bob, 'DELETE', `${url}/alice`, 403]
      ])
      assert.deepEqual(await grants(), before, 'no grant changed and no invite made')
      // the space is untouched
      await expectStatuses(t, [
        [bob, 'DELETE', `/api/v1/spaces/${s.id}`, 403],
        [alice, 'GET', `/api/v1/spaces/${s.id}`, 200]
      ])

      // within her rights: grant space:managers, then step down; the creator changes anyone but herself
      await expectStatuses(t, [
        [bob, 'POST', url, 201, { user_id: 'dan', permissions: ['space:managers'] }],
        [bob, 'DELETE', `${url}/bob`, 204],
        [alice, 'PUT', `${url}/carol`, 200, { permissions: ['space:events'] }],
        [alice, 'PUT', `${url}/alice`, 403, { permissions: ['space:events'] }]
      ])
      assert.deepEqual(
        (await grants()).map(g => [g[0], g[3]]),
        [
          ['alice', []],
          ['carol', ['space:events']],
          ['dan', ['space:managers']]
        ]
      )
    })

    void it('only the addressee accepts a manager invite: no token e-mail 403, another e-mail 403, ' +
      'same address in other case accepted', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const inv = await invite(alice, s.id, { email: 'Nina@Example.test', permissions: ['space:edit'] })
      assert.equal(inv.statusCode, 201, inv.body)
      const [mail] = await queuedNotifications(t, tenant.id)
      const token = (mail?.payload as Json).invite_token as string
      const rows = async () =>
        ((await routes.list(alice, s.id)).json().items as Json[]).map(m => [m.user_id, m.status])

      const noEmail = await tenant.user('nina', ['member'], { email: undefined })
      const refused = await accept(noEmail, { token })
      assert.equal(refused.statusCode, 403, refused.body)
      assert.match(refused.json().detail, /no e-mail/)
      assert.equal((await accept(await tenant.user('otto'), { token })).statusCode, 403)
      assert.deepEqual(await rows(), [
        ['alice', 'active'],
        [null, 'pending']
      ])
      await expectStatus(t, noEmail, 'PATCH', `/api/v1/spaces/${s.id}`, 404, { title: 'Taken' })

      const nina = await tenant.user('nina', ['member'], { email: ' nina@EXAMPLE.test' })
      assert.equal((await pending(nina)).json().items.length, 1)
      const ok = await accept(nina, { token })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual(await rows(), [
        ['alice', 'active'],
        ['nina', 'active']
      ])
    })

    void it('shows invitee e-mails only to who may manage the space\'s managers', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 40 })
      const url = `/api/v1/spaces/${s.id}/managers`
      await expectStatuses(t, [
        [alice, 'POST', `${url}/invite`, 201, { email: INVITEE.email, permissions: ['space:edit'] }],
        [alice, 'POST', url, 201, { user_id: INVITEE.withoutRight, permissions: ['space:edit'] }],
        [alice, 'POST', url, 201, { user_id: INVITEE.withRight, permissions: ['space:managers'] }]
      ])
      await assertInvitedEmailShown(routes, tenant, s.id, alice)
    })

    void it('pages members, managers and linked contacts by cursor as by page ' +
      "(rows added together share created_at); another space's cursor is refused", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const other = await createSpace(t, alice)
      const contacts = await insertContacts(t, tenant.id, 'alice', 9)
      /** rows of space s, one a value of `each` */
      const ofSpace = <T, R> (each: T[], row: (x: T, i: number) => R) =>
        each.map((x, i) => ({ tenant_id: tenant.id, space_id: s.id as number, ...row(x, i) }))
      const upTo = (n: number) => Array.from({ length: n }, (_, i) => i)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('space_members')
          .values(ofSpace(upTo(11), i => ({ user_id: `m${String(i).padStart(2, '0')}` })))
          .execute()
        await trx
          .insertInto('space_contacts')
          .values(ofSpace(contacts, id => ({ contact_id: id, created_by: 'alice' })))
          .execute()
        await trx
          .insertInto('space_managers')
          .values(ofSpace(upTo(9), i => ({ user_id: `g${i}`, permissions: ['space:edit'], status: 'active' as const })))
          .execute()
      })
      for (const [list, key] of [
        ['members', 'user_id'],
        ['contacts', 'contact_id'],
        ['managers', 'user_id']
      ] as const) {
        const url = `/api/v1/spaces/${s.id as number}/${list}`
        const all = ((await getJson(t, alice, `${url}?size=100`)).items as Json[]).map(i => i[key])
        const walked = (await itemsByCursor(t, alice, `${url}?size=4`)).map(i => i[key])
        assert.deepEqual(walked, all, list)
        assert.ok(all.length >= 9, list)
        const first = await getJson(t, alice, `${url}?size=4`)
        const otherList = `/api/v1/spaces/${other.id as number}/${list}?size=4`
        const refused = await refusedCursor(t, alice, otherList, first.next_cursor)
        assert.ok(
          refused.json().errors.some((e: Json) => e.location === 'query.cursor'),
          refused.body
        )
      }
    })
  })
}

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { createSpace, publish } from './spaces.fixtures.ts'

type Json = Record<string, any>

for (const kind of databases()) {
  void describe(`${kind}: space members, managers and contacts`, () => {
    const t = useTestApp(kind)

    void it('adds, lists and removes members; only managers may', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const s = await createSpace(t, alice, { visibility: 20 })
      await publish(t, alice, s.id)
      await t.ctx.db
        .insertInto('users')
        .values({ tenant_id: tenant.id, id: 'bob', display_name: 'Bob Builder', email: 'bob@example.test' })
        .execute()

      const bad = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'bob', role: 'king' }
      })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'body.role')
      assert.equal((await t.as(bob, { method: 'GET', url: `/api/v1/spaces/${s.id}` })).statusCode, 404)

      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'bob', role: 'space_member' }
      })
      assert.equal(add.statusCode, 201, add.body)
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
      const change = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'bob', role: 'space_viewer' }
      })
      assert.equal(change.statusCode, 200)
      assert.equal(change.json().role, 'space_viewer')

      // bob can now see the members-only space, but not manage its people
      assert.equal((await t.as(bob, { method: 'GET', url: `/api/v1/spaces/${s.id}` })).statusCode, 200)
      const byBob = await t.as(bob, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'carol', role: 'space_member' }
      })
      assert.equal(byBob.statusCode, 403)

      const list = await t.as(bob, { method: 'GET', url: `/api/v1/spaces/${s.id}/members` })
      assert.deepEqual(list.json().items.map((m: Json) => [m.user_id, m.role]), [['bob', 'space_viewer']])
      assert.equal(list.json().total, 1)

      const activity = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/activity` })
      assert.deepEqual(
        activity.json().items.map((a: Json) => [a.type, a.title, a.message, a.resource_id]),
        [['member', 'Bob Builder', 'joined the space', 'bob']]
      )

      // a member may leave on their own
      const leave = await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/members/bob` })
      assert.equal(leave.statusCode, 204)
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/members` })).json().total, 0)
      assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/members/bob` })).statusCode, 404)
      const topics = await t.ctx.db
        .selectFrom('outbox')
        .select('topic')
        .where('tenant_id', '=', tenant.id)
        .where('topic', 'like', 'space.member%')
        .orderBy('id')
        .execute()
      assert.deepEqual(topics.map(r => r.topic), ['space.member_added', 'space.member_updated', 'space.member_removed'])
    })

    void it('adds, reads, changes and removes managers but never the last one', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const carol = await tenant.user('carol')
      const s = await createSpace(t, alice)

      const bad = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers`,
        payload: { user_id: 'bob', permissions: ['space:fly'] }
      })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'body.permissions[0]')
      const add = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers`,
        payload: { user_id: 'bob', permissions: ['space:members'], notify: true, channels: ['push'] }
      })
      assert.equal(add.statusCode, 201, add.body)
      assert.deepEqual(
        [add.json().user_id, add.json().permissions, add.json().role, add.json().status, add.json().invited_by],
        ['bob', ['space:members'], null, 'active', 'alice']
      )
      const note = await t.ctx.db
        .selectFrom('notification_outbox')
        .select(['channel', 'recipient'])
        .where('tenant_id', '=', tenant.id)
        .execute()
      assert.deepEqual(note, [{ channel: 'push', recipient: 'bob' }])
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'bob', permissions: [] }
          })
        ).statusCode,
        409
      )

      // bob may manage members (his permission) but not edit the space
      const member = await t.as(bob, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'carol', role: 'space_member' }
      })
      assert.equal(member.statusCode, 201)
      assert.equal(
        (await t.as(bob, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'x' } })).statusCode,
        403
      )
      assert.equal(
        (await t.as(carol, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })).statusCode,
        404,
        'a draft is seen by its managers only'
      )

      const put = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/spaces/${s.id}/managers/bob`,
        payload: { permissions: ['space:edit', 'space:publish'] }
      })
      assert.equal(put.statusCode, 200)
      assert.deepEqual(put.json().permissions, ['space:edit', 'space:publish'])
      const one = await t.as(bob, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers/bob` })
      assert.deepEqual(one.json().permissions, ['space:edit', 'space:publish'])
      assert.equal(
        (await t.as(bob, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'Bob was here' } }))
          .statusCode,
        200
      )

      const perms = await t.as(bob, { method: 'GET', url: '/api/v1/spaces/manager-permissions' })
      assert.deepEqual(perms.json().permissions, [
        'space:edit',
        'space:publish',
        'space:members',
        'space:managers',
        'space:events',
        'space:contacts'
      ])

      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/alice` })).statusCode,
        403
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/bob` })).statusCode,
        204
      )
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers/bob` })).statusCode, 404)
      assert.equal((await t.as(bob, { method: 'GET', url: `/api/v1/spaces/${s.id}` })).statusCode, 404)
      const last = await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/alice` })
      assert.equal(last.statusCode, 409)
      assert.match(last.json().detail, /last manager/)
      const list = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })
      assert.deepEqual(list.json().items.map((m: Json) => m.user_id), ['alice'])
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/nobody` })).statusCode,
        404
      )

      // re-adding a removed manager works; a manager may then step down
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'bob', permissions: [], role: 'space_manager:full' }
          })
        ).statusCode,
        201
      )
      assert.equal((await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/bob` })).statusCode, 204)
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
      const missing = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/contacts`,
        payload: { contact_id: crypto.randomUUID() }
      })
      assert.equal(missing.statusCode, 400)
      assert.equal(missing.json().errors[0].location, 'body.contact_id')
      const link = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/contacts`,
        payload: { contact_id: contactId }
      })
      assert.equal(link.statusCode, 201, link.body)
      assert.deepEqual([link.json().space_id, link.json().contact_id], [s.id, contactId])
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/contacts`,
            payload: { contact_id: contactId }
          })
        ).statusCode,
        409
      )
      const list = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/contacts` })
      assert.deepEqual(list.json().items.map((x: Json) => x.contact_id), [contactId])
      const activity = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/activity?size=1` })
      assert.equal(activity.json().$schema, 'http://localhost:8080/schemas/PagedBodySpaceActivity.json')
      assert.deepEqual(
        activity.json().items.map((a: Json) => [a.type, a.title, a.resource_id]),
        [['contact', 'Ada Lovelace', contactId]]
      )
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/contacts/${contactId}` })).statusCode,
        204
      )
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/contacts` })).json().total, 0)
    })

    void it('invites a manager by e-mail; the invitee sees the invite and accepts it once', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const dora = await tenant.user('dora')
      const eve = await tenant.user('eve')
      const s = await createSpace(t, alice, { title: 'Quiet' })
      const bad = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers/invite`,
        payload: { email: 'not-an-address', permissions: [] }
      })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'body.email')
      const inv = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers/invite`,
        payload: { email: 'Dora@Example.test', permissions: ['space:edit'] }
      })
      assert.equal(inv.statusCode, 201, inv.body)
      assert.deepEqual(
        [inv.json().status, inv.json().user_id, inv.json().invited_email, inv.json().invited_by],
        ['pending', null, 'dora@example.test', 'alice']
      )
      assert.equal('invite_token' in inv.json(), false)
      assert.equal(Date.parse(inv.json().expires_at) - Date.parse(inv.json().invited_at), 7 * 24 * 3600 * 1000)
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers/invite`,
            payload: { email: 'dora@example.test', permissions: [] }
          })
        ).statusCode,
        409
      )

      const mail = await t.ctx.db
        .selectFrom('notification_outbox')
        .select(['recipient', 'payload'])
        .where('tenant_id', '=', tenant.id)
        .executeTakeFirstOrThrow()
      assert.equal(mail.recipient, 'dora@example.test')
      const token = (mail.payload as Json).invite_token as string

      const pending = await t.as(dora, { method: 'GET', url: '/api/v1/spaces/managers/pending' })
      assert.deepEqual(pending.json().items.map((m: Json) => [m.space_id, m.status]), [[s.id, 'pending']])
      assert.deepEqual((await t.as(eve, { method: 'GET', url: '/api/v1/spaces/managers/pending' })).json().items, [])
      assert.equal((await t.as(dora, { method: 'GET', url: `/api/v1/spaces/${s.id}` })).statusCode, 404)

      assert.equal(
        (await t.as(eve, { method: 'POST', url: '/api/v1/spaces/managers/accept', payload: { token } })).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(dora, {
            method: 'POST',
            url: '/api/v1/spaces/managers/accept',
            payload: { token: 'x'.repeat(40) }
          })
        ).statusCode,
        404
      )
      const ok = await t.as(dora, { method: 'POST', url: '/api/v1/spaces/managers/accept', payload: { token } })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([ok.json().status, ok.json().user_id, ok.json().permissions], ['active', 'dora', ['space:edit']])
      assert.equal(
        (await t.as(dora, { method: 'POST', url: '/api/v1/spaces/managers/accept', payload: { token } })).statusCode,
        404
      )
      assert.equal(
        (await t.as(dora, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'Dora edits' } }))
          .statusCode,
        200
      )
      const list = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })
      assert.deepEqual(
        list.json().items.map((m: Json) => [m.user_id, m.status]),
        [
          ['alice', 'active'],
          ['dora', 'active']
        ]
      )
    })

    void it('a space manager with only space:managers grants nobody more than she holds, never changes her own grant, and cannot touch a stronger manager', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const s = await createSpace(t, alice)
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'bob', permissions: ['space:managers'] }
          })
        ).statusCode,
        201
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'carol', permissions: ['space:managers', 'space:edit'] }
          })
        ).statusCode,
        201
      )
      const grants = async () =>
        ((await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })).json().items as Json[]).map(
          m => [m.user_id, m.status, m.role, m.permissions]
        )
      const before = await grants()

      const self = await t.as(bob, {
        method: 'PUT',
        url: `/api/v1/spaces/${s.id}/managers/bob`,
        payload: { permissions: ['space:managers', 'space:edit'] }
      })
      assert.equal(self.statusCode, 403, self.body)
      assert.equal(self.json().errors[0].location, 'path.user_id')
      const full = await t.as(bob, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers`,
        payload: { user_id: 'sock', permissions: [], role: 'space_manager:full' }
      })
      assert.equal(full.statusCode, 403, full.body)
      assert.equal(full.json().errors[0].location, 'body.role')
      const edit = await t.as(bob, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers`,
        payload: { user_id: 'sock', permissions: ['space:managers', 'space:edit'] }
      })
      assert.equal(edit.statusCode, 403)
      assert.deepEqual(edit.json().errors[0], {
        location: 'body.permissions',
        message: 'permissions the caller does not hold',
        value: ['space:edit']
      })
      assert.equal(
        (
          await t.as(bob, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers/invite`,
            payload: { email: 'sock@example.test', permissions: [], role: 'space_manager:full' }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(bob, {
            method: 'PUT',
            url: `/api/v1/spaces/${s.id}/managers/carol`,
            payload: { permissions: ['space:managers'] }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/carol` })).statusCode,
        403
      )
      assert.equal(
        (await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/alice` })).statusCode,
        403
      )
      assert.deepEqual(await grants(), before, 'no grant changed and no invite made')
      // the space is untouched
      assert.equal((await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}` })).statusCode, 403)
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}` })).statusCode, 200)

      // within her rights: grant space:managers, then step down; the creator changes anyone but herself
      assert.equal(
        (
          await t.as(bob, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'dan', permissions: ['space:managers'] }
          })
        ).statusCode,
        201
      )
      assert.equal((await t.as(bob, { method: 'DELETE', url: `/api/v1/spaces/${s.id}/managers/bob` })).statusCode, 204)
      assert.equal(
        (
          await t.as(alice, {
            method: 'PUT',
            url: `/api/v1/spaces/${s.id}/managers/carol`,
            payload: { permissions: ['space:events'] }
          })
        ).statusCode,
        200
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'PUT',
            url: `/api/v1/spaces/${s.id}/managers/alice`,
            payload: { permissions: ['space:events'] }
          })
        ).statusCode,
        403
      )
      assert.deepEqual(
        (await grants()).map(g => [g[0], g[3]]),
        [
          ['alice', []],
          ['carol', ['space:events']],
          ['dan', ['space:managers']]
        ]
      )
    })

    void it('only the addressee accepts a manager invite: no token e-mail 403, another e-mail 403, same address in other case accepted', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const inv = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/managers/invite`,
        payload: { email: 'Nina@Example.test', permissions: ['space:edit'] }
      })
      assert.equal(inv.statusCode, 201, inv.body)
      const mail = await t.ctx.db
        .selectFrom('notification_outbox')
        .select('payload')
        .where('tenant_id', '=', tenant.id)
        .executeTakeFirstOrThrow()
      const token = (mail.payload as Json).invite_token as string
      const rows = async () =>
        ((await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })).json().items as Json[]).map(
          m => [m.user_id, m.status]
        )

      const noEmail = await tenant.user('nina', ['member'], { email: undefined })
      const refused = await t.as(noEmail, { method: 'POST', url: '/api/v1/spaces/managers/accept', payload: { token } })
      assert.equal(refused.statusCode, 403, refused.body)
      assert.match(refused.json().detail, /no e-mail/)
      const wrong = await t.as(await tenant.user('otto'), {
        method: 'POST',
        url: '/api/v1/spaces/managers/accept',
        payload: { token }
      })
      assert.equal(wrong.statusCode, 403)
      assert.deepEqual(await rows(), [
        ['alice', 'active'],
        [null, 'pending']
      ])
      assert.equal(
        (await t.as(noEmail, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'Taken' } }))
          .statusCode,
        404
      )

      const nina = await tenant.user('nina', ['member'], { email: ' nina@EXAMPLE.test' })
      assert.equal((await t.as(nina, { method: 'GET', url: '/api/v1/spaces/managers/pending' })).json().items.length, 1)
      const ok = await t.as(nina, { method: 'POST', url: '/api/v1/spaces/managers/accept', payload: { token } })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual(await rows(), [
        ['alice', 'active'],
        ['nina', 'active']
      ])
    })

    void it('shows invitee e-mails only to who may manage the space\'s managers', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice, { visibility: 40 })
      await publish(t, alice, s.id)
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers/invite`,
            payload: { email: 'quinn@example.test', permissions: ['space:edit'] }
          })
        ).statusCode,
        201
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'ray', permissions: ['space:edit'] }
          })
        ).statusCode,
        201
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'POST',
            url: `/api/v1/spaces/${s.id}/managers`,
            payload: { user_id: 'una', permissions: ['space:managers'] }
          })
        ).statusCode,
        201
      )
      const emails = async (token: string) => {
        const res = await t.as(token, { method: 'GET', url: `/api/v1/spaces/${s.id}/managers` })
        assert.equal(res.statusCode, 200, res.body)
        return (res.json().items as Json[]).filter(m => m.status === 'pending').map(m => m.invited_email)
      }
      assert.deepEqual(await emails(await tenant.user('vic', ['viewer'])), [null])
      assert.deepEqual(await emails(await tenant.user('reader')), [null])
      assert.deepEqual(await emails(await tenant.user('ray')), [null])
      assert.deepEqual(await emails(await tenant.user('una')), ['quinn@example.test'])
      assert.deepEqual(await emails(alice), ['quinn@example.test'])
      assert.deepEqual(await emails(await tenant.user('root', ['admin'])), ['quinn@example.test'])
    })

    void it("pages members, managers and linked contacts by cursor as by page (rows added together share created_at); another space's cursor is refused", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const other = await createSpace(t, alice)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('space_members')
          .values(
            Array.from({ length: 11 }, (_, i) => ({
              tenant_id: tenant.id,
              space_id: s.id as number,
              user_id: `m${String(i).padStart(2, '0')}`
            }))
          )
          .execute()
        const contacts = await trx
          .insertInto('contacts')
          .values(
            Array.from({ length: 9 }, (_, i) => ({ tenant_id: tenant.id, owner_id: 'alice', first_name: `C${i}` }))
          )
          .returning('id')
          .execute()
        await trx
          .insertInto('space_contacts')
          .values(
            contacts.map(c => ({
              tenant_id: tenant.id,
              space_id: s.id as number,
              contact_id: c.id,
              created_by: 'alice'
            }))
          )
          .execute()
        await trx
          .insertInto('space_managers')
          .values(
            Array.from({ length: 9 }, (_, i) => ({
              tenant_id: tenant.id,
              space_id: s.id as number,
              user_id: `g${i}`,
              permissions: ['space:edit'],
              status: 'active' as const
            }))
          )
          .execute()
      })
      const get = async (url: string) => {
        const res = await t.as(alice, { method: 'GET', url })
        assert.equal(res.statusCode, 200, res.body)
        return res.json()
      }
      for (const [list, key] of [
        ['members', 'user_id'],
        ['contacts', 'contact_id'],
        ['managers', 'user_id']
      ] as const) {
        const url = `/api/v1/spaces/${s.id as number}/${list}`
        const all = ((await get(`${url}?size=100`)).items as Json[]).map(i => i[key])
        const walked: unknown[] = []
        let cursor: string | null = null
        do {
          const body: Json = await get(`${url}?size=4${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          walked.push(...(body.items as Json[]).map(i => i[key]))
          cursor = body.next_cursor
        } while (cursor !== null)
        assert.deepEqual(walked, all, list)
        assert.ok(all.length >= 9, list)
        const first = await get(`${url}?size=4`)
        const refused = await t.as(alice, {
          method: 'GET',
          url: `/api/v1/spaces/${other.id as number}/${list}?size=4&cursor=${encodeURIComponent(first.next_cursor)}`
        })
        assert.equal(refused.statusCode, 400, refused.body)
        assert.ok(
          refused.json().errors.some((e: Json) => e.location === 'query.cursor'),
          refused.body
        )
      }
    })
  })
}

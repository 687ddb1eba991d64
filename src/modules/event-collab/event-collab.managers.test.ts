import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { startNotificationDelivery } from '../../platform/notifications/delivery.ts'
import {
  deliverPendingNotifications,
  MAX_ATTEMPTS,
  type Notification
} from '../../platform/notifications/notifications.ts'
import { addManager, createEvent, insertContacts, outboxTopics, type Json } from './event-collab.fixtures.ts'
import { hashInviteToken } from './event-collab.managers.repository.ts'

for (const kind of databases()) {
  void describe(`${kind}: event managers and invites`, () => {
    const t = useTestApp(kind)

    async function setup () {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      return { tenant, alice, event }
    }
    const managers = async (token: string, id: number) =>
      await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/managers` })
    const notes = async (tenantId: string) =>
      await withTenant(
        t.ctx.db,
        { tenantId },
        async trx =>
          await trx
            .selectFrom('notification_outbox')
            .select(['id', 'channel', 'recipient', 'subject', 'body', 'priority', 'status', 'attempts', 'last_error'])
            .where('tenant_id', '=', tenantId)
            .orderBy('id')
            .execute()
      )

    void it('adds a manager with permissions or a role bundle, updates, removes; the grant is enforced', async () => {
      const { tenant, alice, event } = await setup()
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-1' })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('users')
          .values({ tenant_id: tenant.id, id: 'bob', email: 'bob@example.test', display_name: 'Bob Builder' })
          .execute()
      })
      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'bob', permissions: ['attendees:read'], notify: true, message: 'Welcome', priority: 'high' }
      })
      assert.equal(res.statusCode, 201, 'add: ' + res.body)
      const m = res.json()
      assert.equal(m.$schema, 'http://localhost:8080/schemas/EventManager.json')
      assert.deepEqual(
        [m.event_id, m.user_id, m.display_name, m.permissions, m.role, m.status, m.invited_by],
        [event.id, 'bob', 'Bob Builder', ['attendees:read'], null, 'active', 'alice']
      )
      assert.equal(m.invite_token, undefined)
      const [note] = await notes(tenant.id)
      assert.deepEqual(
        [note?.channel, note?.recipient, note?.body, note?.priority, note?.status],
        ['email', 'bob@example.test', 'Welcome', 'high', 'pending']
      )

      const dup = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'bob', role: 'event_manager:full' }
      })
      assert.equal(dup.statusCode, 409)
      const none = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'carl', permissions: [] }
      })
      assert.equal(none.statusCode, 400)
      assert.equal(none.json().errors[0].location, 'body.permissions')
      const badPerm = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'carl', permissions: ['everything'] }
      })
      assert.equal(badPerm.statusCode, 400)
      assert.equal(badPerm.json().errors[0].location, 'body.permissions[0]')
      const creator = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'alice', role: 'event_manager:full' }
      })
      assert.equal(creator.statusCode, 409)

      // bob may read attendees but not write them, nor manage managers
      const [contact] = await insertContacts(t, tenant.id, 'alice', 1, 'org-1')
      assert.equal((await t.as(bob, { method: 'GET', url: `/api/v1/events/${event.id}/attendees` })).statusCode, 200)
      assert.equal(
        (
          await t.as(bob, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/attendees`,
            payload: { contact_id: contact }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(bob, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/bob`,
            payload: { permissions: ['managers:manage'] }
          })
        ).statusCode,
        403
      )

      const put = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/events/${event.id}/managers/bob`,
        payload: { permissions: ['attendees:read', 'attendees:write'] }
      })
      assert.equal(put.statusCode, 200, put.body)
      assert.deepEqual(put.json().permissions, ['attendees:read', 'attendees:write'])
      assert.equal(
        (
          await t.as(bob, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/attendees`,
            payload: { contact_id: contact }
          })
        ).statusCode,
        201
      )
      const role = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/events/${event.id}/managers/bob`,
        payload: { permissions: [], role: 'event_manager:checkin' }
      })
      assert.equal(role.json().role, 'event_manager:checkin')
      assert.deepEqual(role.json().permissions, ['attendees:read', 'attendees:checkin'])

      const got = await t.as(bob, { method: 'GET', url: `/api/v1/events/${event.id}/managers/bob` })
      assert.equal(got.statusCode, 200)
      assert.equal(got.json().role, 'event_manager:checkin')
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/managers/nobody` })).statusCode,
        404
      )
      const list = await managers(alice, event.id)
      assert.deepEqual(
        { ...(list.json() as Json), items: list.json().items.map((i: Json) => i.user_id) },
        {
          $schema: 'http://localhost:8080/schemas/PagedBodyEventManager.json',
          items: ['bob'],
          page: 1,
          size: 20,
          total: 1,
          next_cursor: null
        }
      )

      // the creator is never removed or changed
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/alice` })).statusCode,
        409
      )
      assert.equal(
        (
          await t.as(alice, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/alice`,
            payload: { permissions: ['event:edit'] }
          })
        ).statusCode,
        409
      )

      const del = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/bob` })
      assert.equal(del.statusCode, 204)
      assert.equal((await managers(alice, event.id)).json().total, 0)
      assert.equal((await t.as(bob, { method: 'GET', url: `/api/v1/events/${event.id}/attendees` })).statusCode, 404)
      assert.equal(
        (await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/bob` })).statusCode,
        404
      )
      assert.deepEqual(
        (await outboxTopics(t, tenant.id)).filter(x => x.startsWith('event.manager')),
        ['event.manager_added', 'event.manager_updated', 'event.manager_updated', 'event.manager_removed']
      )

      // another tenant: 404, nothing changed
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal((await managers(mallory, event.id)).statusCode, 404)
      assert.equal(
        (
          await t.as(mallory, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/managers`,
            payload: { user_id: 'm', role: 'event_manager:full' }
          })
        ).statusCode,
        404
      )
      assert.equal((await managers(alice, event.id)).json().total, 0)
    })

    void it('invites by e-mail, refreshes a re-invite, accepts by token, lists pending invites', async () => {
      const { tenant, alice, event } = await setup()
      const inv = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'Dana@Example.test', role: 'event_manager:attendees' }
      })
      assert.equal(inv.statusCode, 201, inv.body)
      const invite = inv.json()
      assert.equal(invite.status, 'pending')
      assert.equal(invite.user_id, null)
      assert.match(invite.invite_token, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(Date.parse(invite.expires_at) - Date.parse(invite.invited_at), 7 * 86_400_000)
      const stored = await withTenant(
        t.ctx.db,
        { tenantId: tenant.id },
        async trx =>
          await trx
            .selectFrom('event_managers')
            .select('invite_token_hash')
            .where('id', '=', invite.id)
            .executeTakeFirstOrThrow()
      )
      assert.equal(stored.invite_token_hash, hashInviteToken(invite.invite_token))
      const sent = await notes(tenant.id)
      assert.equal(sent.length, 1)
      assert.equal(sent[0]?.recipient, 'Dana@Example.test')
      assert.ok(sent[0]?.body.includes(invite.invite_token))

      // the list shows the pending row without its token
      const listed = (await managers(alice, event.id)).json().items as Json[]
      assert.equal(listed.length, 1)
      assert.equal(listed[0]?.invite_token, undefined)

      // re-inviting refreshes the same row with a new token; the old one stops working
      const again = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'dana@example.test', permissions: ['attendees:read'] }
      })
      assert.equal(again.statusCode, 201)
      assert.equal(again.json().id, invite.id)
      assert.notEqual(again.json().invite_token, invite.invite_token)
      assert.deepEqual(again.json().permissions, ['attendees:read'])

      const dana = await tenant.user('dana', ['member'], { email: 'DANA@example.test' })
      const pending = await t.as(dana, { method: 'GET', url: '/api/v1/events/managers/pending' })
      assert.equal(pending.statusCode, 200)
      assert.deepEqual(pending.json().items.map((i: Json) => i.id), [invite.id])

      const old = await t.as(dana, {
        method: 'POST',
        url: '/api/v1/events/managers/accept',
        payload: { token: invite.invite_token }
      })
      assert.equal(old.statusCode, 404)
      const eve = await tenant.user('eve', ['member'], { email: 'eve@example.test' })
      const wrong = await t.as(eve, {
        method: 'POST',
        url: '/api/v1/events/managers/accept',
        payload: { token: again.json().invite_token }
      })
      assert.equal(wrong.statusCode, 403)
      const missing = await t.as(dana, { method: 'POST', url: '/api/v1/events/managers/accept', payload: {} })
      assert.equal(missing.statusCode, 400)
      assert.equal(missing.json().errors[0].location, 'body.token')

      const ok = await t.as(dana, {
        method: 'POST',
        url: '/api/v1/events/managers/accept',
        payload: { token: again.json().invite_token }
      })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([ok.json().status, ok.json().user_id, ok.json().event_id], ['active', 'dana', event.id])
      assert.ok(ok.json().accepted_at !== null)
      const used = await t.as(dana, {
        method: 'POST',
        url: '/api/v1/events/managers/accept',
        payload: { token: again.json().invite_token }
      })
      assert.equal(used.statusCode, 409)
      assert.equal((await t.as(dana, { method: 'GET', url: '/api/v1/events/managers/pending' })).json().items.length, 0)
      // the grant works
      assert.equal((await t.as(dana, { method: 'GET', url: `/api/v1/events/${event.id}/attendees` })).statusCode, 200)
      assert.equal(
        (
          await t.as(dana, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/managers/invite`,
            payload: { email: 'x@example.test', role: 'event_manager:full' }
          })
        ).statusCode,
        403
      )
    })

    void it('answers 410 for an expired invite, 409 for a revoked one, and accepts series invites', async () => {
      const { tenant, alice, event } = await setup()
      const inv = (
        await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${event.id}/managers/invite`,
          payload: { email: 'fay@example.test', role: 'event_manager:full' }
        })
      ).json()
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .updateTable('event_managers')
          .set({ expires_at: sql`now() - interval '1 minute'` })
          .where('id', '=', inv.id)
          .execute()
      })
      const fay = await tenant.user('fay', ['member'], { email: 'fay@example.test' })
      const expired = await t.as(fay, {
        method: 'POST',
        url: '/api/v1/events/managers/accept',
        payload: { token: inv.invite_token }
      })
      assert.equal(expired.statusCode, 410, expired.body)
      assert.equal(expired.json().title, 'Gone')
      assert.equal((await t.as(fay, { method: 'GET', url: '/api/v1/events/managers/pending' })).json().items.length, 0)

      // a series invite (a row with series_id, as the series module writes it); series_id must name a
      // series of the tenant (foreign key, migration 0015)
      const series = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/events/with-series',
        payload: {
          title: 'Weekly',
          start_dt: '2027-03-15T08:00:00Z',
          end_dt: '2027-03-15T08:30:00Z',
          series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
        }
      })
      assert.equal(series.statusCode, 201, series.body)
      const seriesId = series.json().event.series_id as number
      const token = 'series-token-' + String(Math.random())
      const seriesRow = await withTenant(
        t.ctx.db,
        { tenantId: tenant.id },
        async trx =>
          await trx
            .insertInto('event_managers')
            .values({
              tenant_id: tenant.id,
              series_id: seriesId,
              permissions: ['event:edit'],
              status: 'pending',
              invited_email: 'fay@example.test',
              invited_by: 'alice',
              invited_at: new Date(),
              invite_token_hash: hashInviteToken(token),
              expires_at: new Date(Date.now() + 86_400_000)
            })
            .returning('id')
            .executeTakeFirstOrThrow()
      )
      assert.deepEqual(
        (await t.as(fay, { method: 'GET', url: '/api/v1/events/managers/pending' }))
          .json()
          .items.map((i: Json) => i.id),
        [seriesRow.id]
      )
      const accepted = await t.as(fay, { method: 'POST', url: '/api/v1/events/managers/accept', payload: { token } })
      assert.equal(accepted.statusCode, 200, accepted.body)
      assert.deepEqual(
        [accepted.json().series_id, accepted.json().event_id, accepted.json().user_id, accepted.json().status],
        [seriesId, null, 'fay', 'active']
      )

      // revoked: 409
      const inv2 = (
        await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${event.id}/managers/invite`,
          payload: { email: 'gus@example.test', role: 'event_manager:full' }
        })
      ).json()
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.updateTable('event_managers').set({ status: 'revoked' }).where('id', '=', inv2.id).execute()
      })
      const gus = await tenant.user('gus', ['member'], { email: 'gus@example.test' })
      assert.equal(
        (
          await t.as(gus, {
            method: 'POST',
            url: '/api/v1/events/managers/accept',
            payload: { token: inv2.invite_token }
          })
        ).statusCode,
        409
      )
      // a token of another tenant is unknown here
      const other = await newTenant(t).user('gus', ['member'], { email: 'gus@example.test' })
      const inv3 = (
        await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${event.id}/managers/invite`,
          payload: { email: 'gus@example.test', role: 'event_manager:full' }
        })
      ).json()
      assert.equal(
        (
          await t.as(other, {
            method: 'POST',
            url: '/api/v1/events/managers/accept',
            payload: { token: inv3.invite_token }
          })
        ).statusCode,
        404
      )
    })

    void it('a manager without managers:manage gets 403 on every manager write', async () => {
      const { tenant, alice, event } = await setup()
      const hal = await tenant.user('hal')
      await addManager(t, tenant.id, event.id, 'hal', { role: 'event_manager:editor' })
      await addManager(t, tenant.id, event.id, 'ida', { permissions: ['attendees:read'] })
      assert.equal((await managers(hal, event.id)).statusCode, 200)
      assert.equal(
        (
          await t.as(hal, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/managers`,
            payload: { user_id: 'x', role: 'event_manager:full' }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(hal, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/managers/invite`,
            payload: { email: 'x@example.test', role: 'event_manager:full' }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(hal, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/ida`,
            payload: { permissions: ['event:edit'] }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (await t.as(hal, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/ida` })).statusCode,
        403
      )
      assert.equal((await managers(alice, event.id)).json().total, 2)
      // a full manager may
      await addManager(t, tenant.id, event.id, 'jo', { role: 'event_manager:full' })
      const jo = await tenant.user('jo')
      assert.equal(
        (await t.as(jo, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/ida` })).statusCode,
        204
      )
    })

    void it('a manager with only managers:manage grants nobody more than she holds, never changes her own grant, and cannot touch a stronger manager', async () => {
      const { tenant, alice, event } = await setup()
      await addManager(t, tenant.id, event.id, 'hal', { permissions: ['managers:manage'] })
      await addManager(t, tenant.id, event.id, 'ida', { permissions: ['managers:manage', 'attendees:read'] })
      const hal = await tenant.user('hal')
      const grantOf = async (userId: string) => {
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/managers/${userId}` })
        assert.equal(res.statusCode, 200, res.body)
        return [res.json().role, res.json().permissions]
      }

      // her own grant: neither raised nor changed at all
      const self = await t.as(hal, {
        method: 'PUT',
        url: `/api/v1/events/${event.id}/managers/hal`,
        payload: { permissions: [], role: 'event_manager:full' }
      })
      assert.equal(self.statusCode, 403, self.body)
      assert.equal(self.json().errors[0].location, 'path.user_id')
      assert.equal(
        (
          await t.as(hal, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/hal`,
            payload: { permissions: ['managers:manage'] }
          })
        ).statusCode,
        403
      )
      assert.deepEqual(await grantOf('hal'), [null, ['managers:manage']])

      // others: nothing beyond managers:manage, by add, invite or change
      const full = await t.as(hal, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'sock', role: 'event_manager:full' }
      })
      assert.equal(full.statusCode, 403, full.body)
      assert.equal(full.json().errors[0].location, 'body.role')
      assert.match(full.json().detail, /event:delete/)
      const del = await t.as(hal, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers`,
        payload: { user_id: 'sock', permissions: ['managers:manage', 'event:delete'] }
      })
      assert.equal(del.statusCode, 403)
      assert.deepEqual(del.json().errors[0], {
        location: 'body.permissions',
        message: 'permissions the caller does not hold',
        value: ['event:delete']
      })
      const inv = await t.as(hal, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'sock@example.test', role: 'event_manager:full' }
      })
      assert.equal(inv.statusCode, 403, inv.body)
      assert.equal(
        (
          await t.as(hal, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/managers/invite`,
            payload: { email: 'sock@example.test', permissions: ['event:edit'] }
          })
        ).statusCode,
        403
      )
      // ida holds attendees:read, which hal does not: hal may neither change nor remove her
      assert.equal(
        (
          await t.as(hal, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/ida`,
            payload: { permissions: ['managers:manage'] }
          })
        ).statusCode,
        403
      )
      const drop = await t.as(hal, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/ida` })
      assert.equal(drop.statusCode, 403, drop.body)
      assert.equal(drop.json().errors[0].location, 'path.user_id')
      const listed = (await managers(alice, event.id)).json().items as Json[]
      assert.deepEqual(
        listed.map(m => [m.user_id, m.status, m.invited_email, m.permissions]),
        [
          ['hal', 'active', null, ['managers:manage']],
          ['ida', 'active', null, ['managers:manage', 'attendees:read']]
        ]
      )

      // the event is untouched and hal still cannot delete it
      assert.equal((await t.as(hal, { method: 'DELETE', url: `/api/v1/events/${event.id}` })).statusCode, 403)
      const still = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}` })
      assert.equal(still.statusCode, 200)
      assert.equal(still.json().is_deleted ?? false, false)

      // within her rights she may act: grant managers:manage, then step down
      assert.equal(
        (
          await t.as(hal, {
            method: 'POST',
            url: `/api/v1/events/${event.id}/managers`,
            payload: { user_id: 'kit', permissions: ['managers:manage'] }
          })
        ).statusCode,
        201
      )
      assert.equal(
        (await t.as(hal, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/kit` })).statusCode,
        204
      )
      assert.equal(
        (await t.as(hal, { method: 'DELETE', url: `/api/v1/events/${event.id}/managers/hal` })).statusCode,
        204
      )
      assert.deepEqual(
        ((await managers(alice, event.id)).json().items as Json[]).map(m => m.user_id),
        ['ida']
      )
      // a full manager may change others but not herself; the creator and admins grant anything
      await addManager(t, tenant.id, event.id, 'jo', { role: 'event_manager:full' })
      const jo = await tenant.user('jo')
      assert.equal(
        (
          await t.as(jo, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/jo`,
            payload: { permissions: ['event:edit'] }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (
          await t.as(jo, {
            method: 'PUT',
            url: `/api/v1/events/${event.id}/managers/ida`,
            payload: { permissions: [], role: 'event_manager:full' }
          })
        ).statusCode,
        200
      )
      assert.deepEqual(await grantOf('jo'), ['event_manager:full', []])
      assert.equal((await grantOf('ida'))[0], 'event_manager:full')
    })

    void it('an occurrence manager cannot refresh, change or remove series-level grants; the series creator can', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const start = new Date(Date.now() + 30 * 86_400_000)
      start.setUTCHours(9, 0, 0, 0)
      const made = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/events/with-series',
        payload: {
          title: 'Standup',
          start_dt: start.toISOString(),
          end_dt: new Date(start.getTime() + 1_800_000).toISOString(),
          timezone: 'UTC',
          series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 3 }
        }
      })
      assert.equal(made.statusCode, 201, made.body)
      const anchor = made.json().occurrences[0].id as number
      const seriesId = made.json().event.series_id as number
      await addManager(t, tenant.id, anchor, 'hal', { role: 'event_manager:full' })
      const hal = await tenant.user('hal')
      const samToken = 'series-invite-' + String(Math.random())
      const invite = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('event_managers')
          .values({
            tenant_id: tenant.id,
            event_id: anchor,
            series_id: seriesId,
            user_id: 'carol',
            role: 'event_manager:attendees',
            status: 'active'
          })
          .execute()
        return await trx
          .insertInto('event_managers')
          .values({
            tenant_id: tenant.id,
            event_id: anchor,
            series_id: seriesId,
            role: 'event_manager:checkin',
            status: 'pending',
            invited_email: 'sam@example.test',
            invited_by: 'alice',
            invited_at: new Date(),
            invite_token_hash: hashInviteToken(samToken),
            expires_at: new Date(Date.now() + 86_400_000)
          })
          .returning(['id', 'invited_at'])
          .executeTakeFirstOrThrow()
      })
      const sam = await tenant.user('sam')
      const before = (await t.as(sam, { method: 'GET', url: '/api/v1/events/managers/pending' })).json().items as Json[]
      assert.deepEqual(
        before.map(i => [i.id, i.series_id, i.role]),
        [[invite.id, seriesId, 'event_manager:checkin']]
      )

      // re-inviting the series invite's address through the occurrence would hand hal a series-level token
      const re = await t.as(hal, {
        method: 'POST',
        url: `/api/v1/events/${anchor}/managers/invite`,
        payload: { email: 'sam@example.test', role: 'event_manager:full' }
      })
      assert.equal(re.statusCode, 403, re.body)
      assert.equal(re.json().invite_token, undefined)
      const mine = await t.as(hal, {
        method: 'POST',
        url: `/api/v1/events/${anchor}/managers/invite`,
        payload: { email: 'Sam@Example.test', permissions: ['attendees:read'] }
      })
      assert.equal(mine.statusCode, 403, mine.body)
      const after = (await t.as(sam, { method: 'GET', url: '/api/v1/events/managers/pending' })).json().items as Json[]
      assert.deepEqual(after, before, 'the series invite is unchanged and no other invite was made')
      const list = (await managers(alice, anchor)).json().items as Json[]
      assert.deepEqual(
        list.filter(m => m.status === 'pending').map(m => m.id),
        [invite.id]
      )
      // series-level rows cannot be changed or removed through the occurrence
      assert.equal(
        (
          await t.as(hal, {
            method: 'PUT',
            url: `/api/v1/events/${anchor}/managers/carol`,
            payload: { permissions: [], role: 'event_manager:full' }
          })
        ).statusCode,
        403
      )
      assert.equal(
        (await t.as(hal, { method: 'DELETE', url: `/api/v1/events/${anchor}/managers/carol` })).statusCode,
        403
      )
      const carol = await t.as(alice, { method: 'GET', url: `/api/v1/events/${anchor}/managers/carol` })
      assert.deepEqual(
        [carol.json().status, carol.json().role, carol.json().series_id],
        ['active', 'event_manager:attendees', seriesId]
      )
      // the old token still works for sam: nothing was refreshed
      const ok = await t.as(sam, {
        method: 'POST',
        url: '/api/v1/events/managers/accept',
        payload: { token: samToken }
      })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([ok.json().series_id, ok.json().role], [seriesId, 'event_manager:checkin'])
      // the series creator holds series-level rights
      assert.equal(
        (
          await t.as(alice, {
            method: 'PUT',
            url: `/api/v1/events/${anchor}/managers/carol`,
            payload: { permissions: ['attendees:read'] }
          })
        ).statusCode,
        200
      )
    })

    void it('only the addressee accepts an invite: no token e-mail 403, another e-mail 403, same address in other case accepted', async () => {
      const { tenant, alice, event } = await setup()
      const inv = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'Nina@Example.test', permissions: ['attendees:read'] }
      })
      assert.equal(inv.statusCode, 201, inv.body)
      const token = inv.json().invite_token as string
      const pendingStatus = async () =>
        ((await managers(alice, event.id)).json().items as Json[]).map(m => [m.id, m.status, m.user_id])

      const noEmail = await tenant.user('nina', ['member'], { email: undefined })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.insertInto('users').values({ tenant_id: tenant.id, id: 'nina', email: 'nina@example.test' }).execute()
      })
      const refused = await t.as(noEmail, { method: 'POST', url: '/api/v1/events/managers/accept', payload: { token } })
      assert.equal(refused.statusCode, 403, refused.body)
      assert.match(refused.json().detail, /no e-mail/)
      const other = await tenant.user('otto', ['member'], { email: 'otto@example.test' })
      const wrong = await t.as(other, { method: 'POST', url: '/api/v1/events/managers/accept', payload: { token } })
      assert.equal(wrong.statusCode, 403)
      assert.match(wrong.json().detail, /another e-mail/)
      assert.deepEqual(await pendingStatus(), [[inv.json().id, 'pending', null]])

      const nina = await tenant.user('nina', ['member'], { email: '  NINA@example.TEST ' })
      assert.deepEqual(
        ((await t.as(nina, { method: 'GET', url: '/api/v1/events/managers/pending' })).json().items as Json[]).map(
          i => i.id
        ),
        [inv.json().id]
      )
      const ok = await t.as(nina, { method: 'POST', url: '/api/v1/events/managers/accept', payload: { token } })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual(await pendingStatus(), [[inv.json().id, 'active', 'nina']])

      // a token whose e-mail changed is accepted when the stored profile e-mail is the invited one
      const inv2 = (
        await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${event.id}/managers/invite`,
          payload: { email: 'pat@example.test', permissions: ['attendees:read'] }
        })
      ).json()
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.insertInto('users').values({ tenant_id: tenant.id, id: 'pat', email: 'PAT@example.test' }).execute()
      })
      const pat = await tenant.user('pat', ['member'], { email: 'pat.new@example.test' })
      assert.equal(
        (
          await t.as(pat, {
            method: 'POST',
            url: '/api/v1/events/managers/accept',
            payload: { token: inv2.invite_token }
          })
        ).statusCode,
        200
      )
    })

    void it('shows invitee e-mails only to callers who may manage managers', async () => {
      const { tenant, alice } = await setup()
      const event = await createEvent(t, alice, { visibility: 40 })
      const inv = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'quinn@example.test', permissions: ['attendees:read'] }
      })
      assert.equal(inv.statusCode, 201)
      await addManager(t, tenant.id, event.id, 'ray', { permissions: ['attendees:read'] })
      await addManager(t, tenant.id, event.id, 'una', { permissions: ['managers:manage'] })
      const emails = async (token: string) => {
        const res = await managers(token, event.id)
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

    void it('delivers queued notifications through the sender, with retries and a final failure', async () => {
      const { tenant, alice, event } = await setup()
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'kim@example.test', role: 'event_manager:full' }
      })
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'lee@example.test', role: 'event_manager:full' }
      })
      const sent: Notification[] = []
      const sender = {
        name: 'test',
        async send (n: Notification) {
          if (n.recipient === 'lee@example.test') throw new Error('mailbox unavailable')
          sent.push(n)
        }
      }
      await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      assert.ok(
        sent.some(
          n => n.tenantId === tenant.id && n.recipient === 'kim@example.test' && n.subject.includes('Invitation')
        )
      )
      let rows = await notes(tenant.id)
      assert.deepEqual(
        rows.map(r => [r.recipient, r.status, r.attempts]),
        [
          ['kim@example.test', 'sent', 1],
          ['lee@example.test', 'pending', 1]
        ]
      )
      assert.equal(rows[1]?.last_error, 'mailbox unavailable')
      // backoff: not retried before its time; make it due and fail until the last attempt
      await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      assert.equal((await notes(tenant.id))[1]?.attempts, 1)
      for (let i = 1; i < MAX_ATTEMPTS; i++) {
        await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
          await trx
            .updateTable('notification_outbox')
            .set({ payload: sql`payload - 'next_attempt_at'` })
            .where('tenant_id', '=', tenant.id)
            .execute()
        })
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      }
      rows = await notes(tenant.id)
      assert.deepEqual([rows[1]?.status, rows[1]?.attempts], ['failed', MAX_ATTEMPTS])
      assert.equal(sent.filter(n => n.recipient === 'kim@example.test' && n.tenantId === tenant.id).length, 1)
    })

    void it('runs the delivery loop with a sender until stopped', async () => {
      const { tenant, alice, event } = await setup()
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${event.id}/managers/invite`,
        payload: { email: 'max@example.test', role: 'event_manager:full' }
      })
      const sent: Notification[] = []
      const loop = startNotificationDelivery(t.ctx, {
        log: t.app.log,
        sender: {
          name: 'test',
          async send (n) {
            sent.push(n)
          }
        },
        intervalMs: 3_600_000
      })
      await loop.tick()
      await loop.stop()
      assert.ok(sent.some(n => n.recipient === 'max@example.test'))
      assert.equal((await notes(tenant.id))[0]?.status, 'sent')
    })
  })
}

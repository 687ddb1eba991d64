import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import {
  assertInvitedEmailShown, assertUnheldPermissionsRefused, INVITEE, managerRoutes
} from '../../../test/helpers/managers.ts'
import { makeNotificationsDue, queuedNotifications } from '../../../test/helpers/outbox.ts'
import { expectStatus, expectStatuses } from '../../../test/helpers/requests.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { startNotificationDelivery } from '../../platform/notifications/delivery.ts'
import {
  deliverPendingNotifications, MAX_ATTEMPTS, type Notification
} from '../../platform/notifications/notifications.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import {
  addManager, createEvent, insertContacts, insertSeriesInvite, outboxTopics, type Json
} from '../attendees/attendees.fixtures.ts'
import { dailyStandup, withSeries } from '../series/series.fixtures.ts'
import { hashInviteToken } from './event-managers.repository.ts'

for (const kind of databases()) {
  void describe(`${kind}: event managers and invites`, () => {
    const t = useTestApp(kind)

    const routes = managerRoutes(t, 'events')
    const { list: managers, invite, pending, accept } = routes
    const ACCEPT = '/api/v1/events/managers/accept'

    void it('adds a manager with permissions or a role bundle, updates, removes; the grant is enforced', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
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
      const [note] = await queuedNotifications(t, tenant.id)
      assert.deepEqual(
        [note?.channel, note?.recipient, note?.body, note?.priority, note?.status],
        ['email', 'bob@example.test', 'Welcome', 'high', 'pending']
      )

      const url = `/api/v1/events/${event.id}`
      await expectStatus(t, alice, 'POST', `${url}/managers`, 409, { user_id: 'bob', role: 'event_manager:full' })
      const none = await expectStatus(t, alice, 'POST', `${url}/managers`, 400, { user_id: 'carl', permissions: [] })
      assert.equal(none.json().errors[0].location, 'body.permissions')
      const badPerm = await expectStatus(t, alice, 'POST', `${url}/managers`, 400, {
        user_id: 'carl',
        permissions: ['everything']
      })
      assert.equal(badPerm.json().errors[0].location, 'body.permissions[0]')
      await expectStatus(t, alice, 'POST', `${url}/managers`, 409, { user_id: 'alice', role: 'event_manager:full' })

      // bob may read attendees but not write them, nor manage managers
      const [contact] = await insertContacts(t, tenant.id, 'alice', 1, 'org-1')
      await expectStatuses(t, [
        [bob, 'GET', `${url}/attendees`, 200],
        [bob, 'POST', `${url}/attendees`, 403, { contact_id: contact }],
        [bob, 'PUT', `${url}/managers/bob`, 403, { permissions: ['managers:manage'] }]
      ])

      const put = await expectStatus(t, alice, 'PUT', `${url}/managers/bob`, 200, {
        permissions: ['attendees:read', 'attendees:write']
      })
      assert.deepEqual(put.json().permissions, ['attendees:read', 'attendees:write'])
      await expectStatus(t, bob, 'POST', `${url}/attendees`, 201, { contact_id: contact })
      const role = await t.as(alice, {
        method: 'PUT',
        url: `/api/v1/events/${event.id}/managers/bob`,
        payload: { permissions: [], role: 'event_manager:checkin' }
      })
      assert.equal(role.json().role, 'event_manager:checkin')
      assert.deepEqual(role.json().permissions, ['attendees:read', 'attendees:checkin'])

      const got = await expectStatus(t, bob, 'GET', `${url}/managers/bob`, 200)
      assert.equal(got.json().role, 'event_manager:checkin')
      await expectStatus(t, alice, 'GET', `${url}/managers/nobody`, 404)
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
      await expectStatuses(t, [
        [alice, 'DELETE', `${url}/managers/alice`, 409],
        [alice, 'PUT', `${url}/managers/alice`, 409, { permissions: ['event:edit'] }]
      ])

      await expectStatus(t, alice, 'DELETE', `${url}/managers/bob`, 204)
      assert.equal((await managers(alice, event.id)).json().total, 0)
      await expectStatuses(t, [
        [bob, 'GET', `${url}/attendees`, 404],
        [alice, 'DELETE', `${url}/managers/bob`, 404]
      ])
      assert.deepEqual(
        (await outboxTopics(t, tenant.id)).filter(x => x.startsWith('event.manager')),
        ['event.manager_added', 'event.manager_updated', 'event.manager_updated', 'event.manager_removed']
      )

      // another tenant: 404, nothing changed
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await expectStatuses(t, [
        [mallory, 'GET', `${url}/managers`, 404],
        [mallory, 'POST', `${url}/managers`, 404, { user_id: 'm', role: 'event_manager:full' }]
      ])
      assert.equal((await managers(alice, event.id)).json().total, 0)
    })

    void it('invites by e-mail, refreshes a re-invite, accepts by token, lists pending invites', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const inv = await invite(alice, event.id, { email: 'Dana@Example.test', role: 'event_manager:attendees' })
      assert.equal(inv.statusCode, 201, inv.body)
      const invitation = inv.json()
      assert.equal(invitation.status, 'pending')
      assert.equal(invitation.user_id, null)
      assert.match(invitation.invite_token, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(Date.parse(invitation.expires_at) - Date.parse(invitation.invited_at), 7 * 86_400_000)
      const stored = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx =>
        await trx
          .selectFrom('event_managers')
          .select('invite_token_hash')
          .where('id', '=', invitation.id)
          .executeTakeFirstOrThrow()
      )
      assert.equal(stored.invite_token_hash, hashInviteToken(invitation.invite_token))
      const sent = await queuedNotifications(t, tenant.id)
      assert.equal(sent.length, 1)
      assert.equal(sent[0]?.recipient, 'Dana@Example.test')
      assert.ok(sent[0]?.body.includes(invitation.invite_token))

      // the list shows the pending row without its token
      const listed = (await managers(alice, event.id)).json().items as Json[]
      assert.equal(listed.length, 1)
      assert.equal(listed[0]?.invite_token, undefined)

      // re-inviting refreshes the same row with a new token; the old one stops working
      const again = await invite(alice, event.id, { email: 'dana@example.test', permissions: ['attendees:read'] })
      assert.equal(again.statusCode, 201)
      assert.equal(again.json().id, invitation.id)
      assert.notEqual(again.json().invite_token, invitation.invite_token)
      assert.deepEqual(again.json().permissions, ['attendees:read'])

      const dana = await tenant.user('dana', ['member'], { email: 'DANA@example.test' })
      const waiting = await pending(dana)
      assert.equal(waiting.statusCode, 200)
      assert.deepEqual(waiting.json().items.map((i: Json) => i.id), [invitation.id])

      const eve = await tenant.user('eve', ['member'], { email: 'eve@example.test' })
      await expectStatuses(t, [
        [dana, 'POST', ACCEPT, 404, { token: invitation.invite_token }],
        [eve, 'POST', ACCEPT, 403, { token: again.json().invite_token }]
      ])
      const missing = await accept(dana, {})
      assert.equal(missing.statusCode, 400)
      assert.equal(missing.json().errors[0].location, 'body.token')

      const ok = await accept(dana, { token: again.json().invite_token })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([ok.json().status, ok.json().user_id, ok.json().event_id], ['active', 'dana', event.id])
      assert.ok(ok.json().accepted_at !== null)
      assert.equal((await accept(dana, { token: again.json().invite_token })).statusCode, 409)
      assert.equal((await pending(dana)).json().items.length, 0)
      // the grant works
      const url = `/api/v1/events/${event.id}`
      await expectStatuses(t, [
        [dana, 'GET', `${url}/attendees`, 200],
        [dana, 'POST', `${url}/managers/invite`, 403, { email: 'x@example.test', role: 'event_manager:full' }]
      ])
    })

    void it('answers 410 for an expired invite, 409 for a revoked one, and accepts series invites', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const inv = (await invite(alice, event.id, { email: 'fay@example.test', role: 'event_manager:full' })).json()
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .updateTable('event_managers')
          .set({ expires_at: sql`now() - interval '1 minute'` })
          .where('id', '=', inv.id)
          .execute()
      })
      const fay = await tenant.user('fay', ['member'], { email: 'fay@example.test' })
      const expired = await expectStatus(t, fay, 'POST', ACCEPT, 410, { token: inv.invite_token })
      assert.equal(expired.json().title, 'Gone')
      assert.equal((await pending(fay)).json().items.length, 0)

      // a series invite (a row with series_id, as the series module writes it); series_id must name a
      // series of the tenant (foreign key, migration 0015)
      const seriesId = (await withSeries(t, alice, dailyStandup(2, { title: 'Weekly' }))).event.series_id as number
      const token = 'series-token-' + String(Math.random())
      const seriesInvite = await insertSeriesInvite(t, tenant.id, {
        series_id: seriesId,
        permissions: ['event:edit'],
        invited_email: 'fay@example.test'
      }, token)
      assert.deepEqual((await pending(fay)).json().items.map((i: Json) => i.id), [seriesInvite])
      const accepted = await expectStatus(t, fay, 'POST', ACCEPT, 200, { token })
      assert.deepEqual(
        [accepted.json().series_id, accepted.json().event_id, accepted.json().user_id, accepted.json().status],
        [seriesId, null, 'fay', 'active']
      )

      // revoked: 409
      const inv2 = (await invite(alice, event.id, { email: 'gus@example.test', role: 'event_manager:full' })).json()
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.updateTable('event_managers').set({ status: 'revoked' }).where('id', '=', inv2.id).execute()
      })
      const gus = await tenant.user('gus', ['member'], { email: 'gus@example.test' })
      await expectStatus(t, gus, 'POST', ACCEPT, 409, { token: inv2.invite_token })
      // a token of another tenant is unknown here
      const other = await newTenant(t).user('gus', ['member'], { email: 'gus@example.test' })
      const inv3 = (await invite(alice, event.id, { email: 'gus@example.test', role: 'event_manager:full' })).json()
      await expectStatus(t, other, 'POST', ACCEPT, 404, { token: inv3.invite_token })
    })

    void it('a manager without managers:manage gets 403 on every manager write', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const hal = await tenant.user('hal')
      await addManager(t, tenant.id, event.id, 'hal', { role: 'event_manager:editor' })
      await addManager(t, tenant.id, event.id, 'ida', { permissions: ['attendees:read'] })
      const url = `/api/v1/events/${event.id}/managers`
      await expectStatuses(t, [
        [hal, 'GET', url, 200],
        [hal, 'POST', url, 403, { user_id: 'x', role: 'event_manager:full' }],
        [hal, 'POST', `${url}/invite`, 403, { email: 'x@example.test', role: 'event_manager:full' }],
        [hal, 'PUT', `${url}/ida`, 403, { permissions: ['event:edit'] }],
        [hal, 'DELETE', `${url}/ida`, 403]
      ])
      assert.equal((await managers(alice, event.id)).json().total, 2)
      // a full manager may
      await addManager(t, tenant.id, event.id, 'jo', { role: 'event_manager:full' })
      const jo = await tenant.user('jo')
      await expectStatus(t, jo, 'DELETE', `${url}/ida`, 204)
    })

    void it('a manager with only managers:manage grants nobody more than she holds, never changes her own grant, ' +
      'and cannot touch a stronger manager', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      await addManager(t, tenant.id, event.id, 'hal', { permissions: ['managers:manage'] })
      await addManager(t, tenant.id, event.id, 'ida', { permissions: ['managers:manage', 'attendees:read'] })
      const hal = await tenant.user('hal')
      const url = `/api/v1/events/${event.id}/managers`
      const grantOf = async (userId: string) => {
        const res = await expectStatus(t, alice, 'GET', `${url}/${userId}`, 200)
        return [res.json().role, res.json().permissions]
      }

      // her own grant: neither raised nor changed at all
      const self = await expectStatus(t, hal, 'PUT', `${url}/hal`, 403, { permissions: [], role: 'event_manager:full' })
      assert.equal(self.json().errors[0].location, 'path.user_id')
      await expectStatus(t, hal, 'PUT', `${url}/hal`, 403, { permissions: ['managers:manage'] })
      assert.deepEqual(await grantOf('hal'), [null, ['managers:manage']])

      // others: nothing beyond managers:manage, by add, invite or change
      const full = await expectStatus(t, hal, 'POST', url, 403, { user_id: 'sock', role: 'event_manager:full' })
      assert.equal(full.json().errors[0].location, 'body.role')
      assert.match(full.json().detail, /event:delete/)
      await assertUnheldPermissionsRefused(t, hal, url, {
        user_id: 'sock',
        permissions: ['managers:manage', 'event:delete']
      }, ['event:delete'])
      await expectStatuses(t, [
        [hal, 'POST', `${url}/invite`, 403, { email: 'sock@example.test', role: 'event_manager:full' }],
        [hal, 'POST', `${url}/invite`, 403, { email: 'sock@example.test', permissions: ['event:edit'] }],
        // ida holds attendees:read, which hal does not: hal may neither change nor remove her
        [hal, 'PUT', `${url}/ida`, 403, { permissions: ['managers:manage'] }]
      ])
      const drop = await expectStatus(t, hal, 'DELETE', `${url}/ida`, 403)
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
      await expectStatus(t, hal, 'DELETE', `/api/v1/events/${event.id}`, 403)
      const still = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}` })
      assert.equal(still.statusCode, 200)
      assert.equal(still.json().is_deleted ?? false, false)

      // within her rights she may act: grant managers:manage, then step down
      await expectStatuses(t, [
        [hal, 'POST', url, 201, { user_id: 'kit', permissions: ['managers:manage'] }],
        [hal, 'DELETE', `${url}/kit`, 204],
        [hal, 'DELETE', `${url}/hal`, 204]
      ])
      assert.deepEqual(
        ((await managers(alice, event.id)).json().items as Json[]).map(m => m.user_id),
        ['ida']
      )
      // a full manager may change others but not herself; the creator and admins grant anything
      await addManager(t, tenant.id, event.id, 'jo', { role: 'event_manager:full' })
      const jo = await tenant.user('jo')
      await expectStatuses(t, [
        [jo, 'PUT', `${url}/jo`, 403, { permissions: ['event:edit'] }],
        [jo, 'PUT', `${url}/ida`, 200, { permissions: [], role: 'event_manager:full' }]
      ])
      assert.deepEqual(await grantOf('jo'), ['event_manager:full', []])
      assert.equal((await grantOf('ida'))[0], 'event_manager:full')
    })

    void it('an occurrence manager cannot refresh, change or remove series-level grants; ' +
      'the series creator can', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const start = new Date(Date.now() + 30 * 86_400_000)
      start.setUTCHours(9, 0, 0, 0)
      const made = await withSeries(t, alice, dailyStandup(3, {
        start_dt: start.toISOString(),
        end_dt: new Date(start.getTime() + 1_800_000).toISOString(),
        timezone: 'UTC'
      }))
      const anchor = made.occurrences[0].id as number
      const seriesId = made.event.series_id as number
      await addManager(t, tenant.id, anchor, 'hal', { role: 'event_manager:full' })
      const hal = await tenant.user('hal')
      const samToken = 'series-invite-' + String(Math.random())
      await addManager(t, tenant.id, anchor, 'carol', { role: 'event_manager:attendees', series_id: seriesId })
      const invite = await insertSeriesInvite(t, tenant.id, {
        event_id: anchor,
        series_id: seriesId,
        role: 'event_manager:checkin',
        invited_email: 'sam@example.test'
      }, samToken)
      const sam = await tenant.user('sam')
      const before = (await pending(sam)).json().items as Json[]
      assert.deepEqual(
        before.map(i => [i.id, i.series_id, i.role]),
        [[invite, seriesId, 'event_manager:checkin']]
      )

      // re-inviting the series invite's address through the occurrence would hand hal a series-level token
      const url = `/api/v1/events/${anchor}/managers`
      const re = await expectStatus(t, hal, 'POST', `${url}/invite`, 403, {
        email: 'sam@example.test',
        role: 'event_manager:full'
      })
      assert.equal(re.json().invite_token, undefined)
      await expectStatus(t, hal, 'POST', `${url}/invite`, 403, {
        email: 'Sam@Example.test',
        permissions: ['attendees:read']
      })
      const after = (await pending(sam)).json().items as Json[]
      assert.deepEqual(after, before, 'the series invite is unchanged and no other invite was made')
      const list = (await managers(alice, anchor)).json().items as Json[]
      assert.deepEqual(
        list.filter(m => m.status === 'pending').map(m => m.id),
        [invite]
      )
      // series-level rows cannot be changed or removed through the occurrence
      await expectStatuses(t, [
        [hal, 'PUT', `${url}/carol`, 403, { permissions: [], role: 'event_manager:full' }],
        [hal, 'DELETE', `${url}/carol`, 403]
      ])
      const carol = await t.as(alice, { method: 'GET', url: `${url}/carol` })
      assert.deepEqual(
        [carol.json().status, carol.json().role, carol.json().series_id],
        ['active', 'event_manager:attendees', seriesId]
      )
      // the old token still works for sam: nothing was refreshed
      const ok = await expectStatus(t, sam, 'POST', ACCEPT, 200, { token: samToken })
      assert.deepEqual([ok.json().series_id, ok.json().role], [seriesId, 'event_manager:checkin'])
      // the series creator holds series-level rights
      await expectStatus(t, alice, 'PUT', `${url}/carol`, 200, { permissions: ['attendees:read'] })
    })

    void it('only the addressee accepts an invite: no token e-mail 403, another e-mail 403, ' +
      'same address in other case accepted', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const inv = await invite(alice, event.id, { email: 'Nina@Example.test', permissions: ['attendees:read'] })
      assert.equal(inv.statusCode, 201, inv.body)
      const token = inv.json().invite_token as string
      const pendingStatus = async () =>
        ((await managers(alice, event.id)).json().items as Json[]).map(m => [m.id, m.status, m.user_id])

      const noEmail = await tenant.user('nina', ['member'], { email: undefined })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.insertInto('users').values({ tenant_id: tenant.id, id: 'nina', email: 'nina@example.test' }).execute()
      })
      const refused = await accept(noEmail, { token })
      assert.equal(refused.statusCode, 403, refused.body)
      assert.match(refused.json().detail, /no e-mail/)
      const wrong = await accept(await tenant.user('otto', ['member'], { email: 'otto@example.test' }), { token })
      assert.equal(wrong.statusCode, 403)
      assert.match(wrong.json().detail, /another e-mail/)
      assert.deepEqual(await pendingStatus(), [[inv.json().id, 'pending', null]])

      const nina = await tenant.user('nina', ['member'], { email: '  NINA@example.TEST ' })
      assert.deepEqual(((await pending(nina)).json().items as Json[]).map(i => i.id), [inv.json().id])
      const ok = await accept(nina, { token })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual(await pendingStatus(), [[inv.json().id, 'active', 'nina']])

      // a token whose e-mail changed is accepted when the stored profile e-mail is the invited one
      const inv2 = await invite(alice, event.id, { email: 'pat@example.test', permissions: ['attendees:read'] })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.insertInto('users').values({ tenant_id: tenant.id, id: 'pat', email: 'PAT@example.test' }).execute()
      })
      const pat = await tenant.user('pat', ['member'], { email: 'pat.new@example.test' })
      await expectStatus(t, pat, 'POST', ACCEPT, 200, { token: inv2.json().invite_token })
    })

    void it('shows invitee e-mails only to callers who may manage managers', async () => {
      const { tenant, alice } = await aliceWithEvent(t)
      const event = await createEvent(t, alice, { visibility: 40 })
      const inv = await invite(alice, event.id, { email: INVITEE.email, permissions: ['attendees:read'] })
      assert.equal(inv.statusCode, 201)
      await addManager(t, tenant.id, event.id, INVITEE.withoutRight, { permissions: ['attendees:read'] })
      await addManager(t, tenant.id, event.id, INVITEE.withRight, { permissions: ['managers:manage'] })
      await assertInvitedEmailShown(routes, tenant, event.id, alice)
    })

    void it('delivers queued notifications through the sender, with retries and a final failure', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      await invite(alice, event.id, { email: 'kim@example.test', role: 'event_manager:full' })
      await invite(alice, event.id, { email: 'lee@example.test', role: 'event_manager:full' })
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
      let rows = await queuedNotifications(t, tenant.id)
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
      assert.equal((await queuedNotifications(t, tenant.id))[1]?.attempts, 1)
      for (let i = 1; i < MAX_ATTEMPTS; i++) {
        await makeNotificationsDue(t, tenant.id)
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      }
      rows = await queuedNotifications(t, tenant.id)
      assert.deepEqual([rows[1]?.status, rows[1]?.attempts], ['failed', MAX_ATTEMPTS])
      assert.equal(sent.filter(n => n.recipient === 'kim@example.test' && n.tenantId === tenant.id).length, 1)
    })

    void it('runs the delivery loop with a sender until stopped', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      await invite(alice, event.id, { email: 'max@example.test', role: 'event_manager:full' })
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
      assert.equal((await queuedNotifications(t, tenant.id))[0]?.status, 'sent')
    })
  })
}

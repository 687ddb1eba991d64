/**
 * An Idempotency-Key replay re-checks (docs/api-conventions.md, "Idempotency-Key"): a stored answer goes back only to
 * the caller who made the request, and only while that caller may still make it. A manager who lost his grant
 * replays the key of a check-in token or of a manager invite and gets 403 or 404, never the token; nothing is stored
 * or changed. Another user sending the same key gets his own evaluation. A caller who keeps the right gets the stored
 * answer, byte for byte. Routes claiming in a transaction of their own re-check the route's policy on the resource of
 * the path (a series manager invite), and a POST the layer could not re-check is refused when it is registered.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import Fastify from 'fastify'
import type { Kysely } from 'kysely'
import type { LightMyRequestResponse } from 'fastify'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { addManager, createContact, type Json } from '../../modules/attendees/attendees.fixtures.ts'
import { createEvent } from '../../modules/events/events.fixtures.ts'
import { requirePolicy } from '../../modules/policy/policy.ts'
import { withSeries } from '../../modules/series/series.fixtures.ts'
import type { Database } from '../db/database.ts'
import { withTenant } from '../db/tenant.ts'
import { registerIdempotency } from './idempotency.ts'
import { replayCheckOf } from '../../modules/replay-checks/replay-checks.ts'

const NEXT_YEAR = '2027-03-15T09:00:00.000Z'

/** The rows stored for a key in the tenant, by caller. */
async function storedRows (t: TestApp, tenantId: string, key: string) {
  return await withTenant(t.ctx.db, { tenantId }, trx =>
    trx.selectFrom('idempotency_keys')
      .select(['user_id', 'status_code', 'response_headers', 'response_body'])
      .where('tenant_id', '=', tenantId).where('key', '=', key)
      .orderBy('user_id')
      .execute()
  )
}

/** A refused replay: 403 or 404 as asked, in the problem format, not a replay, without the secret. */
function assertRefused (res: LightMyRequestResponse, status: 403 | 404, secret: string): void {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.equal(res.json().status, status)
  assert.equal(res.headers['idempotent-replayed'], undefined)
  assert.ok(!res.body.includes(secret), 'the refusal does not carry the stored secret')
}

for (const kind of databases()) {
  void describe(`${kind}: an Idempotency-Key replay re-checks the caller's right`, () => {
    const t = useTestApp(kind)

    /** Alice's event (`visibility`), a confirmed attendee, and her managers, granted through the API. */
    async function eventWithManagers (visibility: number, managers: Record<string, string[]>) {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const id = (await createEvent(t, alice, { title: 'Replays', visibility })).id as number
      const contact = await createContact(t, alice)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees`, 201, {
        contact_id: contact, status: 'confirmed'
      })
      for (const [userId, permissions] of Object.entries(managers)) {
        await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers`, 201, { user_id: userId, permissions })
      }
      return { tenant, alice, id, contact }
    }

    const keyed = async (token: string, url: string, key: string, payload?: Json) => await t.as(token, {
      method: 'POST', url, headers: { 'idempotency-key': key }, ...(payload !== undefined ? { payload } : {})
    })

    async function attendee (token: string, id: number, contact: string): Promise<Json> {
      const res = await expectStatus(t, token, 'GET', `/api/v1/events/${id}/attendees?size=100`, 200)
      const found = (res.json().items as Json[]).find(i => i.contact_id === contact)
      assert.ok(found !== undefined)
      return found
    }

    void it('check-in token: a revoked manager gets 403 (404 if the event is hidden), not the token', async () => {
      for (const [visibility, status] of [[40, 403], [10, 404]] as const) {
        const { tenant, alice, id, contact } = await eventWithManagers(visibility, { bob: ['attendees:write'] })
        const bob = await tenant.user('bob')
        const url = `/api/v1/events/${id}/attendees/${contact}/check-in-token`
        const key = `k-${crypto.randomUUID()}`
        const first = await keyed(bob, url, key)
        assert.equal(first.statusCode, 201, first.body)
        const issued = first.json()
        const before = await storedRows(t, tenant.id, key)

        await expectStatus(t, alice, 'DELETE', `/api/v1/events/${id}/managers/bob`, 204)
        assertRefused(await keyed(bob, url, key), status, issued.token as string)

        // nothing changed: the token was not issued again (the first still checks in), nothing stored
        assert.deepEqual(await storedRows(t, tenant.id, key), before)
        assert.equal((await attendee(alice, id, contact)).check_in_token_issued_at, issued.issued_at)
        const scan = await t.as(alice, {
          method: 'POST', url: `/api/v1/events/${id}/check-in/token`, payload: { token: issued.token }
        })
        assert.equal(scan.statusCode, 200, scan.body)
      }
    })

    void it('manager invite: who lost managers:manage, or a right it grants, gets 403, not its token', async () => {
      const { tenant, alice, id } = await eventWithManagers(40, { bob: ['managers:manage', 'attendees:write'] })
      const bob = await tenant.user('bob')
      const url = `/api/v1/events/${id}/managers/invite`
      const body = { email: 'carol@example.test', permissions: ['attendees:write'] }
      const key = `k-${crypto.randomUUID()}`
      const first = await keyed(bob, url, key, body)
      assert.equal(first.statusCode, 201, first.body)
      const token = first.json().invite_token as string
      assert.ok(token.length > 20)
      const before = await storedRows(t, tenant.id, key)
      const invites = async () =>
        (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/managers`, 200)).json().items

      // bob keeps managers:manage but no longer holds attendees:write: the invite would exceed his own grant now
      const listed = await invites()
      const grant = async (permissions: string[]) =>
        await expectStatus(t, alice, 'PUT', `/api/v1/events/${id}/managers/bob`, 200, { permissions })
      await grant(['managers:manage'])
      assertRefused(await keyed(bob, url, key, body), 403, token)
      // bob keeps attendees:write but no longer manages managers
      await grant(['attendees:write'])
      assertRefused(await keyed(bob, url, key, body), 403, token)

      // nothing stored or changed: the pending invite is as it was, and its token is still the one carol accepts with
      assert.deepEqual(await storedRows(t, tenant.id, key), before)
      const now = await invites()
      const pending = (rows: Json[]) => rows.find(r => r.invited_email === 'carol@example.test')
      assert.deepEqual(pending(now), pending(listed))
      const carol = await tenant.user('carol')
      await expectStatus(t, carol, 'POST', '/api/v1/events/managers/accept', 200, { token })
    })

    void it('another user sending the same key and body gets his own evaluation, never the stored answer', async () => {
      const { tenant, alice, id, contact } = await eventWithManagers(40, {
        bob: ['attendees:write'], dave: ['attendees:write']
      })
      const bob = await tenant.user('bob')
      const dave = await tenant.user('dave')
      const erin = await tenant.user('erin')
      const url = `/api/v1/events/${id}/attendees/${contact}/check-in-token`
      const key = `k-${crypto.randomUUID()}`
      const first = await keyed(bob, url, key)
      assert.equal(first.statusCode, 201, first.body)
      const bobs = first.json().token as string

      // erin, a member without a grant on the event: 403, as without the key
      assertRefused(await keyed(erin, url, key), 403, bobs)
      // dave holds the right: his request runs (a new token, replacing bob's), it is no replay
      const daves = await keyed(dave, url, key)
      assert.equal(daves.statusCode, 201, daves.body)
      assert.equal(daves.headers['idempotent-replayed'], undefined)
      assert.notEqual(daves.json().token, bobs)
      assert.equal((await attendee(alice, id, contact)).check_in_token_issued_at, daves.json().issued_at)
      // one stored answer per caller
      assert.deepEqual(
        (await storedRows(t, tenant.id, key)).map(r => [r.user_id, r.status_code]),
        [['bob', 201], ['dave', 201]]
      )
    })

    void it('who keeps the right gets the stored answer, byte for byte; nothing is issued again', async () => {
      const bob0 = ['attendees:write', 'managers:manage']
      const { tenant, alice, id, contact } = await eventWithManagers(10, { bob: bob0 })
      const bob = await tenant.user('bob')
      const invite = { email: 'carol@example.test', permissions: ['attendees:write'] }
      const cases: Array<[string, Json | undefined]> = [
        [`/api/v1/events/${id}/attendees/${contact}/check-in-token`, undefined],
        [`/api/v1/events/${id}/managers/invite`, invite]
      ]
      const answers: LightMyRequestResponse[] = []
      for (const [url, body] of cases) {
        const key = `k-${crypto.randomUUID()}`
        const first = await keyed(bob, url, key, body)
        assert.equal(first.statusCode, 201, first.body)
        answers.push(first)
        const pending = (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/managers`, 200)).json().items
        // his grant changes, but he keeps what the request needs
        await expectStatus(t, alice, 'PUT', `/api/v1/events/${id}/managers/bob`, 200, {
          permissions: ['attendees:write', 'managers:manage', 'links:manage']
        })
        const again = await keyed(bob, url, key, body)
        assert.equal(again.statusCode, 201, again.body)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.body, first.body)
        for (const h of ['content-type', 'etag', 'location']) assert.equal(again.headers[h], first.headers[h], h)
        // nothing issued again: the managers (the pending invite) are as they were
        assert.deepEqual((await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/managers`, 200)).json().items
          .filter((m: Json) => m.user_id !== 'bob'), pending.filter((m: Json) => m.user_id !== 'bob'))
      }
      // and the check-in token is the first one
      assert.equal((await attendee(alice, id, contact)).check_in_token_issued_at, answers[0]?.json().issued_at)
    })

    void it('series manager invite (claimed in its own transaction): the series grant is re-checked', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const made = await withSeries(t, alice, {
        title: 'Daily',
        start_dt: NEXT_YEAR,
        end_dt: '2027-03-15T10:00:00.000Z',
        timezone: 'UTC',
        visibility: 40,
        series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 3 }
      })
      const first = (made.occurrences as Json[])[0] as Json
      const seriesId = first.series_id as number
      await addManager(t, tenant.id, first.id as number, 'bob', { role: 'event_manager:full', series_id: seriesId })
      const url = `/api/v1/events/${first.id as number}/series/manager`
      const key = `k-${crypto.randomUUID()}`
      const body = { email: 'carol@example.test' }
      const invited = await keyed(bob, url, key, body)
      assert.equal(invited.statusCode, 200, invited.body)
      const token = invited.json().series_manager_invite_token as string
      assert.ok(token.length > 20)
      const again = await keyed(bob, url, key, body)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, invited.body)

      // bob's series grant is revoked: he still sees the public series, and may not invite
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.updateTable('event_managers').set({ status: 'revoked' })
          .where('tenant_id', '=', tenant.id).where('user_id', '=', 'bob').execute()
      })
      const before = await storedRows(t, tenant.id, key)
      assertRefused(await keyed(bob, url, key, body), 403, token)
      assert.deepEqual(await storedRows(t, tenant.id, key), before)
    })

    void it('a feed token (tenant permission only): a caller whose role lost it gets 403, not the token', async () => {
      const tenant = newTenant(t)
      const mia = await tenant.user('mia')
      const key = `k-${crypto.randomUUID()}`
      const created = await keyed(mia, '/api/v1/feed-tokens', key, { scope: 'personal' })
      assert.equal(created.statusCode, 201, created.body)
      const again = await keyed(mia, '/api/v1/feed-tokens', key, { scope: 'personal' })
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, created.body)
      const roleless = await tenant.user('mia', [])
      assertRefused(await keyed(roleless, '/api/v1/feed-tokens', key, { scope: 'personal' }), 403, created.json().token)
    })
  })
}

void describe('a POST whose replay the idempotency layer could not re-check is refused at registration', () => {
  const bare = () => {
    const app = Fastify()
    registerIdempotency(app, {} as unknown as Kysely<Database>, replayCheckOf)
    return app
  }

  void it('without a policy, or naming the resource of its grant nowhere in its path', async () => {
    const app = bare()
    assert.throws(() => app.post('/api/v1/things', async () => ({})), /declares no policy/)
    assert.throws(
      () => app.post('/api/v1/check-in-tokens', { onRequest: requirePolicy('attendee', 'write') }, async () => ({})),
      /path names no/
    )
    // tenant permission only, the event of the path, a route that claims in its transaction: registered
    app.post('/api/v1/feed-things', { onRequest: requirePolicy('feed', 'create') }, async () => ({}))
    app.post('/api/v1/events/:id/things', { onRequest: requirePolicy('attendee', 'write') }, async () => ({}))
    app.post('/api/v1/claims', { config: { idempotency: 'transaction' } }, async () => ({}))
    await app.close()
  })
})

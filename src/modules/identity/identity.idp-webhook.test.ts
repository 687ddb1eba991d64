import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { idpEvent, idpWebhook, userRow, type SendOptions } from './identity.fixtures.ts'
import { signBody } from './identity.idp-signature.ts'

type Json = Record<string, any>

const SECRET = 'current-webhook-secret'
const PREVIOUS = 'previous-webhook-secret'
const now = (): number => Math.floor(Date.now() / 1000)
const { send, deliver } = idpWebhook(SECRET)

/** The domain events about one user of a tenant, oldest first. */
async function outbox (t: TestApp, tenantId: string, userId: string) {
  return (await outboxEvents(t, tenantId)).filter(e => e.aggregate_type === 'user' && e.aggregate_id === userId)
}

async function deliveries (t: TestApp, tenantId: string) {
  return await withTenant(t.ctx.db, { tenantId }, trx =>
    trx
      .selectFrom('idp_deliveries')
      .select(['aggregate_id', 'sequence', 'event_type', 'outcome'])
      .where('tenant_id', '=', tenantId)
      .orderBy('sequence')
      .execute()
  )
}

function assertProblem (
  res: { statusCode: number; headers: Record<string, unknown>; json: () => any },
  status: number
): Json {
  assert.equal(res.statusCode, status)
  assert.match(String(res.headers['content-type']), /application\/problem\+json/)
  const body = res.json()
  assert.equal(body.status, status)
  assert.equal(typeof body.title, 'string')
  return body
}

const added = (tenantId: string, userId: string, sequence = 1, extra: Json = {}) =>
  idpEvent(tenantId, userId, sequence, 'user.human.added', {
    userName: `${userId}-name`,
    firstName: 'Grace',
    lastName: 'Hopper',
    displayName: 'Grace Hopper',
    email: `${userId}@example.test`,
    preferredLanguage: 'en',
    password: 'never-stored',
    ...extra
  })

const fresh = () => ({ tenantId: `org-${crypto.randomUUID()}`, userId: `u-${crypto.randomUUID()}` })

for (const kind of databases()) {
  void describe(`${kind}: identity-provider webhook`, () => {
    const t = useTestApp(kind, { env: { IDP_WEBHOOK_SECRET: SECRET, IDP_WEBHOOK_SECRET_PREVIOUS: PREVIOUS } })

    void describe('signature', () => {
      void it('accepts a good IDP-Signature without any token or tenant header and applies the event', async () => {
        const { tenantId, userId } = fresh()
        const res = await send(t, added(tenantId, userId))
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(res.json().status, 'applied')
        assert.match(res.json().$schema, /IdpWebhookResult\.json$/)
        const row = await userRow(t, tenantId, userId)
        assert.equal(row?.email, `${userId}@example.test`)
        assert.equal(row?.state, 'active')
      })

      const accepted: Array<[string, SendOptions]> = [
        ['the ZITADEL-Signature header name', { header: 'zitadel-signature' }],
        ['the previous secret while the provider rotates', { secret: PREVIOUS }],
        ['application/octet-stream', { contentType: 'application/octet-stream' }]
      ]
      for (const [name, options] of accepted) {
        void it(`accepts ${name}`, async () => {
          const { tenantId, userId } = fresh()
          assert.equal(await deliver(t, added(tenantId, userId), options), 'applied')
          assert.ok(await userRow(t, tenantId, userId))
        })
      }

      void it('skips a v1 that is not hex and accepts a later matching one', async () => {
        const { tenantId, userId } = fresh()
        const body = added(tenantId, userId)
        const ts = now()
        const good = signBody(SECRET, JSON.stringify(body), ts)
        assert.equal(
          await deliver(t, body, { signature: `t=${ts},v1=not-hex-at-all,${good.split(',')[1] ?? ''}` }),
          'applied'
        )
      })

      const refused: Array<[string, (body: Json) => SendOptions]> = [
        ['a wrong secret', () => ({ secret: 'some-other-secret' })],
        ['a missing header', () => ({ signature: '', header: 'x-unrelated' })],
        ['a malformed header', () => ({ signature: 'garbage' })],
        [
          'a header without t',
          body => ({ signature: `v1=${signBody(SECRET, JSON.stringify(body)).split('v1=')[1] ?? ''}` })
        ],
        ['a non-numeric t', () => ({ signature: 't=yesterday,v1=00' })],
        ['only non-hex v1 values', () => ({ signature: `t=${now()},v1=zz` })],
        ['a t older than 300 s', () => ({ t: now() - 301 })],
        // ten seconds past the tolerance: the service reads the clock later than the test, and one second (301) was
        // crossed by a second boundary between the two under load (the signature was then accepted)
        ['a t more than 300 s ahead', () => ({ t: now() + 310 })],
        [
          'a signature over another timestamp',
          body => ({
            signature: `t=${now() - 5},v1=${signBody(SECRET, JSON.stringify(body), now()).split('v1=')[1] ?? ''}`
          })
        ]
      ]
      for (const [name, options] of refused) {
        void it(`answers 401 for ${name} and changes nothing`, async () => {
          const { tenantId, userId } = fresh()
          const body = added(tenantId, userId)
          const res = await send(t, body, options(body))
          const problem = assertProblem(res, 401)
          assert.equal(typeof problem.detail, 'string')
          assert.equal(await userRow(t, tenantId, userId), undefined)
          assert.deepEqual(await deliveries(t, tenantId), [])
          assert.deepEqual(await outbox(t, tenantId, userId), [])
        })
      }

      void it('answers 401 when one byte of the signed body changed', async () => {
        const { tenantId, userId } = fresh()
        const raw = Buffer.from(JSON.stringify(added(tenantId, userId)))
        const signature = signBody(SECRET, raw)
        const tampered = Buffer.from(raw)
        const at = tampered.indexOf('Grace')
        tampered[at] = 'g'.charCodeAt(0)
        assertProblem(await send(t, tampered, { signature }), 401)
        assert.equal(await userRow(t, tenantId, userId), undefined)
        // the untouched bytes with the same signature pass
        assert.equal((await send(t, raw, { signature })).statusCode, 200)
      })

      void it('checks the signature before parsing: an unsigned invalid body is 401, not 400', async () => {
        assertProblem(await send(t, '{not json', { signature: 'garbage' }), 401)
      })
    })

    void describe('body', () => {
      void it('answers 413 above the body limit and changes nothing', async () => {
        const { tenantId, userId } = fresh()
        const body = added(tenantId, userId, 1, { padding: 'x'.repeat(300 * 1024) })
        assertProblem(await send(t, body), 413)
        assert.equal(await userRow(t, tenantId, userId), undefined)
      })

      void it('answers 400 for invalid JSON that is correctly signed', async () => {
        const problem = assertProblem(await send(t, '{"aggregateID": '), 400)
        assert.equal(problem.errors[0].location, 'body')
      })

      void it('answers 400 naming each malformed field and changes nothing', async () => {
        const { tenantId, userId } = fresh()
        const body: Json = { ...added(tenantId, userId), sequence: 'seven' }
        delete body.instanceID
        const problem = assertProblem(await send(t, body), 400)
        const locations = problem.errors.map((e: Json) => e.location).sort()
        assert.deepEqual(locations, ['body.instanceID', 'body.sequence'])
        assert.equal(await userRow(t, tenantId, userId), undefined)
        assert.deepEqual(await deliveries(t, tenantId), [])
      })

      void it('answers 400 for a profile field of the wrong type in the payload', async () => {
        const { tenantId, userId } = fresh()
        const problem = assertProblem(await send(t, added(tenantId, userId, 1, { firstName: 42 })), 400)
        assert.ok(
          problem.errors.some((e: Json) => e.location === 'body.event_payload.firstName'),
          JSON.stringify(problem)
        )
        assert.equal(await userRow(t, tenantId, userId), undefined)
      })

      void it('reads a base64 event_payload (older releases) like an object one', async () => {
        const { tenantId, userId } = fresh()
        const payload = Buffer.from(
          JSON.stringify({ userName: 'ada', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.test' })
        ).toString('base64')
        assert.equal(await deliver(t, idpEvent(tenantId, userId, 1, 'user.human.added', payload)), 'applied')
        const row = await userRow(t, tenantId, userId)
        assert.equal(row?.username, 'ada')
        assert.equal(row?.first_name, 'Ada')
        assert.equal(row?.last_name, 'Lovelace')
        assert.equal(row?.email, 'ada@example.test')
        assert.equal(row?.display_name, null)
      })

      void it('answers 400 at body.event_payload for a string that is not base64 JSON', async () => {
        const { tenantId, userId } = fresh()
        for (const payload of [
          '%%% not base64',
          Buffer.from('not json').toString('base64'),
          Buffer.from('[1,2]').toString('base64')
        ]) {
          const problem = assertProblem(
            await send(t, idpEvent(tenantId, userId, 1, 'user.human.added', payload)),
            400
          )
          assert.equal(problem.errors[0].location, 'body.event_payload')
        }
        assert.equal(await userRow(t, tenantId, userId), undefined)
      })

      void it('keeps only the profile fields used, never the payload itself', async () => {
        const { tenantId, userId } = fresh()
        await deliver(t, added(tenantId, userId))
        const [event] = await outbox(t, tenantId, userId)
        assert.ok(event)
        assert.doesNotMatch(JSON.stringify(event), /never-stored|preferredLanguage/)
        const rows = await deliveries(t, tenantId)
        assert.doesNotMatch(JSON.stringify(rows), /never-stored/)
      })
    })

    void describe('deliveries', () => {
      void it('answers a replayed delivery 200 "duplicate" and applies it once', async () => {
        const { tenantId, userId } = fresh()
        const body = added(tenantId, userId)
        assert.equal(await deliver(t, body), 'applied')
        assert.equal(await deliver(t, body), 'duplicate')
        assert.equal((await outbox(t, tenantId, userId)).length, 1)
        assert.equal((await deliveries(t, tenantId)).length, 1)
      })

      void it('applies 20 concurrent copies of one delivery once', async () => {
        const { tenantId, userId } = fresh()
        const raw = Buffer.from(JSON.stringify(added(tenantId, userId, 7)))
        const signature = signBody(SECRET, raw)
        const results = await Promise.all(Array.from({ length: 20 }, async () => await send(t, raw, { signature })))
        assert.deepEqual(results.map(r => r.statusCode), Array(20).fill(200))
        const statuses = results.map(r => r.json().status).sort()
        assert.deepEqual(statuses, ['applied', ...Array(19).fill('duplicate')])
        const events = await outbox(t, tenantId, userId)
        assert.deepEqual(events.map(e => e.topic), ['user.added'])
        assert.deepEqual((await deliveries(t, tenantId)).map(d => [d.sequence, d.outcome]), [[7, 'applied']])
      })

      void it('changes nothing for an event older than the last applied one of the user', async () => {
        const { tenantId, userId } = fresh()
        await deliver(t, added(tenantId, userId, 1))
        assert.equal(
          await deliver(t, idpEvent(tenantId, userId, 5, 'user.human.profile.changed', { firstName: 'Newest' })),
          'applied'
        )
        assert.equal(
          await deliver(t, idpEvent(tenantId, userId, 3, 'user.human.profile.changed', { firstName: 'Older' })),
          'stale'
        )
        assert.equal(await deliver(t, idpEvent(tenantId, userId, 4, 'user.deactivated')), 'stale')
        const row = await userRow(t, tenantId, userId)
        assert.equal(row?.first_name, 'Newest')
        assert.equal(row?.state, 'active')
        assert.equal(row?.idp_sequence, 5)
        assert.deepEqual((await outbox(t, tenantId, userId)).map(e => e.topic), ['user.added', 'user.changed'])
        assert.deepEqual(
          (await deliveries(t, tenantId)).map(d => [d.sequence, d.outcome]),
          [
            [1, 'applied'],
            [3, 'stale'],
            [4, 'stale'],
            [5, 'applied']
          ]
        )
      })

      void it('keeps a deactivation that arrived before the user was added', async () => {
        const { tenantId, userId } = fresh()
        assert.equal(await deliver(t, idpEvent(tenantId, userId, 2, 'user.deactivated')), 'applied')
        assert.equal(await deliver(t, added(tenantId, userId, 1)), 'stale')
        assert.equal((await userRow(t, tenantId, userId))?.state, 'inactive')
      })

      void it('records an unknown kind, answers "ignored", and changes nothing', async () => {
        const { tenantId, userId } = fresh()
        assert.equal(
          await deliver(t, idpEvent(tenantId, userId, 5, 'user.human.password.changed', { secret: 'x' })),
          'ignored'
        )
        assert.equal(
          await deliver(t, { ...idpEvent(tenantId, userId, 6, 'org.added'), aggregateType: 'org' }),
          'ignored'
        )
        assert.equal(await userRow(t, tenantId, userId), undefined)
        assert.deepEqual(await outbox(t, tenantId, userId), [])
        assert.deepEqual(
          (await deliveries(t, tenantId)).map(d => [d.event_type, d.outcome]),
          [
            ['user.human.password.changed', 'ignored'],
            ['org.added', 'ignored']
          ]
        )
        // an unknown kind does not move the user's sequence
        assert.equal(await deliver(t, added(tenantId, userId, 3)), 'applied')
      })

      void it('provisions an unseen tenant on its first user', async () => {
        const tenantId = `org-${crypto.randomUUID()}`
        assert.equal(await deliver(t, added(tenantId, 'first-user')), 'applied')
        assert.equal((await userRow(t, tenantId, 'first-user'))?.tenant_id, tenantId)
      })
    })

    void describe('event kinds', () => {
      void it('user.human.added creates the profile; selfregistered and machine.added too', async () => {
        const { tenantId, userId } = fresh()
        await deliver(t, added(tenantId, userId))
        const row = await userRow(t, tenantId, userId)
        assert.deepEqual(
          {
            email: row?.email,
            display_name: row?.display_name,
            first_name: row?.first_name,
            last_name: row?.last_name,
            username: row?.username,
            state: row?.state
          },
          {
            email: `${userId}@example.test`,
            display_name: 'Grace Hopper',
            first_name: 'Grace',
            last_name: 'Hopper',
            username: `${userId}-name`,
            state: 'active'
          }
        )
        const [event] = await outbox(t, tenantId, userId)
        assert.equal(event?.topic, 'user.added')
        assert.equal(event?.actor_id, 'actor-1')
        assert.equal(event?.payload.email, `${userId}@example.test`)

        await deliver(
          t,
          idpEvent(tenantId, 'self', 1, 'user.human.selfregistered', {
            userName: 'self',
            email: 'self@example.test'
          })
        )
        assert.equal((await userRow(t, tenantId, 'self'))?.email, 'self@example.test')

        await deliver(
          t,
          idpEvent(tenantId, 'robot', 1, 'user.machine.added', {
            userName: 'robot',
            name: 'Build Robot',
            description: 'CI'
          })
        )
        const robot = await userRow(t, tenantId, 'robot')
        assert.equal(robot?.display_name, 'Build Robot')
        assert.equal(robot?.username, 'robot')
      })

      void it('profile, e-mail and username changes update only the fields they carry', async () => {
        const { tenantId, userId } = fresh()
        await deliver(t, added(tenantId, userId))
        await deliver(t, idpEvent(tenantId, userId, 2, 'user.human.email.changed', { email: 'new@example.test' }))
        await deliver(t, idpEvent(tenantId, userId, 3, 'user.human.profile.changed', { lastName: 'Murray' }))
        await deliver(t, idpEvent(tenantId, userId, 4, 'user.username.changed', { userName: 'gmh' }))
        const row = await userRow(t, tenantId, userId)
        assert.deepEqual(
          [row?.email, row?.first_name, row?.last_name, row?.display_name, row?.username],
          ['new@example.test', 'Grace', 'Murray', 'Grace Hopper', 'gmh']
        )
        const events = await outbox(t, tenantId, userId)
        assert.deepEqual(events.map(e => e.topic), ['user.added', 'user.changed', 'user.changed', 'user.changed'])
        assert.deepEqual(events.map(e => e.payload.fields).slice(1), [['email'], ['last_name'], ['username']])
      })

      void it('deactivated and locked mark the user inactive; reactivated and unlocked active again', async () => {
        const { tenantId, userId } = fresh()
        await deliver(t, added(tenantId, userId))
        const steps: Array<[string, string]> = [
          ['user.deactivated', 'inactive'],
          ['user.reactivated', 'active'],
          ['user.locked', 'inactive'],
          ['user.unlocked', 'active']
        ]
        let seq = 1
        for (const [type, state] of steps) {
          assert.equal(await deliver(t, idpEvent(tenantId, userId, ++seq, type)), 'applied')
          assert.equal((await userRow(t, tenantId, userId))?.state, state, type)
        }
        assert.deepEqual(
          (await outbox(t, tenantId, userId)).map(e => e.topic),
          ['user.added', 'user.deactivated', 'user.reactivated', 'user.deactivated', 'user.reactivated']
        )
      })

      void it('user.removed marks the user removed, revokes manager roles and invites, ' +
        'keeps their contacts', async () => {
        const tenant = newTenant(t, `org-${crypto.randomUUID()}`)
        const userId = `u-${crypto.randomUUID()}`
        await deliver(t, added(tenant.id, userId, 1, { email: 'Grace@Example.test' }))
        const token = await tenant.user(userId, ['member'])
        const contact = await t.as(token, {
          method: 'POST',
          url: '/api/v1/contacts',
          payload: { first_name: 'Kept', email: 'kept@example.test' }
        })
        assert.equal(contact.statusCode, 201, contact.body)

        await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
          const space = await trx
            .insertInto('spaces')
            .values({ tenant_id: tenant.id, creator_id: 'owner', title: 'S' })
            .returning('id')
            .executeTakeFirstOrThrow()
          const rows = await trx
            .insertInto('space_managers')
            .values([
              { tenant_id: tenant.id, space_id: space.id, user_id: userId, status: 'active' },
              {
                tenant_id: tenant.id,
                space_id: space.id,
                user_id: null,
                invited_email: 'grace@example.TEST',
                status: 'pending'
              },
              { tenant_id: tenant.id, space_id: space.id, user_id: 'someone-else', status: 'active' }
            ])
            .returning('id')
            .execute()
          const event = await trx
            .insertInto('events')
            .values({ tenant_id: tenant.id, creator_id: 'owner', title: 'E' })
            .returning('id')
            .executeTakeFirstOrThrow()
          await trx
            .insertInto('event_managers')
            .values([
              { tenant_id: tenant.id, event_id: event.id, user_id: userId, status: 'active' },
              {
                tenant_id: tenant.id,
                event_id: event.id,
                user_id: null,
                invited_email: 'GRACE@example.test',
                status: 'pending'
              },
              { tenant_id: tenant.id, event_id: event.id, user_id: 'someone-else', status: 'active' }
            ])
            .execute()
          assert.equal(rows.length, 3)
        })

        assert.equal(await deliver(t, idpEvent(tenant.id, userId, 2, 'user.removed')), 'applied')
        const row = await userRow(t, tenant.id, userId)
        assert.equal(row?.state, 'removed')
        assert.ok(row?.removed_at instanceof Date)
        assert.equal(row?.email, 'Grace@Example.test')

        const after = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => ({
          managers: await trx
            .selectFrom('space_managers')
            .select(['id', 'status'])
            .where('tenant_id', '=', tenant.id)
            .orderBy('id')
            .execute(),
          contacts: await trx
            .selectFrom('contacts')
            .select(['id', 'owner_id'])
            .where('tenant_id', '=', tenant.id)
            .execute(),
          events: await trx
            .selectFrom('event_managers')
            .select(['id', 'status'])
            .where('tenant_id', '=', tenant.id)
            .orderBy('id')
            .execute()
        }))
        assert.deepEqual(
          after.managers.map(m => m.status),
          ['revoked', 'revoked', 'active']
        )
        assert.deepEqual(
          after.contacts.map(c => c.owner_id),
          [userId]
        )
        assert.deepEqual(
          after.events.map(m => m.status),
          ['revoked', 'revoked', 'active']
        )

        const events = await outbox(t, tenant.id, userId)
        assert.equal(events.at(-1)?.topic, 'user.removed')
        assert.deepEqual((events.at(-1)?.payload as Json | undefined)?.revoked, {
          space_managers: 2,
          event_managers: 2,
          space_members: 0
        })

        // removed is final
        assert.equal(await deliver(t, idpEvent(tenant.id, userId, 3, 'user.reactivated')), 'ignored')
        assert.equal((await userRow(t, tenant.id, userId))?.state, 'removed')
      })
    })

    void describe('user gate', () => {
      /** A user the identity provider added, and a token of theirs the app lets in. */
      async function addedUser () {
        const tenant = newTenant(t, `org-${crypto.randomUUID()}`)
        const userId = `u-${crypto.randomUUID()}`
        const token = await tenant.user(userId)
        await deliver(t, added(tenant.id, userId))
        assert.equal((await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })).statusCode, 200)
        return { tenant, userId, token }
      }

      void it('refuses the token of a removed user with 401 right after the webhook', async () => {
        const { tenant, userId, token } = await addedUser()
        await deliver(t, idpEvent(tenant.id, userId, 2, 'user.removed'))
        const res = await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })
        assertProblem(res, 401)
        assert.equal((await t.as(token, { method: 'GET', url: '/api/v1/contacts' })).statusCode, 401)
      })

      void it('refuses an inactive user and lets them in again when reactivated', async () => {
        const { tenant, userId, token } = await addedUser()
        await deliver(t, idpEvent(tenant.id, userId, 2, 'user.locked'))
        assertProblem(await t.as(token, { method: 'GET', url: '/api/v1/auth/me' }), 401)
        await deliver(t, idpEvent(tenant.id, userId, 3, 'user.unlocked'))
        assert.equal((await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })).statusCode, 200)
      })

      void it('lets in a user the users table does not know', async () => {
        const token = await newTenant(t).user('dev-user')
        const res = await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })
        assert.equal(res.statusCode, 200)
        assert.equal(res.json().email, 'dev-user@example.test')
      })

      void it('GET /auth/me takes the e-mail from the profile when the token has none', async () => {
        const { tenantId, userId } = fresh()
        await deliver(t, added(tenantId, userId))
        const token = await t.token({ sub: userId, tenant: tenantId, roles: ['member'] })
        const res = await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })
        assert.equal(res.statusCode, 200)
        assert.equal(res.json().email, `${userId}@example.test`)
        const stranger = await t.token({ sub: 'nobody', tenant: tenantId, roles: ['member'] })
        assert.equal((await t.as(stranger, { method: 'GET', url: '/api/v1/auth/me' })).json().email, '')
      })

      void it('leaves JSON parsing of other routes alone', async () => {
        const token = await newTenant(t).user('alice')
        const res = await t.as(token, {
          method: 'POST',
          url: '/api/v1/contacts',
          payload: { first_name: 'Still JSON' }
        })
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.json().first_name, 'Still JSON')
      })
    })
  })

  void describe(`${kind}: identity-provider webhook without a secret`, () => {
    const t = useTestApp(kind)
    void it('answers 503 with the error body and changes nothing', async () => {
      const { tenantId, userId } = fresh()
      const res = await send(t, added(tenantId, userId))
      assertProblem(res, 503)
      assert.equal(await userRow(t, tenantId, userId), undefined)
    })
  })
}

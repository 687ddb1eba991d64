import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { Writable } from 'node:stream'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { problemIssues } from '../../../test/helpers/problem.ts'
import { permissionsOf } from '../../platform/auth/permissions.ts'
import { withSystem, withTenant } from '../../platform/db/tenant.ts'
import { drain, eventRule, executions } from '../automation/automation.fixtures.ts'
import { asTheyAreNow } from '../disclosure/index.ts'
import { API_KEY_PATTERN, base62, checksumOf, hashKey, newApiKey } from './api-keys.format.ts'

type Json = Record<string, any>

/** An admin's new service account of `role` (and scopes), and a key of it. */
async function accountWithKey (
  t: TestApp, admin: string, role: string, scopes?: string[] | null, keyBody: Json = {}
): Promise<{ account: Json, key: Json }> {
  const account = (await expectStatus(t, admin, 'POST', '/api/v1/service-accounts', 201, {
    name: `robot ${crypto.randomUUID()}`, role, ...(scopes !== undefined ? { scopes } : {})
  })).json()
  const key = (await expectStatus(t, admin, 'POST', `/api/v1/service-accounts/${account.id}/keys`, 201, keyBody)).json()
  return { account, key }
}

/** A request with a key that must be refused: 401, an ErrorModel with `detail`, WWW-Authenticate: Bearer. */
async function refused (t: TestApp, secret: string, detail: string, url = '/api/v1/contacts'): Promise<void> {
  const res = await t.as(secret, { method: 'GET', url })
  assert.equal(res.statusCode, 401, res.body)
  assert.deepEqual(problemIssues(res), [])
  assert.equal(res.json().detail, detail)
  assert.match(String(res.headers['www-authenticate']), /^Bearer/)
}

/** The stored row of a key, read on the system login. */
const keyRow = async (t: TestApp, id: number) => await withSystem(t.ctx.db, trx =>
  trx.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow())

/** Moves a key's expiry into the past, as the passing of time would, and drops this process's trust in it. */
async function expire (t: TestApp, tenantId: string, id: number): Promise<void> {
  await withSystem(t.ctx.db, trx => trx.updateTable('api_keys').set({ expires_at: new Date(Date.now() - 1000) })
    .where('tenant_id', '=', tenantId).where('id', '=', id).execute())
  // what another process sees within CACHE_MS
  t.ctx.engines.apiKeys.forgetKey(tenantId, id)
}

/** The reader a thing stored as made by account `id` with `role` acts as now (the outbound rule's `asTheyAreNow`). */
async function asTheyAreNowOf (t: TestApp, tenantId: string, id: number, role: 'admin' | 'member' | 'viewer') {
  return await withTenant(t.ctx.db, { tenantId }, async trx => await asTheyAreNow(trx, {
    userId: `sa_${id}`,
    tenantId,
    email: null,
    orgId: null,
    roles: [role],
    effectiveRole: role,
    permissions: new Set(permissionsOf([role])),
    exp: 0
  }))
}

const auditRows = async (t: TestApp, tenantId: string) => await withSystem(t.ctx.db, trx =>
  trx.selectFrom('audit_log').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute())

describe('API key format', () => {
  it('is cbk_, 40 base62 characters and a 6-character base62 CRC32 of them', () => {
    for (let i = 0; i < 50; i++) {
      const { key, prefix, hash } = newApiKey()
      assert.match(key, API_KEY_PATTERN)
      assert.match(key, /^cbk_[0-9A-Za-z]{40}[0-9A-Za-z]{6}$/)
      assert.equal(key.slice(44), checksumOf(key.slice(4, 44)))
      assert.equal(prefix, key.slice(0, 16))
      assert.equal(hash, crypto.createHash('sha256').update(key).digest('hex'))
    }
    // known values (computed apart, with Python's zlib.crc32): CRC32 0x963FBB8E of forty zeros; a short one padded
    assert.equal(checksumOf('0'.repeat(40)), '2kaqcA')
    assert.equal(checksumOf('1'), '2PiYsh')
    assert.equal(base62(61, 6), '00000z')
  })
})

for (const kind of databases()) {
  describe(`${kind}: service accounts and API keys`, () => {
    const t = useTestApp(kind)

    it('lets a key call the API as its account: reads, and writes seen by a later read', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key } = await accountWithKey(t, admin, 'member')
      assert.match(key.secret, API_KEY_PATTERN)
      assert.equal(key.prefix, key.secret.slice(0, 16))
      assert.equal(key.status, 'active')
      assert.equal(account.user_id, `sa_${account.id}`)
      const days = (Date.parse(key.expires_at) - Date.now()) / 86_400_000
      assert.ok(days > 89.9 && days <= 90, `default lifetime 90 days, got ${days}`)

      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)
      const created = (await expectStatus(t, key.secret, 'POST', '/api/v1/contacts', 201, {
        first_name: 'Made', last_name: 'By a machine'
      })).json()
      assert.equal(created.owner_id, `sa_${account.id}`)
      const read = await getJson(t, key.secret, `/api/v1/contacts/${created.id}`)
      assert.equal(read.first_name, 'Made')
      // a personal contact is its owner's alone (docs/contacts.md): the account lists it, the admin does not
      const listed = (await getJson(t, key.secret, '/api/v1/contacts')).items as Json[]
      assert.deepEqual(listed.map(c => [c.id, c.last_name]), [[created.id, 'By a machine']])

      // the user gate (identity) lets the account in; /auth/me says who it is
      const me = await getJson(t, key.secret, '/api/v1/auth/me')
      assert.equal(me.user_id, `sa_${account.id}`)
      assert.equal(me.tenant_id, tenant.id)
      assert.deepEqual(me.roles, ['member'])
      assert.ok(!me.permissions.includes('tenant:admin'))
    })

    it('limits a key to its role and scopes: a viewer cannot write, contacts:read cannot read events', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const viewer = (await accountWithKey(t, admin, 'viewer')).key.secret
      await expectStatus(t, viewer, 'GET', '/api/v1/contacts', 200)
      const write = await expectStatus(t, viewer, 'POST', '/api/v1/contacts', 403, { first_name: 'No' })
      assert.equal(write.json().detail, 'missing permission contacts:write')

      const scoped = (await accountWithKey(t, admin, 'admin', ['contacts:read'])).key.secret
      await expectStatus(t, scoped, 'GET', '/api/v1/contacts', 200)
      await expectStatus(t, scoped, 'GET', '/api/v1/events', 403)
      await expectStatus(t, scoped, 'POST', '/api/v1/contacts', 403, { first_name: 'No' })
      // an admin account's key limited by scopes is no tenant admin
      await expectStatus(t, scoped, 'GET', '/api/v1/service-accounts', 403)
      assert.deepEqual((await getJson(t, scoped, '/api/v1/auth/me')).permissions, ['contacts:read'])
    })

    it('refuses unknown scopes and scopes the role does not grant, naming body.scopes[i]', async () => {
      const admin = await newTenant(t).user('root', ['admin'])
      const cases: Array<[string, string[], number, string]> = [
        ['member', ['contacts:read', 'contacts:delete'], 1, 'contacts:delete'],
        ['viewer', ['contacts:read', 'events:read', 'contacts:write'], 2, 'contacts:write'],
        ['member', ['scim'], 0, 'scim'],
        ['member', ['tenant:admin'], 0, 'tenant:admin']
      ]
      for (const [role, scopes, index, bad] of cases) {
        const res = await expectStatus(t, admin, 'POST', '/api/v1/service-accounts', 400, { name: 'x', role, scopes })
        assert.deepEqual(problemIssues(res), [])
        const errors = res.json().errors as Json[]
        assert.ok(errors.some(e => e.location === `body.scopes[${index}]`), `${bad}: ${res.body}`)
      }
      const list = await getJson(t, admin, '/api/v1/service-accounts')
      assert.equal(list.total, 0, 'nothing was created')
      // scim is named explicitly, with role admin
      const scim = (await expectStatus(t, admin, 'POST', '/api/v1/service-accounts', 201, {
        name: 'directory', role: 'admin', scopes: ['scim']
      })).json()
      assert.deepEqual(scim.scopes, ['scim'])
      // a role lowered under scopes it no longer grants
      const acct = (await expectStatus(t, admin, 'POST', '/api/v1/service-accounts', 201, {
        name: 'writer', role: 'member', scopes: ['contacts:write']
      })).json()
      const lowered = await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${acct.id}`, 400, {
        role: 'viewer'
      })
      assert.equal(lowered.json().errors[0].location, 'body.role')
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${acct.id}`, 200, {
        role: 'viewer', scopes: ['contacts:read']
      })
    })

    it('lets only tenant admins manage accounts and keys', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const member = await tenant.user('alice', ['member'])
      const viewer = await tenant.user('vic', ['viewer'])
      const { account, key } = await accountWithKey(t, admin, 'member')
      for (const who of [member, viewer]) {
        await expectStatus(t, who, 'POST', '/api/v1/service-accounts', 403, { name: 'mine', role: 'member' })
        await expectStatus(t, who, 'GET', '/api/v1/service-accounts', 403)
        await expectStatus(t, who, 'POST', `/api/v1/service-accounts/${account.id}/keys`, 403, {})
        await expectStatus(t, who, 'DELETE', `/api/v1/service-accounts/${account.id}/keys/${key.id}`, 403)
      }
      // a member's key cannot either
      await expectStatus(t, key.secret, 'POST', '/api/v1/service-accounts', 403, { name: 'mine', role: 'member' })
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)
    })

    it('never returns a secret after creation, and stores only its SHA-256', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key } = await accountWithKey(t, admin, 'viewer', null, { expires_in_days: 7 })
      const days = (Date.parse(key.expires_at) - Date.now()) / 86_400_000
      assert.ok(days > 6.9 && days <= 7)
      for (const url of ['/api/v1/service-accounts', `/api/v1/service-accounts/${account.id}`,
        `/api/v1/service-accounts/${account.id}/keys`]) {
        const res = await expectStatus(t, admin, 'GET', url, 200)
        assert.ok(!res.body.includes(key.secret), url)
        assert.ok(!res.body.includes(key.secret.slice(16)), url)
        assert.ok(!res.body.includes('secret'), url)
      }
      const listed = (await getJson(t, admin, `/api/v1/service-accounts/${account.id}/keys`)).items as Json[]
      assert.deepEqual(listed.map(k => [k.id, k.prefix, k.status]), [[key.id, key.prefix, 'active']])

      const row = await keyRow(t, key.id)
      assert.equal(row.secret_hash, crypto.createHash('sha256').update(key.secret).digest('hex'))
      assert.equal(row.prefix, key.secret.slice(0, 16))
      assert.equal(row.tenant_id, tenant.id)
      assert.ok(!JSON.stringify(row).includes(key.secret.slice(16)), 'no column holds the key')
      // nor does the idempotency store: the routes answering a key refuse Idempotency-Key
      const keyed = await t.as(admin, {
        method: 'POST',
        url: `/api/v1/service-accounts/${account.id}/keys`,
        headers: { 'idempotency-key': 'k1' },
        payload: {}
      })
      assert.equal(keyed.statusCode, 400, keyed.body)
      assert.equal(keyed.json().errors[0].location, 'header.idempotency-key')
      assert.equal((await getJson(t, admin, `/api/v1/service-accounts/${account.id}/keys`)).total, 1)
    })

    it('refuses malformed, unknown, expired, revoked keys and disabled or deleted accounts with 401', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key } = await accountWithKey(t, admin, 'member')
      const random = key.secret.slice(4, 44)
      const flipped = `${random.slice(0, -1)}${random.endsWith('a') ? 'b' : 'a'}`
      const sum = key.secret.slice(44)
      await refused(t, `${key.secret.slice(0, 44)}${sum[0] === '0' ? '1' : '0'}${sum.slice(1)}`,
        'malformed API key (checksum)')
      await refused(t, 'cbk_short', 'malformed API key')
      await refused(t, `cbk_${flipped}${checksumOf(flipped)}`, 'unknown API key')
      // well formed, the lookup id of a real key, another secret
      const other = `${key.secret.slice(4, 16)}${'Z'.repeat(28)}`
      await refused(t, `cbk_${other}${checksumOf(other)}`, 'unknown API key')
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)

      // disabled, then enabled again: refused at once, accepted at once (this process)
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: true })
      await refused(t, key.secret, 'service account disabled')
      const enabled = await getJson(t, admin, `/api/v1/service-accounts/${account.id}`)
      assert.equal(enabled.disabled, true)
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: false })
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)

      // expired (its expiry moved into the past in the database)
      const { key: old } = await accountWithKey(t, admin, 'member')
      await expectStatus(t, old.secret, 'GET', '/api/v1/contacts', 200)
      await expire(t, tenant.id, old.id)
      await refused(t, old.secret, 'API key expired')
      const listed = (await getJson(t, admin, `/api/v1/service-accounts/${old.service_account_id}/keys`)).items
      assert.equal(listed[0].status, 'expired')

      // revoked: refused at once, in this process's very next request
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${account.id}/keys/${key.id}`, 204)
      await refused(t, key.secret, 'API key revoked')
      const revoked = (await getJson(t, admin, `/api/v1/service-accounts/${account.id}/keys`)).items[0]
      assert.equal(revoked.status, 'revoked')
      assert.ok(revoked.revoked_at !== null)
      // again: nothing more to do
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${account.id}/keys/${key.id}`, 204)

      // a deleted account: gone from the API, every key of it revoked
      const { account: gone, key: goneKey } = await accountWithKey(t, admin, 'viewer')
      await expectStatus(t, goneKey.secret, 'GET', '/api/v1/contacts', 200)
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${gone.id}`, 204)
      await refused(t, goneKey.secret, 'API key revoked')
      await expectStatus(t, admin, 'GET', `/api/v1/service-accounts/${gone.id}`, 404)
      await expectStatus(t, admin, 'GET', `/api/v1/service-accounts/${gone.id}/keys`, 404)
      assert.ok((await keyRow(t, goneKey.id)).revoked_at !== null)
    })

    it('stops what a key made (a feed token, an automation rule) once its account is disabled or deleted, and ' +
      'on again once it is enabled', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key } = await accountWithKey(t, admin, 'member')
      const event = (await expectStatus(t, key.secret, 'POST', '/api/v1/events', 201, {
        title: 'Robot made', start_dt: new Date(Date.now() + 7 * 86_400_000).toISOString()
      })).json()
      await expectStatus(t, key.secret, 'POST', `/api/v1/events/${event.id}/publish`, 204)
      const token = (await expectStatus(t, key.secret, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' }))
        .json()
      const feed = async () => await t.app.inject({ method: 'GET', url: token.url.replace(/^https?:\/\/[^/]+/, '') })
      const before = await feed()
      assert.equal(before.statusCode, 200, before.body)
      assert.match(before.body, /SUMMARY:Robot made/)
      const rule = await eventRule(t, key.secret, event.id, { actions: [{ type: 'activity', message: 'ran' }] })

      // disabled: the feed answers as for a revoked token, the rule's next run fails and disables it
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: true })
      assert.equal((await feed()).statusCode, 404)
      await expectStatus(t, admin, 'PATCH', `/api/v1/events/${event.id}`, 200, { description: 'edited by the admin' })
      await drain(t.ctx.engines.automation)
      const got = await getJson(t, admin, `/api/v1/automation/rules/${rule.id}`)
      assert.equal(got.enabled, false)
      assert.match(got.disabled_reason, new RegExp(`creator sa_${account.id} was disabled`))
      const [ran] = await executions(t, admin, rule.id)
      assert.equal(ran?.status, 'failed')

      // enabled again: the feed is back; deleted: gone for good
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: false })
      assert.equal((await feed()).statusCode, 200)
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${account.id}`, 204)
      assert.equal((await feed()).statusCode, 404)
    })

    it('reads what a key made as its account is now: its role and scopes now, nothing once disabled', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account } = await accountWithKey(t, admin, 'admin')
      const reader = await asTheyAreNowOf(t, tenant.id, account.id, 'admin')
      assert.equal(reader.effectiveRole, 'admin')
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, {
        role: 'viewer', scopes: ['events:read']
      })
      const lowered = await asTheyAreNowOf(t, tenant.id, account.id, 'admin')
      assert.equal(lowered.effectiveRole, 'viewer')
      assert.deepEqual([...lowered.permissions], ['events:read'])
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { disabled: true })
      const off = await asTheyAreNowOf(t, tenant.id, account.id, 'admin')
      assert.equal(off.effectiveRole, 'none')
      assert.equal(off.permissions.size, 0)
    })

    it('rotates a key: both work during the overlap, the old one is refused after it', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key: old } = await accountWithKey(t, admin, 'member')
      await expectStatus(t, old.secret, 'GET', '/api/v1/contacts', 200)
      const rotated = (await expectStatus(t, admin, 'POST',
        `/api/v1/service-accounts/${account.id}/keys/${old.id}/rotate`, 201, {})).json()
      assert.notEqual(rotated.secret, old.secret)
      assert.equal(rotated.rotated_from, old.id)
      await expectStatus(t, old.secret, 'GET', '/api/v1/contacts', 200)
      await expectStatus(t, rotated.secret, 'GET', '/api/v1/contacts', 200)
      const byId = new Map(((await getJson(t, admin, `/api/v1/service-accounts/${account.id}/keys`)).items as Json[])
        .map(k => [k.id, k]))
      const was = byId.get(old.id)
      assert.equal(was?.replaced_by, rotated.id)
      const overlap = (Date.parse(was?.expires_at) - Date.now()) / 3_600_000
      assert.ok(overlap > 23.9 && overlap <= 24, `default overlap 24 h, got ${overlap}`)
      // a key rotated once is not rotated again
      await expectStatus(t, admin, 'POST', `/api/v1/service-accounts/${account.id}/keys/${old.id}/rotate`, 409, {})

      // the overlap ends (its end moved into the past): the old key is refused, the new one goes on
      await expire(t, tenant.id, old.id)
      await refused(t, old.secret, 'API key expired (replaced by a rotation)')
      await expectStatus(t, rotated.secret, 'GET', '/api/v1/contacts', 200)

      // no overlap: the old key is refused at once
      const now = (await expectStatus(t, admin, 'POST',
        `/api/v1/service-accounts/${account.id}/keys/${rotated.id}/rotate`, 201, { overlap_hours: 0 })).json()
      await refused(t, rotated.secret, 'API key expired (replaced by a rotation)')
      await expectStatus(t, now.secret, 'GET', '/api/v1/contacts', 200)
      // the bounds of the body
      for (const body of [{ overlap_hours: 721 }, { overlap_hours: -1 }, { expires_in_days: 366 }]) {
        await expectStatus(t, admin, 'POST', `/api/v1/service-accounts/${account.id}/keys/${now.id}/rotate`, 400, body)
      }
      await expectStatus(t, admin, 'POST', `/api/v1/service-accounts/${account.id}/keys`, 400, { expires_in_days: 0 })
    })

    it('shows another tenant\'s admin nothing of the accounts and keys, and lets them change nothing', async () => {
      const a = newTenant(t)
      const adminA = await a.user('root', ['admin'])
      const adminB = await newTenant(t).user('root', ['admin'])
      const { account, key } = await accountWithKey(t, adminA, 'member')
      const base = `/api/v1/service-accounts/${account.id}`
      for (const [method, url, body] of [
        ['GET', base, undefined], ['GET', `${base}/keys`, undefined], ['PATCH', base, { disabled: true }],
        ['POST', `${base}/keys`, {}], ['POST', `${base}/keys/${key.id}/rotate`, {}],
        ['DELETE', `${base}/keys/${key.id}`, undefined], ['DELETE', base, undefined]
      ] as const) {
        await expectStatus(t, adminB, method, url, 404, body)
      }
      assert.equal((await getJson(t, adminB, '/api/v1/service-accounts')).total, 0)
      // and the key of tenant A reads tenant A only
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)
      const keys = (await getJson(t, adminA, `${base}/keys`)).items as Json[]
      assert.deepEqual(keys.map(k => [k.status, k.replaced_by]), [['active', null]])
    })

    it('records a key\'s last use (at most once a minute), and counts its requests in a bucket of its own',
      async () => {
        const tenant = newTenant(t)
        const admin = await tenant.user('root', ['admin'])
        const { account, key } = await accountWithKey(t, admin, 'viewer')
        const keysUrl = `/api/v1/service-accounts/${account.id}/keys`
        assert.equal((await getJson(t, admin, keysUrl)).items[0].last_used_at, null)
        const first = await t.app.inject({
          method: 'GET',
          url: '/api/v1/contacts',
          headers: { authorization: `Bearer ${key.secret}` },
          remoteAddress: '203.0.113.7'
        })
        assert.equal(first.statusCode, 200)
        const used = (await getJson(t, admin, keysUrl)).items[0]
        assert.ok(used.last_used_at !== null && Math.abs(Date.parse(used.last_used_at) - Date.now()) < 60_000)
        assert.equal(used.last_used_address, '203.0.113.7')
        // within the minute: not written again
        await t.app.inject({
          method: 'GET',
          url: '/api/v1/contacts',
          headers: { authorization: `Bearer ${key.secret}` },
          remoteAddress: '203.0.113.8'
        })
        const again = (await getJson(t, admin, keysUrl)).items[0]
        assert.deepEqual([again.last_used_at, again.last_used_address], [used.last_used_at, used.last_used_address])

        // each key its own bucket: a second key of the same account starts full
        const second = (await expectStatus(t, admin, 'POST', keysUrl, 201, {})).json()
        const remaining = async (secret: string) =>
          Number((await expectStatus(t, secret, 'GET', '/api/v1/contacts', 200)).headers['ratelimit-remaining'])
        const a1 = await remaining(key.secret)
        const b1 = await remaining(second.secret)
        const a2 = await remaining(key.secret)
        assert.equal(a2, a1 - 1)
        assert.ok(b1 > a1, `the second key's bucket (${b1}) is not the first's (${a1})`)
      })

    it('audits every change of accounts and keys, and every request made with a key', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key } = await accountWithKey(t, admin, 'member')
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)
      await expectStatus(t, key.secret, 'GET', '/api/v1/events', 200)
      await expectStatus(t, key.secret, 'POST', '/api/v1/service-accounts', 403, { name: 'x', role: 'viewer' })
      const rotated = (await expectStatus(t, admin, 'POST',
        `/api/v1/service-accounts/${account.id}/keys/${key.id}/rotate`, 201, { overlap_hours: 1 })).json()
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${account.id}/keys/${rotated.id}`, 204)
      await expectStatus(t, admin, 'PATCH', `/api/v1/service-accounts/${account.id}`, 200, { name: 'renamed' })

      // uses are written at most a second after their response, without being asked
      await new Promise(resolve => setTimeout(resolve, 1500))
      const rows = await auditRows(t, tenant.id)
      const uses = rows.filter(r => r.action === 'api_key.used')
      assert.deepEqual(uses.map(u => [u.fields.method, u.fields.route, u.fields.status]), [
        ['GET', '/api/v1/contacts', 200], ['GET', '/api/v1/events', 200], ['POST', '/api/v1/service-accounts', 403]
      ])
      for (const u of uses) {
        assert.deepEqual([u.actor_type, u.actor_id, u.via, u.resource_type, u.resource_id],
          ['api_key', `sa_${account.id}`, `key:${key.id}`, 'api_key', String(key.id)])
        assert.match(String(u.request_id), /^[0-9a-f-]{36}$/)
      }
      const changes = rows.filter(r => r.action !== 'api_key.used').map(r => [r.action, r.resource_id])
      assert.deepEqual(changes, [
        ['service_account.created', String(account.id)],
        ['api_key.created', String(key.id)],
        ['api_key.created', String(rotated.id)],
        ['api_key.rotated', String(key.id)],
        ['api_key.revoked', String(rotated.id)],
        ['service_account.updated', String(account.id)]
      ])
      const created = rows.find(r => r.action === 'api_key.created')
      assert.equal(created?.fields.lookup_id, key.prefix)
      assert.equal(created?.actor_type, 'user')
      assert.equal(created?.actor_id, 'root')
      assert.ok(!JSON.stringify(rows).includes(key.secret.slice(16)), 'no entry holds a key')
      assert.ok(!JSON.stringify(rows).includes(rotated.secret.slice(16)), 'no entry holds a key')
      assert.equal(hashKey(key.secret).length, 64)
    })
  })
}

/** The app's pino lines. */
class LogCapture extends Writable {
  readonly raw: string[] = []
  override _write (chunk: Buffer, _enc: string, done: () => void): void {
    this.raw.push(...chunk.toString().split('\n').filter(l => l !== ''))
    done()
  }
}

// the log does not depend on the database: one is enough
for (const kind of databases().slice(0, 1)) {
  describe(`${kind}: API key refusals in the log`, () => {
    const log = new LogCapture()
    const t = useTestApp(kind, { logger: { level: 'debug', stream: log } })

    it('says why a key was refused, as for tokens (info, a repeat at debug), and never logs a key', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const { account, key } = await accountWithKey(t, admin, 'viewer')
      await expectStatus(t, key.secret, 'GET', '/api/v1/contacts', 200)
      await expectStatus(t, admin, 'DELETE', `/api/v1/service-accounts/${account.id}/keys/${key.id}`, 204)
      const mark = log.raw.length
      await refused(t, key.secret, 'API key revoked')
      await refused(t, key.secret, 'API key revoked')
      const lines = log.raw.slice(mark).map(l => JSON.parse(l) as Json).filter(l => l.refusal !== undefined)
      assert.deepEqual(lines.map(l => [l.level, l.msg, l.refusal.reason, l.refusal.repeat]), [
        [30, 'token refused: API key revoked', 'API key revoked', false],
        [20, 'token refused: API key revoked', 'API key revoked', true]
      ])
      assert.equal(lines[0]?.refusal.token.kid, key.prefix)
      assert.equal(lines[0]?.refusal.token.sub, `sa_${account.id}`)
      await new Promise(resolve => setTimeout(resolve, 50))
      assert.ok(log.raw.length > 0)
      assert.ok(!log.raw.some(l => l.includes(key.secret.slice(16))), 'no line holds a key')
    })
  })
}

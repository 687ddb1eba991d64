/**
 * SCIM 2.0 through the API, on each database, as an identity provider (Okta, Entra ID) drives it: resources and list
 * responses checked against the RFC 7643 core schemas by SCIMMY (a SCIM implementation from npm, not ours), errors
 * in RFC 7644's format, and the effects seen through later reads of the rest of the API: a deactivated user's token
 * refused, a removed user's grants and memberships ended (as the identity provider's webhook ends them), a group's
 * role acting in its members' requests.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import SCIMMY from 'scimmy'
import { databases, newTenant, useTestApp, type TestApp, type Tenant } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'

type Json = Record<string, any>

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User'
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group'
const ROLE_EXT = 'urn:collab:params:scim:schemas:extension:collab:2.0:Group'
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error'

/** A service account of the tenant (created by an admin) and one key of it: the bearer secret. */
async function apiKey (t: TestApp, tenant: Tenant, scopes: string[] | null): Promise<string> {
  const admin = await tenant.user(`admin-${crypto.randomUUID()}`, ['admin'])
  const account = await t.as(admin, {
    method: 'POST',
    url: '/api/v1/service-accounts',
    payload: { name: `directory ${crypto.randomUUID()}`, role: 'admin', scopes }
  })
  assert.equal(account.statusCode, 201, account.body)
  const keys = `/api/v1/service-accounts/${account.json().id}/keys`
  const key = await t.as(admin, { method: 'POST', url: keys, payload: {} })
  assert.equal(key.statusCode, 201, key.body)
  return key.json().secret as string
}

/** A SCIM client with one key. */
function client (t: TestApp, key: string) {
  return async (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, headers: Json = {}
  ): Promise<LightMyRequestResponse> => await t.app.inject({
    method,
    url: `/scim/v2${path}`,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
      ...headers
    },
    ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {})
  })
}

function ok (res: LightMyRequestResponse, status = 200): Json {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/scim\+json/)
  return res.json()
}

/** A SCIM error (RFC 7644 §3.12), read back by SCIMMY's own Error message. */
function scimError (res: LightMyRequestResponse, status: number, scimType?: string): Json {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/scim\+json/)
  const body = res.json()
  assert.deepEqual(body.schemas, [ERROR])
  assert.equal(body.status, String(status))
  assert.equal(body.scimType, scimType)
  assert.equal(typeof body.detail, 'string')
  const fields = { status, ...(scimType !== undefined ? { scimType } : {}), detail: body.detail }
  const read = new SCIMMY.Messages.Error(fields as never)
  assert.deepEqual(JSON.parse(JSON.stringify(read)), body)
  return body
}

/** A User as SCIMMY reads it against the core schema (it throws on a wrong or missing attribute). */
function checkUser (user: Json): Json {
  SCIMMY.Schemas.User.definition.coerce(user)
  assert.deepEqual(user.schemas, [USER])
  assert.equal(user.meta.resourceType, 'User')
  assert.match(user.meta.version, /^W\/".+"$/)
  assert.equal(user.meta.location, `http://localhost:8080/scim/v2/Users/${user.id}`)
  return user
}

function checkGroup (group: Json): Json {
  SCIMMY.Schemas.Group.definition.coerce(group)
  assert.equal(group.meta.resourceType, 'Group')
  assert.match(group.meta.version, /^W\/".+"$/)
  return group
}

function checkList (body: Json, check: (r: Json) => Json): Json[] {
  assert.ok(new SCIMMY.Messages.ListResponse(body as SCIMMY.Messages.ListResponse))
  assert.deepEqual(body.schemas, [LIST])
  assert.equal(body.itemsPerPage, body.Resources.length)
  return (body.Resources as Json[]).map(check)
}

const newUser = (userName: string, extra: Json = {}): Json => ({
  schemas: [USER],
  userName,
  name: { givenName: 'Grace', familyName: 'Hopper' },
  displayName: 'Grace Hopper',
  emails: [{ value: `${userName.split('@')[0] ?? 'x'}@work.example`, type: 'work', primary: true }],
  active: true,
  ...extra
})

async function status (t: TestApp, token: string, url: string): Promise<number> {
  return (await t.as(token, { method: 'GET', url })).statusCode
}

for (const kind of databases()) {
  void describe(`${kind}: SCIM provisioning`, () => {
    const t = useTestApp(kind)

    void it('takes only an API key with the scim scope; discovery says what is supported', async () => {
      const tenant = newTenant(t)
      const key = await apiKey(t, tenant, ['scim'])
      const scim = client(t, key)
      scimError(await t.app.inject({ method: 'GET', url: '/scim/v2/Users' }), 401)
      const admin = await tenant.user('root', ['admin'])
      scimError(await t.as(admin, { method: 'GET', url: '/scim/v2/Users' }), 403)
      // every SCIM operation of the OpenAPI document: no credential 401, a user's token 403, before any body is read
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
      let operations = 0
      for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
        if (!path.startsWith('/scim/v2/')) continue
        for (const [method, op] of Object.entries(item)) {
          operations++
          assert.deepEqual(op.security, [{ bearerAuth: [] }], `${method} ${path}`)
          const url = path.replace(/\{[^}]+\}/g, 'x')
          const verb = method.toUpperCase() as 'GET'
          scimError(await t.app.inject({ method: verb, url }), 401)
          scimError(await t.as(admin, { method: verb, url }), 403)
        }
      }
      assert.equal(operations, 17)
      const plain = client(t, await apiKey(t, tenant, ['contacts:read']))
      const unscoped = client(t, await apiKey(t, tenant, null))
      for (const c of [plain, unscoped]) {
        for (const path of ['/Users', '/Groups', '/ServiceProviderConfig']) scimError(await c('GET', path), 403)
        scimError(await c('POST', '/Users', newUser('x@example.test')), 403)
      }

      const config = ok(await scim('GET', '/ServiceProviderConfig'))
      SCIMMY.Schemas.ServiceProviderConfig.definition.coerce(config)
      assert.equal(config.etag.supported, true)
      assert.equal(config.patch.supported, true)
      assert.equal(config.filter.supported, true)
      assert.equal(config.filter.maxResults, 200)
      const types = ok(await scim('GET', '/ResourceTypes'))
      assert.deepEqual(types.Resources.map((r: Json) => r.endpoint), ['/Users', '/Groups'])
      for (const r of types.Resources) SCIMMY.Schemas.ResourceType.definition.coerce(r)
      const schemas = ok(await scim('GET', '/Schemas'))
      assert.deepEqual(schemas.Resources.map((s: Json) => s.id), [USER, GROUP, ROLE_EXT])
      assert.equal(ok(await scim('GET', `/Schemas/${USER}`)).name, 'User')
      scimError(await scim('GET', '/Schemas/urn:nope'), 404)
      scimError(await scim('GET', '/Nothing'), 404)
      // application/json is accepted too
      const plainJson = await t.app.inject({
        method: 'POST',
        url: '/scim/v2/Users',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify(newUser(`json-${crypto.randomUUID()}@example.test`))
      })
      checkUser(ok(plainJson, 201))
    })

    void it('provisions a user as an identity provider does: create, find, deactivate, reactivate, replace, ' +
      'delete', async () => {
      const tenant = newTenant(t)
      const scim = client(t, await apiKey(t, tenant, ['scim']))
      const admin = await tenant.user('alice', ['admin'])

      const created = await scim('POST', '/Users', newUser('Grace@Example.test', { externalId: 'okta-00u1' }))
      const user = checkUser(ok(created, 201))
      assert.equal(created.headers.location, user.meta.location)
      assert.equal(created.headers.etag, user.meta.version)
      assert.equal(user.userName, 'Grace@Example.test')
      assert.equal(user.externalId, 'okta-00u1')
      assert.deepEqual(user.name, { givenName: 'Grace', familyName: 'Hopper' })
      assert.equal(user.active, true)
      const got = await scim('GET', `/Users/${user.id}`)
      assert.deepEqual(ok(got), user)
      assert.equal(got.headers.etag, user.meta.version)

      // the user signs in: their token's sub is the SCIM id; a grant and a membership given by an admin
      const grace = await tenant.user(user.id, ['member'])
      assert.equal(await status(t, grace, '/api/v1/auth/me'), 200)
      const space = await t.as(admin, { method: 'POST', url: '/api/v1/spaces', payload: { title: 'Team' } })
      assert.equal(space.statusCode, 201, space.body)
      const spaceId = space.json().id
      const member = await t.as(admin, {
        method: 'POST', url: `/api/v1/spaces/${spaceId}/members`, payload: { user_id: user.id, role: 'space_member' }
      })
      assert.equal(member.statusCode, 201, member.body)
      const event = await t.as(admin, { method: 'POST', url: '/api/v1/events', payload: { title: 'Board' } })
      assert.equal(event.statusCode, 201, event.body)
      const eventId = event.json().id
      const manager = await t.as(admin, {
        method: 'POST',
        url: `/api/v1/events/${eventId}/managers`,
        payload: { user_id: user.id, permissions: ['event:edit'] }
      })
      assert.equal(manager.statusCode, 201, manager.body)
      const members = async (): Promise<string[]> =>
        (await t.as(admin, { method: 'GET', url: `/api/v1/spaces/${spaceId}/members` })).json().items
          .map((m: Json) => m.user_id)
      const managers = async (): Promise<string[]> =>
        (await t.as(admin, { method: 'GET', url: `/api/v1/events/${eventId}/managers` })).json().items
          .map((m: Json) => m.user_id)
      assert.ok((await members()).includes(user.id))
      assert.ok((await managers()).includes(user.id))

      // found as Okta and Entra look users up: userName (case-insensitive), externalId
      const byName = ok(await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "grace@example.TEST"')}`))
      assert.deepEqual(checkList(byName, checkUser).map(u => u.id), [user.id])
      assert.equal(byName.totalResults, 1)
      const byExternal = ok(await scim('GET', `/Users?filter=${encodeURIComponent('EXTERNALID eq "okta-00u1"')}`))
      assert.deepEqual(checkList(byExternal, checkUser).map(u => u.id), [user.id])
      const both = 'userName eq "grace@example.test" and externalId eq "other"'
      assert.equal(ok(await scim('GET', `/Users?filter=${encodeURIComponent(both)}`)).totalResults, 0)
      const none = ok(await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "nobody@example.test"')}`))
      assert.deepEqual([none.totalResults, none.Resources], [0, []])
      // the same userName again: 409 uniqueness, whatever its case
      scimError(await scim('POST', '/Users', newUser('GRACE@example.test')), 409, 'uniqueness')

      // deactivated as Entra sends it ("Replace", the value as a string): the token is refused at once
      const off = checkUser(ok(await scim('PATCH', `/Users/${user.id}`, {
        schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }]
      })))
      assert.equal(off.active, false)
      assert.equal(await status(t, grace, '/api/v1/auth/me'), 401)
      // as the webhook's deactivation: grants and memberships wait for a reactivation, the token gate refuses them
      assert.ok((await members()).includes(user.id))
      assert.ok((await managers()).includes(user.id))
      const inactive = ok(await scim('GET', `/Users?filter=${encodeURIComponent('active eq false')}`))
      assert.deepEqual(inactive.Resources.map((u: Json) => u.id), [user.id])

      // reactivated as Okta sends it (no path): the token works again, with what the user had
      const on = checkUser(ok(await scim('PATCH', `/Users/${user.id}`, {
        schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }]
      })))
      assert.equal(on.active, true)
      assert.equal(await status(t, grace, '/api/v1/auth/me'), 200)

      // a replacement with the current ETag; attributes it omits are cleared
      const replaced = checkUser(ok(await scim('PUT', `/Users/${user.id}`, {
        schemas: [USER],
        userName: 'grace@example.test',
        displayName: 'Rear Admiral Hopper',
        active: true,
        emails: [{ value: 'gh@navy.example', primary: true }],
        title: 'ignored'
      }, { 'if-match': on.meta.version })))
      assert.equal(replaced.displayName, 'Rear Admiral Hopper')
      assert.equal(replaced.name, undefined)
      assert.equal(replaced.externalId, undefined)
      assert.deepEqual(replaced.emails, [{ value: 'gh@navy.example', type: 'work', primary: true }])
      assert.notEqual(replaced.meta.version, on.meta.version)
      // add and replace by path, names in any case
      const patched = checkUser(ok(await scim('PATCH', `/Users/${user.id}`, {
        schemas: [PATCH],
        Operations: [
          { op: 'add', path: 'Name.GivenName', value: 'Grace' },
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'grace@navy.example' },
          { op: 'add', path: 'externalId', value: 'entra-1' }
        ]
      })))
      assert.deepEqual(patched.name, { givenName: 'Grace' })
      assert.equal(patched.emails[0].value, 'grace@navy.example')
      assert.equal(patched.externalId, 'entra-1')
      const removedName = checkUser(ok(await scim('PATCH', `/Users/${user.id}`, {
        schemas: [PATCH], Operations: [{ op: 'remove', path: 'name.givenName' }]
      })))
      assert.equal(removedName.name, undefined)

      // deleted: the webhook's removal (grants revoked, memberships ended), then not a resource any more
      const deleted = await scim('DELETE', `/Users/${user.id}`)
      assert.equal(deleted.statusCode, 204, deleted.body)
      scimError(await scim('GET', `/Users/${user.id}`), 404)
      const reactivate = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] }
      scimError(await scim('PATCH', `/Users/${user.id}`, reactivate), 404)
      assert.equal(await status(t, grace, '/api/v1/auth/me'), 401)
      assert.ok(!(await members()).includes(user.id))
      assert.ok(!(await managers()).includes(user.id))
      const outbox = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx => trx.selectFrom('outbox')
        .select(['topic', 'payload']).where('tenant_id', '=', tenant.id).where('aggregate_id', '=', user.id)
        .orderBy('id').execute())
      assert.deepEqual(outbox.map(e => e.topic),
        ['user.added', 'user.deactivated', 'user.reactivated', 'user.changed', 'user.changed', 'user.changed',
          'user.removed'])
      assert.deepEqual((outbox.at(-1)?.payload as Json).revoked,
        { space_managers: 0, event_managers: 1, space_members: 1 })
      assert.equal((outbox[0]?.payload as Json).source, 'scim')
      // the userName is free again: a new user (another id)
      const again = checkUser(ok(await scim('POST', '/Users', newUser('grace@example.test')), 201))
      assert.notEqual(again.id, user.id)
    })

    void it('maps groups to roles: a member of an admin group acts as admin until removed from it', async () => {
      const tenant = newTenant(t)
      const scim = client(t, await apiKey(t, tenant, ['scim']))
      const user = checkUser(ok(await scim('POST', '/Users', newUser(`ada-${crypto.randomUUID()}@example.test`)), 201))
      const other = checkUser(ok(await scim('POST', '/Users', newUser(`bob-${crypto.randomUUID()}@example.test`)), 201))
      const ada = await tenant.user(user.id, ['viewer'])
      const adminOnly = '/api/v1/service-accounts'
      assert.equal(await status(t, ada, adminOnly), 403)

      const created = await scim('POST', '/Groups', {
        schemas: [GROUP, ROLE_EXT], displayName: 'Directory admins', externalId: 'grp-1', [ROLE_EXT]: { role: 'admin' }
      })
      const group = checkGroup(ok(created, 201))
      assert.deepEqual(group.members, [])
      assert.deepEqual(group[ROLE_EXT], { role: 'admin' })
      assert.equal(created.headers.location, `http://localhost:8080/scim/v2/Groups/${group.id}`)
      scimError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'DIRECTORY ADMINS' }), 409, 'uniqueness')
      assert.equal(await status(t, ada, adminOnly), 403)

      const added = checkGroup(ok(await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: user.id }, { value: other.id }] }]
      })))
      assert.deepEqual(added.members.map((m: Json) => m.value).sort(), [user.id, other.id].sort())
      assert.deepEqual(added.members.find((m: Json) => m.value === user.id), {
        value: user.id, type: 'User', display: 'Grace Hopper', $ref: `http://localhost:8080/scim/v2/Users/${user.id}`
      })
      // the member's token (role viewer) now acts as admin
      assert.equal(await status(t, ada, adminOnly), 200)
      const me = (await t.as(ada, { method: 'GET', url: '/api/v1/auth/me' })).json()
      assert.equal(me.effective_role, 'admin')
      assert.ok(me.permissions.includes('tenant:admin'))

      const byName = ok(await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "directory admins"')}`))
      assert.deepEqual(checkList(byName, checkGroup).map(g => g.id), [group.id])
      const byMember = ok(await scim('GET',
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`members[value eq "${user.id}"]`)}`))
      assert.deepEqual(byMember.Resources.map((g: Json) => [g.id, g.members]), [[group.id, undefined]])

      // removed from the group as Entra removes a member: the role goes with it
      const removed = checkGroup(ok(await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ value: user.id }] }]
      })))
      assert.deepEqual(removed.members.map((m: Json) => m.value), [other.id])
      assert.equal(await status(t, ada, adminOnly), 403)
      assert.equal((await t.as(ada, { method: 'GET', url: '/api/v1/auth/me' })).json().effective_role, 'viewer')

      // a group named after a role gives it; a PUT replaces members; a delete ends the role
      const named = checkGroup(ok(await scim('POST', '/Groups', {
        schemas: [GROUP], displayName: 'Member', members: [{ value: user.id }]
      }), 201))
      assert.equal(named[ROLE_EXT], undefined)
      const write = await t.as(ada, { method: 'POST', url: '/api/v1/spaces', payload: { title: 'By a member' } })
      assert.equal(write.statusCode, 201, write.body)
      const put = checkGroup(ok(await scim('PUT', `/Groups/${named.id}`, {
        schemas: [GROUP], displayName: 'Member', members: []
      }, { 'if-match': named.meta.version })))
      assert.deepEqual(put.members, [])
      const refused = await t.as(ada, { method: 'POST', url: '/api/v1/spaces', payload: { title: 'x' } })
      assert.equal(refused.statusCode, 403)
      const deleted = await scim('DELETE', `/Groups/${group.id}`)
      assert.equal(deleted.statusCode, 204)
      scimError(await scim('GET', `/Groups/${group.id}`), 404)
      const log = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx => trx.selectFrom('audit_log')
        .select(['action', 'actor_type', 'fields']).where('tenant_id', '=', tenant.id)
        .where('action', 'like', 'scim.group.%').orderBy('id').execute())
      assert.deepEqual(log.map(e => e.action), ['scim.group.created', 'scim.group.updated', 'scim.group.updated',
        'scim.group.created', 'scim.group.updated', 'scim.group.deleted'])
      assert.ok(log.every(e => e.actor_type === 'scim'))
    })

    void it('refuses what it cannot do with SCIM errors, and changes nothing', async () => {
      const tenant = newTenant(t)
      const scim = client(t, await apiKey(t, tenant, ['scim']))
      const user = checkUser(ok(await scim('POST', '/Users', newUser(`err-${crypto.randomUUID()}@example.test`)), 201))
      const group = checkGroup(ok(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Ops' }), 201))

      for (const filter of ['userName co "err"', 'title eq "x"', 'userName eq "a" or userName eq "b"',
        'not (userName eq "a")', 'userName eq', '((', 'active eq "yes"']) {
        scimError(await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`), 400, 'invalidFilter')
      }
      scimError(await scim('GET', `/Groups?filter=${encodeURIComponent('userName eq "x"')}`), 400, 'invalidFilter')

      const bad: Array<[unknown, string]> = [
        [{ Operations: [{ op: 'replace', value: { active: false } }] }, 'invalidSyntax'],
        [{ schemas: [PATCH] }, 'invalidSyntax'],
        [{ schemas: [PATCH], Operations: [{ op: 'bogus', path: 'active', value: false }] }, 'invalidSyntax'],
        [{ schemas: [PATCH], Operations: [{ op: 'remove' }] }, 'noTarget'],
        [{ schemas: [PATCH], Operations: [{ op: 'replace', path: 'emails[type eq', value: 'x' }] }, 'invalidSyntax'],
        [{ schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: 'maybe' }] }, 'invalidValue'],
        [{ schemas: [PATCH], Operations: [{ op: 'replace', path: 'userName', value: 42 }] }, 'invalidValue'],
        [{ schemas: [PATCH], Operations: [{ op: 'remove', path: 'userName' }] }, 'invalidValue'],
        // the first operation is valid: the whole request changes nothing
        [{
          schemas: [PATCH],
          Operations: [
            { op: 'replace', path: 'displayName', value: 'Changed' }, { op: 'replace', path: 'active', value: 3 }]
        },
        'invalidValue']
      ]
      for (const [body, scimType] of bad) scimError(await scim('PATCH', `/Users/${user.id}`, body), 400, scimType)
      scimError(await scim('PATCH', `/Users/${user.id}`, '{"schemas": ['), 400, 'invalidSyntax')
      scimError(await scim('POST', '/Users', { schemas: [USER], displayName: 'no userName' }), 400, 'invalidValue')
      scimError(await scim('POST', '/Users', newUser('x@example.test', { emails: [{ value: 'not an address' }] })), 400,
        'invalidValue')
      scimError(await scim('POST', '/Users', { schemas: [GROUP], userName: 'wrong-schema' }), 400, 'invalidValue')
      assert.deepEqual(ok(await scim('GET', `/Users/${user.id}`)), user)

      // If-Match naming another version: 412, nothing changed
      const stale = { 'if-match': 'W/"stale"' }
      const patch = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] }
      scimError(await scim('PATCH', `/Users/${user.id}`, patch, stale), 412)
      scimError(await scim('PUT', `/Users/${user.id}`, newUser(user.userName, { active: false }), stale), 412)
      scimError(await scim('DELETE', `/Users/${user.id}`, undefined, stale), 412)
      scimError(await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'Other' }]
      }, stale), 412)
      scimError(await scim('DELETE', `/Groups/${group.id}`, undefined, stale), 412)
      assert.deepEqual(ok(await scim('GET', `/Users/${user.id}`)), user)
      assert.deepEqual(ok(await scim('GET', `/Groups/${group.id}`)), group)
      // the current version passes, weak or not
      const renamed = ok(await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'Operations' }]
      }, { 'if-match': group.meta.version.replace(/^W\//, '') }))
      assert.equal(renamed.displayName, 'Operations')

      // members must be users of the tenant; a group's role one of the roles
      scimError(await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: user.id }, { value: 'ghost' }] }]
      }), 400, 'invalidValue')
      scimError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Bad', [ROLE_EXT]: { role: 'owner' } }),
        400, 'invalidValue')
      assert.deepEqual(ok(await scim('GET', `/Groups/${group.id}`)).members, [])
      const named = ok(await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Bad"')}`))
      assert.equal(named.totalResults, 0)

      scimError(await scim('GET', '/Users/no-such-user'), 404)
      scimError(await scim('GET', '/Groups/999999999'), 404)
      scimError(await scim('GET', '/Groups/not-a-number'), 404)
      scimError(await scim('DELETE', '/Users/no-such-user'), 404)
      scimError(await scim('PUT', '/Groups/999999999', { schemas: [GROUP], displayName: 'x' }), 404)
    })

    void it('pages with startIndex and count; another tenant\'s key sees none of it', async () => {
      const tenant = newTenant(t)
      const scim = client(t, await apiKey(t, tenant, ['scim']))
      const ids: string[] = []
      for (let i = 0; i < 5; i++) {
        ids.push(checkUser(ok(await scim('POST', '/Users', newUser(`p${i}@example.test`)), 201)).id)
      }
      const page = ok(await scim('GET', '/Users?startIndex=2&count=2'))
      assert.deepEqual([page.totalResults, page.startIndex, page.itemsPerPage], [5, 2, 2])
      assert.deepEqual(checkList(page, checkUser).map(u => u.id), ids.slice(1, 3))
      const last = ok(await scim('GET', '/Users?startIndex=5&count=2'))
      assert.deepEqual(last.Resources.map((u: Json) => u.id), ids.slice(4))
      const beyond = ok(await scim('GET', '/Users?startIndex=9'))
      assert.deepEqual([beyond.totalResults, beyond.itemsPerPage, beyond.Resources], [5, 0, []])
      const counted = ok(await scim('GET', '/Users?count=0'))
      assert.deepEqual([counted.totalResults, counted.Resources], [5, []])
      const all = ok(await scim('GET', '/Users?startIndex=-3&count=500'))
      assert.deepEqual([all.startIndex, all.itemsPerPage], [1, 5])
      const group = checkGroup(ok(await scim('POST', '/Groups', {
        schemas: [GROUP], displayName: 'Paged', members: ids.map(value => ({ value }))
      }), 201))
      assert.equal(group.members.length, 5)

      const elsewhere = client(t, await apiKey(t, newTenant(t), ['scim']))
      assert.equal(ok(await elsewhere('GET', '/Users')).totalResults, 0)
      assert.equal(ok(await elsewhere('GET', '/Groups')).totalResults, 0)
      scimError(await elsewhere('GET', `/Users/${ids[0]}`), 404)
      scimError(await elsewhere('PATCH', `/Users/${ids[0]}`, {
        schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }]
      }), 404)
      scimError(await elsewhere('DELETE', `/Users/${ids[0]}`), 404)
      scimError(await elsewhere('GET', `/Groups/${group.id}`), 404)
      scimError(await elsewhere('DELETE', `/Groups/${group.id}`), 404)
      const foreign = { schemas: [GROUP], displayName: 'x', members: [{ value: ids[0] }] }
      scimError(await elsewhere('POST', '/Groups', foreign),
        400, 'invalidValue')
      assert.equal(ok(await scim('GET', `/Users/${ids[0]}`)).active, true)
      assert.equal(ok(await scim('GET', `/Groups/${group.id}`)).members.length, 5)
    })
  })
}

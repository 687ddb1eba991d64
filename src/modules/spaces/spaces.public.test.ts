import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { alicePublishedSpace, createSpace, publish } from './spaces.fixtures.ts'

type Json = Record<string, any>

/** A published public space of alice's titled 'Before', and the address of its public page. */
async function publicSpace (t: TestApp) {
  const { tenant, alice, s } = await alicePublishedSpace(t, { title: 'Before', visibility: 40 })
  return { tenant, alice, s, url: `/api/v1/public/spaces/${s.id}` }
}

/** Retitles a space straight in the database, as another instance of the service would write it. */
async function retitleElsewhere (t: TestApp, tenantId: string, spaceId: number, title: string): Promise<void> {
  await t.ctx.db
    .updateTable('spaces')
    .set({ title })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', spaceId)
    .execute()
}

for (const kind of databases()) {
  void describe(`${kind}: public space page`, () => {
    const t = useTestApp(kind)

    void it('shows only public data of a published public space, by id or by handle', async () => {
      const tenant = newTenant(t)
      const owner = `u-owner-${tenant.id}`
      const alice = await tenant.user(owner)
      const people = [
        {
          id: `u-1-${tenant.id}`,
          display_name: 'Grace Hopper',
          email: 'grace@private.test',
          first_name: null,
          last_name: null,
          avatar_url: 'https://img.test/g.png'
        },
        {
          id: `u-2-${tenant.id}`,
          display_name: null,
          email: 'linus@private.test',
          first_name: 'Linus',
          last_name: 'Torvalds',
          avatar_url: 'javascript:alert(1)'
        },
        {
          id: `u-3-${tenant.id}`,
          display_name: 'secret@private.test',
          email: 'secret@private.test',
          first_name: null,
          last_name: null,
          avatar_url: null
        }
      ]
      await t.ctx.db.insertInto('users').values([
        ...people.map(p => ({ tenant_id: tenant.id, ...p })),
        { tenant_id: tenant.id, id: owner, display_name: 'Olga Owner', email: 'olga@private.test' }
      ]).execute()
      const s = await createSpace(t, alice, {
        title: 'Open Garden',
        description: 'All welcome',
        visibility: 40,
        timezone: 'Europe/Paris'
      })
      for (const p of [...people, { id: `u-4-${tenant.id}` }]) {
        const res = await t.as(alice, {
          method: 'POST',
          url: `/api/v1/spaces/${s.id}/members`,
          payload: { user_id: p.id, role: 'space_member' }
        })
        assert.equal(res.statusCode, 201)
      }
      const pubChild = await createSpace(t, alice, { title: 'Open child', visibility: 40, parent_ids: [s.id] })
      const privChild = await createSpace(t, alice, { title: 'Hidden child', visibility: 20, parent_ids: [s.id] })
      await publish(t, alice, pubChild.id)
      await publish(t, alice, privChild.id)

      assert.equal(
        (await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${s.id}` })).statusCode,
        404,
        'a draft has no public page'
      )
      await publish(t, alice, s.id)

      const res = await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${s.id}` })
      assert.equal(res.statusCode, 200, res.body)
      const page = res.json()
      assert.equal(page.$schema, 'http://localhost:8080/schemas/SpacePage.json')
      assert.deepEqual(
        { ...page.space, published_at: '' },
        {
          id: s.id,
          title: 'Open Garden',
          description: 'All welcome',
          timezone: 'Europe/Paris',
          visibility: 40,
          published_at: ''
        }
      )
      assert.deepEqual(page.subspaces.map((x: Json) => [x.title, x.parent_id]), [['Open child', s.id]])
      assert.deepEqual(page.managers, [{ display_name: 'Olga Owner', initials: 'OO' }])
      assert.deepEqual(page.members, [
        { display_name: 'Grace Hopper', initials: 'GH', avatar_url: 'https://img.test/g.png' },
        { display_name: 'Linus Torvalds', initials: 'LT' },
        { display_name: 'Member', initials: 'M' },
        { display_name: 'Member', initials: 'M' }
      ])
      assert.deepEqual(page.stats, { events_count: 0, managers_count: 1, members_count: 4, subspaces_count: 1 })
      assert.deepEqual(page.upcoming_events, [])
      assert.deepEqual(page.owner, { name: 'Olga Owner', type: 'user' })
      assert.equal(page.viewer, undefined)
      // privacy: no e-mail, no user id, no tenant anywhere in the body
      assert.equal(/@/.test(res.body), false, res.body)
      assert.equal(res.body.includes(tenant.id), false, 'no user id or tenant id leaks')
      assert.equal(res.body.includes('u-'), false)
      assert.equal(res.body.includes('Hidden child'), false)

      const space = (await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${s.id}` })).json()
      assert.match(space.public_handle, /^open-garden-[0-9a-f]{8}$/)
      const byHandle = await t.app.inject({
        method: 'GET',
        url: `/api/v1/public/spaces/${space.public_handle as string}`
      })
      assert.equal(byHandle.statusCode, 200)
      assert.deepEqual(byHandle.json(), page)
      const child = await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${pubChild.id}` })
      assert.equal(child.json().space.parent_id, s.id)
    })

    void it('answers 404 for unknown, private, unpublished and deleted spaces', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const members = await createSpace(t, alice, { visibility: 20 })
      await publish(t, alice, members.id)
      const pub = await createSpace(t, alice, { visibility: 40 })
      await publish(t, alice, pub.id)
      const handle = (await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${pub.id}` })).json()
        .public_handle as string
      for (const ref of [String(members.id), '999999999', 'no-such-handle', 'Bad Ref!', '0']) {
        const res = await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${encodeURIComponent(ref)}` })
        assert.equal(res.statusCode, 404, ref)
        assert.equal(res.json().title, 'Not Found')
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
      }
      // made private by a published change: gone from the public page
      await t.as(alice, { method: 'PATCH', url: `/api/v1/spaces/${pub.id}`, payload: { visibility: 30 } })
      assert.equal(
        (await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${pub.id}` })).statusCode,
        200,
        'pending changes are not public yet'
      )
      await publish(t, alice, pub.id)
      assert.equal((await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${pub.id}` })).statusCode, 404)
      // public again keeps its handle; then deleted
      await t.as(alice, { method: 'PATCH', url: `/api/v1/spaces/${pub.id}`, payload: { visibility: 40 } })
      await publish(t, alice, pub.id)
      assert.equal((await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${handle}` })).statusCode, 200)
      await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${pub.id}` })
      assert.equal((await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${handle}` })).statusCode, 404)
      assert.equal((await t.app.inject({ method: 'GET', url: `/api/v1/public/spaces/${pub.id}` })).statusCode, 404)
    })

    void it('is cache-friendly and tells a signed-in viewer what they can do', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 40 })
      const bob = await tenant.user('bob')
      const stranger = await newTenant(t).user('eve', ['admin'])
      const url = `/api/v1/public/spaces/${s.id}`

      const anon = await t.app.inject({ method: 'GET', url })
      assert.match(String(anon.headers.etag), /^W\/".+"$/)
      assert.match(String(anon.headers['cache-control']), /^public, max-age=60/)
      const again = await t.app.inject({ method: 'GET', url, headers: { 'if-none-match': String(anon.headers.etag) } })
      assert.equal(again.statusCode, 304)
      assert.equal(again.body, '')

      const asBob = await t.as(bob, { method: 'GET', url })
      assert.deepEqual(asBob.json().viewer, { can_manage: false, can_open_in_studio: true, can_request_join: true })
      assert.equal(asBob.headers['cache-control'], 'private, no-cache')
      const asAlice = await t.as(alice, { method: 'GET', url })
      assert.deepEqual(asAlice.json().viewer, { can_manage: true, can_open_in_studio: true, can_request_join: false })
      const asEve = await t.as(stranger, { method: 'GET', url })
      assert.deepEqual(asEve.json().viewer, { can_manage: false, can_open_in_studio: false, can_request_join: false })
      const badToken = await t.app.inject({ method: 'GET', url, headers: { authorization: 'Bearer a.b.c' } })
      assert.equal(badToken.statusCode, 200)
      assert.equal(badToken.json().viewer, undefined)

      // a change to the page changes the ETag
      await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'bob', role: 'space_member' }
      })
      const changed = await t.app.inject({
        method: 'GET',
        url,
        headers: { 'if-none-match': String(anon.headers.etag) }
      })
      assert.equal(changed.statusCode, 200)
      assert.notEqual(changed.headers.etag, anon.headers.etag)
      assert.equal(changed.json().stats.members_count, 1)
    })
  })

  void describe(`${kind}: public space page kept in memory (PUBLIC_PAGE_CACHE_MS=1000)`, () => {
    const t = useTestApp(kind, { env: { PUBLIC_PAGE_CACHE_MS: '1000' } })

    void it('serves an anonymous page from memory: a write answered here shows at once, ' +
      'one made elsewhere within PUBLIC_PAGE_CACHE_MS', async () => {
      const { tenant, alice, s, url } = await publicSpace(t)
      const title = async () => (await t.app.inject({ method: 'GET', url })).json().space.title as string
      assert.equal(await title(), 'Before')

      // through this process's API: the tenant's pages are dropped before the answer leaves
      await t.as(alice, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'After' } })
      await publish(t, alice, s.id)
      assert.equal(await title(), 'After')

      // written by another instance (here: straight to the database): the page kept in memory is served until it
      // expires
      await retitleElsewhere(t, tenant.id, s.id, 'Elsewhere')
      assert.equal(await title(), 'After')
      const signedIn = await t.as(alice, { method: 'GET', url })
      assert.equal(signedIn.json().space.title, 'Elsewhere', 'a caller with a token is never served the anonymous page')
      await new Promise(resolve => setTimeout(resolve, t.config.publicPageCacheMs + 50))
      assert.equal(await title(), 'Elsewhere')

      // a refused write changed nothing and drops nothing; another tenant's write drops nothing of this one
      await retitleElsewhere(t, tenant.id, s.id, 'Again elsewhere')
      const refused = await t.app.inject({
        method: 'POST',
        url: `/api/v1/spaces/${s.id}/members`,
        payload: { user_id: 'x', role: 'space_member' }
      })
      assert.equal(refused.statusCode, 401)
      const other = await newTenant(t).user('olga')
      await createSpace(t, other, { title: 'Elsewhere too' })
      assert.equal(await title(), 'Elsewhere')
    })
  })

  void describe(`${kind}: public space page without the memory (PUBLIC_PAGE_CACHE_MS=0)`, () => {
    const t = useTestApp(kind, { env: { PUBLIC_PAGE_CACHE_MS: '0' } })

    void it('reads every page from the database', async () => {
      const { tenant, s, url } = await publicSpace(t)
      assert.equal((await t.app.inject({ method: 'GET', url })).json().space.title, 'Before')
      await retitleElsewhere(t, tenant.id, s.id, 'Elsewhere')
      assert.equal((await t.app.inject({ method: 'GET', url })).json().space.title, 'Elsewhere')
    })
  })
}

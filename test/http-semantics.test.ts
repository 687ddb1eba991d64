/**
 * HTTP semantics a client or a cache relies on, read by Node's fetch (undici) from the service listening on
 * 127.0.0.1 (docs/api-conventions.md, "Conditional reads" and "Caching"; "Bodies" for 415):
 *
 * - 304: every GET (and HEAD) with an ETag answers 304 to a matching If-None-Match, with no body, no Content-Type or
 *   Content-Length, and the 200's ETag, Cache-Control and Vary; a changed answer is a 200 again. A row's tag (an
 *   event's revision, a manager's digest) is answered with the answer's own tag once If-None-Match is sent, so that an
 *   event whose registration figures changed under the same revision is not a 304. Every GET of the OpenAPI document
 *   that declares an ETag is walked.
 * - 415: a body of any media type but JSON on a JSON route (a string body sent by fetch: text/plain) names
 *   `header.content-type` and the type, and changes nothing; a request without a body passes whatever its type.
 * - Cache-Control: the anonymous public feed and pages are `public`, a token's feed and a signed-in reader's page
 *   private.
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { before, describe, it } from 'node:test'
import { insertAttendee, insertContacts } from '../src/modules/attendees/attendees.fixtures.ts'
import { alicePublishedSpace } from '../src/modules/spaces/spaces.fixtures.ts'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { missingFixtures, newWorld, pathValues, requiredQuery } from './helpers/fixtures.ts'
import { expectStatus } from './helpers/requests.ts'
import { apiRoutes, fillPath } from './helpers/routes.ts'

/** A published public space with `n` public events a week ahead, linked to it. */
async function publicSpace (t: TestApp, n: number) {
  const { tenant, alice, s } = await alicePublishedSpace(t, { title: 'Open garden', visibility: 40 })
  const start = Date.now() + 7 * 86_400_000
  const events: number[] = []
  for (let i = 0; i < n; i++) events.push(await publicEvent(t, alice, s.id as number, start + i * 3_600_000, i))
  return { tenant, alice, spaceId: s.id as number, events }
}

async function publicEvent (t: TestApp, alice: string, spaceId: number, start: number, i: number): Promise<number> {
  const id = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
    title: `Garden day ${i}`,
    description: `Bring gloves, seeds and a friend. Meeting point ${i} by the gate.`,
    start_dt: new Date(start).toISOString(),
    visibility: 40
  })).json().id as number
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/publish`, 204)
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/spaces`, 201, { space_id: spaceId })
  return id
}

/** A JSON answer's body, as the tests read it. */
const jsonOf = async (res: Response): Promise<Record<string, any>> => await res.json() as Record<string, any>

/** The headers a 304 must not carry, and must carry as its 200 did. */
async function assertBare304 (res: Response, sent: { etag: string, cacheControl?: string | null, vary?: RegExp }) {
  assert.equal(res.status, 304)
  assert.equal(await res.text(), '')
  assert.equal(res.headers.get('content-type'), null)
  assert.equal(res.headers.get('content-length'), null)
  assert.equal(res.headers.get('content-encoding'), null)
  assert.equal(res.headers.get('etag'), sent.etag)
  assert.ok(res.headers.get('date') !== null)
  if (sent.cacheControl !== undefined) assert.equal(res.headers.get('cache-control'), sent.cacheControl)
  if (sent.vary !== undefined) assert.match(res.headers.get('vary') ?? '', sent.vary)
}

for (const kind of databases()) {
  void describe(`${kind}: HTTP semantics through a real client`, () => {
    const t = useTestApp(kind)
    let base = ''
    before(async () => {
      await t.app.listen({ host: '127.0.0.1', port: 0 })
      base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
    })
    const get = async (path: string, headers: Record<string, string> = {}, method = 'GET') =>
      await fetch(`${base}${path}`, { method, headers })
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

    void it('the anonymous feed of a public space: public, 304 bare in any coding, 200 once it changed', async () => {
      const { alice, spaceId } = await publicSpace(t, 6)
      const url = `/api/v1/spaces/${spaceId}/calendar.ics`
      const first = await get(url)
      assert.equal(first.status, 200)
      assert.equal(first.headers.get('content-type'), 'text/calendar; charset=utf-8')
      assert.equal(first.headers.get('cache-control'), 'public, max-age=300')
      const etag = first.headers.get('etag') ?? ''
      assert.match(etag, /^"[\w-]+"$/)
      const text = await first.text()
      for (const coding of ['br', 'gzip', 'identity']) {
        await assertBare304(await get(url, { 'if-none-match': etag, 'accept-encoding': coding }), {
          etag, cacheControl: 'public, max-age=300', ...(coding === 'identity' ? {} : { vary: /accept-encoding/i })
        })
      }
      // a list, a weak form and `*` name it too; HEAD as GET
      await assertBare304(await get(url, { 'if-none-match': `"other", W/${etag}` }), { etag })
      await assertBare304(await get(url, { 'if-none-match': '*' }), { etag })
      await assertBare304(await get(url, { 'if-none-match': etag }, 'HEAD'), { etag })
      // the compressed 200 names Accept-Encoding once
      const br = await get(url, { 'accept-encoding': 'br' })
      assert.equal(br.headers.get('content-encoding'), 'br')
      assert.equal(br.headers.get('vary'), 'accept-encoding')
      assert.equal(await br.text(), text)

      await publicEvent(t, alice, spaceId, Date.now() + 30 * 86_400_000, 99)
      const changed = await get(url, { 'if-none-match': etag })
      assert.equal(changed.status, 200)
      assert.notEqual(changed.headers.get('etag'), etag)
      assert.match(await changed.text(), /Garden day 99/)
    })

    void it('a token\'s feed stays private: its URL is a secret, revoking it must take effect at once', async () => {
      const { alice, spaceId } = await publicSpace(t, 1)
      const made = (await expectStatus(t, alice, 'POST', '/api/v1/feed-tokens', 201, {
        scope: 'space', space_id: spaceId
      })).json()
      const url = new URL(made.url as string)
      const first = await get(`${url.pathname}${url.search}`)
      assert.equal(first.status, 200)
      assert.equal(first.headers.get('cache-control'), 'private, max-age=300')
      const etag = first.headers.get('etag') ?? ''
      await assertBare304(await get(`${url.pathname}${url.search}`, { 'if-none-match': etag }), {
        etag, cacheControl: 'private, max-age=300'
      })
      // revoked: the next fetch, with or without the tag held, is refused
      await expectStatus(t, alice, 'DELETE', `/api/v1/feed-tokens/${made.id as number}`, 204)
      assert.equal((await get(`${url.pathname}${url.search}`, { 'if-none-match': etag })).status, 404)
    })

    void it('the public space page, JSON and HTML: public for anonymous readers, 304 bare, private with a token',
      async () => {
        const { alice, spaceId } = await publicSpace(t, 1)
        for (const [path, accept] of [
          [`/api/v1/public/spaces/${spaceId}`, 'application/json'],
          [`/api/v1/public/spaces/${spaceId}`, 'text/html'],
          [`/api/v1/public/spaces/${spaceId}/page.html`, '*/*']
        ] as const) {
          const first = await get(path, { accept })
          assert.equal(first.status, 200, path)
          const cacheControl = first.headers.get('cache-control')
          assert.equal(cacheControl, 'public, max-age=60, stale-while-revalidate=300', path)
          assert.match(first.headers.get('vary') ?? '', /accept-encoding/i, path)
          const etag = first.headers.get('etag') ?? ''
          await assertBare304(await get(path, { accept, 'if-none-match': etag, 'accept-encoding': 'br' }), {
            etag, cacheControl, vary: /accept-encoding/i
          })
        }
        const json = `/api/v1/public/spaces/${spaceId}`
        assert.match((await get(json)).headers.get('vary') ?? '', /^Authorization, Accept, accept-encoding$/)
        const signedIn = await get(json, bearer(alice))
        assert.equal(signedIn.headers.get('cache-control'), 'private, no-cache')
        const etag = signedIn.headers.get('etag') ?? ''
        await assertBare304(await get(json, { ...bearer(alice), 'if-none-match': etag }), {
          etag, cacheControl: 'private, no-cache'
        })
        // the page changes (an event more): a 200 again
        await publicEvent(t, alice, spaceId, Date.now() + 9 * 86_400_000, 7)
        const changed = await get(json, { ...bearer(alice), 'if-none-match': etag })
        assert.equal(changed.status, 200)
        assert.equal((await jsonOf(changed)).stats.events_count, 2)
      })

    void it('the public event page: public, 304 bare', async () => {
      const { events: [eventId] } = await publicSpace(t, 1)
      for (const accept of ['application/json', 'text/html']) {
        const path = `/api/v1/public/events/${String(eventId)}`
        const first = await get(path, { accept })
        assert.equal(first.status, 200)
        assert.match(first.headers.get('vary') ?? '', /^Accept, Accept-Language, accept-encoding$/)
        const etag = first.headers.get('etag') ?? ''
        await assertBare304(await get(path, { accept, 'if-none-match': etag }), {
          etag, cacheControl: 'public, max-age=60, stale-while-revalidate=300'
        })
      }
    })

    void it('GET /events/{id}: 304 for the very answer held, a 200 when its registration figures changed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: 'Choir', start_dt: new Date(Date.now() + 86_400_000).toISOString()
      })
      const url = `/api/v1/events/${event.json().id as number}`
      const plain = await get(url, bearer(alice))
      assert.equal(plain.headers.get('etag'), '"1"', 'without If-None-Match: the revision, as before')
      const body = await jsonOf(plain)
      // the revision alone does not name the answer: the answer's own tag comes back, then 304s
      const named = await get(url, { ...bearer(alice), 'if-none-match': '"1"' })
      assert.equal(named.status, 200)
      const etag = named.headers.get('etag') ?? ''
      assert.match(etag, /^"1\.[\w-]{22}"$/)
      assert.deepEqual(await jsonOf(named), body)
      await assertBare304(await get(url, { ...bearer(alice), 'if-none-match': etag }), { etag })
      await assertBare304(await get(url, { ...bearer(alice), 'if-none-match': etag }, 'HEAD'), { etag })
      // an answer's tag is the revision's to If-Match
      const patched = await fetch(`${base}${url}`, {
        method: 'PATCH',
        headers: { ...bearer(alice), 'content-type': 'application/json', 'if-match': etag },
        body: JSON.stringify({ title: 'Choir night' })
      })
      assert.equal(patched.status, 200)
      assert.equal(patched.headers.get('etag'), '"2"')
      const stale = await fetch(`${base}${url}`, {
        method: 'PATCH',
        headers: { ...bearer(alice), 'content-type': 'application/json', 'if-match': etag },
        body: JSON.stringify({ title: 'Choir day' })
      })
      assert.equal(stale.status, 412)

      const now = await get(url, { ...bearer(alice), 'if-none-match': '"2"' })
      const tag2 = now.headers.get('etag') ?? ''
      const before = await jsonOf(now)
      await assertBare304(await get(url, { ...bearer(alice), 'if-none-match': tag2 }), { etag: tag2 })
      // a registration: the revision stays 2, the figures change, so the answer is a 200 with a new tag
      const [contact] = await insertContacts(t, tenant.id, 'alice', 1)
      await insertAttendee(t, tenant.id, {
        event_id: event.json().id as number, contact_id: contact ?? '', status: 'confirmed'
      })
      const changed = await get(url, { ...bearer(alice), 'if-none-match': tag2 })
      assert.equal(changed.status, 200)
      const after = await jsonOf(changed)
      assert.notDeepEqual(after, before)
      assert.match(changed.headers.get('etag') ?? '', /^"2\./)
      assert.notEqual(changed.headers.get('etag'), tag2)
    })

    void it('an event manager (a digest of the row): 304 bare, a 200 once the grant changed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const id = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: 'Rehearsal', start_dt: new Date(Date.now() + 86_400_000).toISOString()
      })).json().id as number
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers`, 201, {
        user_id: 'bob', role: 'event_manager:attendees'
      })
      const url = `/api/v1/events/${id}/managers/bob`
      const first = await get(url, { ...bearer(alice), 'if-none-match': '"x"' })
      assert.equal(first.status, 200)
      const etag = first.headers.get('etag') ?? ''
      await assertBare304(await get(url, { ...bearer(alice), 'if-none-match': etag }), { etag })
      await expectStatus(t, alice, 'PUT', url, 200, { permissions: ['attendees:read'] })
      const changed = await get(url, { ...bearer(alice), 'if-none-match': etag })
      assert.equal(changed.status, 200)
      assert.deepEqual((await jsonOf(changed)).permissions, ['attendees:read'])
    })

    void it('every GET the OpenAPI document declares an ETag for answers 304 to a repeat with If-None-Match',
      async () => {
        const { routes, doc } = await apiRoutes(t.app)
        const w = await newWorld(t, 'etags')
        const declared = routes.filter(r => r.method === 'GET' && (doc.paths[r.url.replace(/:([^/]+)/g, '{$1}')]
          ?.get?.responses as Record<string, { headers?: Record<string, unknown> }> | undefined)?.['200']?.headers
          ?.ETag !== undefined)
        const walked: string[] = []
        const skipped: string[] = []
        for (const route of declared) {
          if (missingFixtures(route).length > 0) {
            skipped.push(`${route.name} (no fixture)`)
            continue
          }
          const path = fillPath(route.url, await pathValues(w, route)) + requiredQuery(route)
          const headers = route.auth === 'none' ? {} : bearer(w.tokens.alice)
          const first = await get(path, headers)
          if (first.status !== 200) {
            // the feeds read a token the query names, which no fixture makes: covered above
            skipped.push(`${route.name} (${first.status})`)
            continue
          }
          // once with the tag of a read without If-None-Match, then with the answer's tag
          const named = await get(path, { ...headers, 'if-none-match': first.headers.get('etag') ?? '' })
          const etag = named.headers.get('etag') ?? ''
          const again = named.status === 304 ? named : await get(path, { ...headers, 'if-none-match': etag })
          assert.equal(again.status, 304, `${route.name}: ${again.status}`)
          assert.equal(await again.text(), '', route.name)
          assert.equal(again.headers.get('content-type'), null, route.name)
          assert.equal(again.headers.get('etag'), etag, route.name)
          walked.push(route.name)
        }
        // the draft and the series of an event, the public event pages and the feeds need a state the shared fixtures
        // do not make (a draft started, a series, a public event, a feed token): the tests above cover those kinds
        assert.ok(walked.length >= 7, `walked ${walked.join(', ')}; skipped ${skipped.join(', ')}`)
        assert.ok(walked.includes('GET /api/v1/events/:id'), walked.join(', '))
        assert.ok(walked.includes('GET /api/v1/public/spaces/:id'), walked.join(', '))
      })

    void it('415 for a body that is not JSON on a JSON route, naming the type; nothing changed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const body = JSON.stringify({ first_name: 'Ada', last_name: 'Lovelace' })
      // fetch sends a string body as text/plain;charset=UTF-8
      const refused = await fetch(`${base}/api/v1/contacts`, { method: 'POST', headers: bearer(alice), body })
      assert.equal(refused.status, 415)
      assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/)
      const problem = await jsonOf(refused)
      assert.deepEqual(problem.errors, [{
        location: 'header.content-type',
        message: 'expected application/json or application/*+json (charset utf-8 or none)',
        value: 'text/plain;charset=UTF-8'
      }])
      assert.match(problem.detail, /text\/plain;charset=UTF-8/)
      const others = ['application/xml', 'application/json; charset=iso-8859-1', 'application/x-www-form-urlencoded']
      for (const type of others) {
        const res = await fetch(`${base}/api/v1/contacts`, {
          method: 'POST', headers: { ...bearer(alice), 'content-type': type }, body
        })
        assert.equal(res.status, 415, type)
        assert.equal((await jsonOf(res)).errors[0].value, type)
      }
      const list = await get('/api/v1/contacts', bearer(alice))
      assert.equal((await jsonOf(list)).total, 0, 'nothing was created')

      // JSON in its spellings is read
      for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8']) {
        const res = await fetch(`${base}/api/v1/contacts`, {
          method: 'POST', headers: { ...bearer(alice), 'content-type': type }, body
        })
        assert.equal(res.status, 201, type)
      }
      const event = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: 'Talk', start_dt: new Date(Date.now() + 86_400_000).toISOString()
      })).json()
      const merge = await fetch(`${base}/api/v1/events/${event.id as number}`, {
        method: 'PATCH',
        headers: { ...bearer(alice), 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ title: 'Talk at eight' })
      })
      assert.equal(merge.status, 200)
      const plain = await fetch(`${base}/api/v1/events/${event.id as number}`, {
        method: 'PATCH', headers: bearer(alice), body: JSON.stringify({ title: 'Talk at nine' })
      })
      assert.equal(plain.status, 415)
      assert.equal((await jsonOf(await get(`/api/v1/events/${event.id as number}`, bearer(alice)))).title,
        'Talk at eight')

      // no body: fine whatever the type (a body-less operation)
      for (const type of ['text/plain', 'application/json', undefined]) {
        const res = await fetch(`${base}/api/v1/events/${event.id as number}/publish`, {
          method: 'POST', headers: { ...bearer(alice), ...(type === undefined ? {} : { 'content-type': type }) }
        })
        assert.ok(res.status === 204 || res.status === 409, `${String(type)}: ${res.status}`)
      }
      // a route that needs a body says so at `body`
      const empty = await fetch(`${base}/api/v1/contacts`, {
        method: 'POST', headers: { ...bearer(alice), 'content-type': 'application/json' }
      })
      assert.equal(empty.status, 400)
      assert.equal((await jsonOf(empty)).errors[0].location, 'body')
      // a route of its own type keeps it, and names what it got
      const csv = await fetch(`${base}/api/v1/contacts/import`, {
        method: 'POST', headers: { ...bearer(alice), 'content-type': 'text/plain' }, body: 'first_name\nGrace\n'
      })
      assert.equal(csv.status, 415)
      assert.equal((await jsonOf(csv)).errors[0].value, 'text/plain')
      const imported = await fetch(`${base}/api/v1/contacts/import`, {
        method: 'POST',
        headers: { ...bearer(alice), 'content-type': 'text/csv' },
        body: 'first_name,email\nGrace,grace@example.test\n'
      })
      assert.equal(imported.status, 200)
    })
  })
}

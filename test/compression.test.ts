/**
 * Answers compressed when the client asks (docs/api-conventions.md, "Compression"): the bytes are decoded with
 * Node's zlib and read by a real HTTP client (undici's fetch, which decodes `br` and `gzip` itself), and must be the
 * answer sent to a client that asks for none; small answers, answers to a client that refuses every coding and 304s
 * stay as they are; a public space's kept feed is sent in each coding; a streamed CSV export is compressed as it
 * streams.
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import zlib from 'node:zlib'
import { insertAttendee, insertContacts } from '../src/modules/attendees/attendees.fixtures.ts'
import { alicePublishedSpace } from '../src/modules/spaces/spaces.fixtures.ts'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { expectStatus } from './helpers/requests.ts'

const decode = (encoding: string | undefined, raw: Buffer): string =>
  encoding === 'br'
    ? zlib.brotliDecompressSync(raw).toString('utf8')
    : encoding === 'gzip' ? zlib.gunzipSync(raw).toString('utf8') : raw.toString('utf8')

/** A published public space with `n` public events a week ahead, each long enough to make the answers large. */
async function spaceWithEvents (t: TestApp, n: number) {
  const { alice, s } = await alicePublishedSpace(t, { title: 'Open garden', visibility: 40 })
  const start = Date.now() + 7 * 86_400_000
  for (let i = 0; i < n; i++) {
    const id = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
      title: `Garden day ${i}`,
      description: `Bring gloves, seeds and a friend. Meeting point ${i} by the gate.`,
      start_dt: new Date(start + i * 3_600_000).toISOString(),
      visibility: 40
    })).json().id as number
    await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/publish`, 204)
    await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/spaces`, 201, { space_id: s.id })
  }
  return { alice, spaceId: s.id as number }
}

for (const kind of databases()) {
  void describe(`${kind}: compressed answers`, () => {
    const t = useTestApp(kind)

    void it('a JSON list in the coding asked for, decoding to the plain answer; small ones and refusals as they are',
      async () => {
        const { alice } = await spaceWithEvents(t, 12)
        const url = '/api/v1/events?size=12'
        const plain = await t.as(alice, { method: 'GET', url })
        assert.equal(plain.statusCode, 200)
        assert.equal(plain.headers['content-encoding'], undefined)
        assert.ok(plain.rawPayload.length > 1024, `${plain.rawPayload.length} bytes`)
        const items = plain.json().items as Array<{ id: number }>
        assert.equal(items.length, 12)

        for (const [accept, expected] of [
          ['br', 'br'], ['gzip', 'gzip'], ['gzip, deflate, br', 'br'], ['gzip;q=1, br;q=0.5', 'gzip'], ['*', 'gzip'],
          ['identity', undefined], ['br;q=0, gzip;q=0', undefined], ['deflate', undefined]
        ] as const) {
          const res = await t.as(alice, { method: 'GET', url, headers: { 'accept-encoding': accept } })
          assert.equal(res.statusCode, 200, accept)
          assert.equal(res.headers['content-encoding'], expected, accept)
          if (expected !== undefined) {
            assert.match(String(res.headers.vary), /accept-encoding/i, accept)
            assert.ok(res.rawPayload.length < plain.rawPayload.length / 2, `${accept}: ${res.rawPayload.length} bytes`)
          }
          assert.deepEqual(JSON.parse(decode(expected, res.rawPayload)), plain.json(), accept)
        }

        // an answer under 1 KiB goes as it is
        const small = await t.as(alice, {
          method: 'GET', url: '/api/v1/feed-tokens', headers: { 'accept-encoding': 'br' }
        })
        assert.equal(small.statusCode, 200)
        assert.equal(small.headers['content-encoding'], undefined)
        assert.deepEqual(small.json().items, [])
      })

    void it('a public feed kept in memory: the same text and ETag in each coding, the same bytes again, 304 bare',
      async () => {
        const { spaceId } = await spaceWithEvents(t, 8)
        const url = `/api/v1/spaces/${spaceId}/calendar.ics`
        const plain = await t.app.inject({ method: 'GET', url })
        assert.equal(plain.statusCode, 200)
        assert.equal(plain.headers['content-encoding'], undefined)
        const etag = String(plain.headers.etag)
        for (const encoding of ['br', 'gzip'] as const) {
          const first = await t.app.inject({ method: 'GET', url, headers: { 'accept-encoding': encoding } })
          const second = await t.app.inject({ method: 'GET', url, headers: { 'accept-encoding': encoding } })
          for (const res of [first, second]) {
            assert.equal(res.statusCode, 200)
            assert.equal(res.headers['content-encoding'], encoding)
            assert.equal(res.headers['content-type'], 'text/calendar; charset=utf-8')
            assert.match(String(res.headers.vary), /accept-encoding/i)
            assert.equal(res.headers.etag, etag)
            assert.equal(decode(encoding, res.rawPayload), plain.body)
          }
          assert.ok(first.rawPayload.equals(second.rawPayload), 'the kept coding is sent again')
          const unchanged = await t.app.inject({
            method: 'GET', url, headers: { 'accept-encoding': encoding, 'if-none-match': etag }
          })
          assert.equal(unchanged.statusCode, 304)
          assert.equal(unchanged.rawPayload.length, 0)
          assert.equal(unchanged.headers['content-encoding'], undefined)
        }
      })

    void it('a CSV export compressed as it streams, decoding to the plain export', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const eventId = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: 'Export', start_dt: new Date(Date.now() + 86_400_000).toISOString()
      })).json().id as number
      for (const contactId of await insertContacts(t, tenant.id, 'alice', 40)) {
        await insertAttendee(t, tenant.id, { event_id: eventId, contact_id: contactId, status: 'confirmed' })
      }
      const url = `/api/v1/events/${eventId}/attendees/export`
      const plain = await t.as(alice, { method: 'GET', url })
      assert.equal(plain.statusCode, 200)
      assert.equal(plain.body.trim().split('\n').length, 41, 'a header and 40 attendees')
      const gz = await t.as(alice, { method: 'GET', url, headers: { 'accept-encoding': 'gzip' } })
      assert.equal(gz.statusCode, 200)
      assert.equal(gz.headers['content-encoding'], 'gzip')
      assert.equal(gz.headers['content-type'], 'text/csv; charset=utf-8')
      assert.equal(decode('gzip', gz.rawPayload), plain.body)
    })

    void it('read by a real HTTP client over a socket: fetch decodes br and gzip to the plain answers',
      async () => {
        const { alice, spaceId } = await spaceWithEvents(t, 12)
        const plainList = (await t.as(alice, { method: 'GET', url: '/api/v1/events?size=12' })).json()
        const plainFeed = (await t.app.inject({ method: 'GET', url: `/api/v1/spaces/${spaceId}/calendar.ics` })).body
        await t.app.listen({ host: '127.0.0.1', port: 0 })
        const { port } = t.app.server.address() as AddressInfo
        const base = `http://127.0.0.1:${port}`
        const list = await fetch(`${base}/api/v1/events?size=12`, {
          headers: { authorization: `Bearer ${alice}`, 'accept-encoding': 'br' }
        })
        assert.equal(list.status, 200)
        assert.equal(list.headers.get('content-encoding'), 'br')
        assert.deepEqual(await list.json(), plainList)
        const feed = await fetch(`${base}/api/v1/spaces/${spaceId}/calendar.ics`, {
          headers: { 'accept-encoding': 'gzip' }
        })
        assert.equal(feed.status, 200)
        assert.equal(feed.headers.get('content-encoding'), 'gzip')
        assert.equal(await feed.text(), plainFeed)
      })
  })
}

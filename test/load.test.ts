/**
 * Load and rate limits.
 *
 * Always: the rate limit refuses a caller over its quota with 429 ErrorModel and Retry-After,
 * while another caller of the same tenant goes on (app.inject, a small bucket).
 *
 * With LOAD_TEST=1 (for .ci/run), on a real listening server on 127.0.0.1, with autocannon:
 * - 10 s at 50 connections (one user each, over 4 tenants), a mix of creates, reads by id, lists,
 *   searches and merge-patches: zero errors, zero timeouts, zero non-2xx, and every contact
 *   acknowledged with 201 read back by id afterwards; the figures are printed;
 * - rate limits under load: one greedy caller on 24 connections gets 429s and no more than its
 *   bucket allows, while 24 other callers, each below its quota, get no 429 at all.
 */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { databases, useTestApp, type TestApp } from './helpers/build-app.ts'
import { validToken } from './helpers/tokens.ts'
import { problemIssues } from './helpers/problem.ts'

const LOAD = process.env.LOAD_TEST === '1'

interface AcRequest { method?: string, path?: string, headers?: Record<string, string>, body?: string }
interface AcContext { token?: string, lastId?: string }
interface AcRequestSpec {
  method: string
  setupRequest: (req: AcRequest, context: AcContext) => AcRequest | undefined
  onResponse?: (status: number, body: string, context: AcContext) => void
}
interface AcResult {
  requests: { total: number, average: number }
  latency: { p50: number, p99: number, max: number, average: number }
  throughput: { average: number }
  errors: number
  timeouts: number
  non2xx: number
  '2xx': number
  statusCodeStats: Record<string, { count: number }>
  duration: number
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AcResult>
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

async function listen (t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
}

const figures = (r: AcResult): string =>
  `${r.requests.total} requests in ${r.duration} s (${Math.round(r.requests.average)} req/s), ` +
  `latency p50 ${r.latency.p50} ms p99 ${r.latency.p99} ms max ${r.latency.max} ms, ` +
  `${Math.round(r.throughput.average / 1024)} KiB/s, errors ${r.errors}, timeouts ${r.timeouts}, ` +
  `non-2xx ${r.non2xx}, statuses ${Object.entries(
    r.statusCodeStats
  )
    .map(([s, v]) => `${s}×${v.count}`)
    .join(' ')}`

void describe('pglite: rate limits', () => {
  const t = useTestApp('pglite', { env: { RATE_LIMIT_CAPACITY: '10', RATE_LIMIT_REFILL_PER_SEC: '1' } })

  void it('answers 429 with Retry-After to a caller over its quota, and not to the other callers', async () => {
    const tenant = 'tenant-rate'
    const greedy = await validToken(t, { sub: 'greedy', tenant, roles: ['member'] })
    const other = await validToken(t, { sub: 'other', tenant, roles: ['member'] })
    const statuses: number[] = []
    let refused
    for (let i = 0; i < 25; i++) {
      const res = await t.as(greedy, { method: 'GET', url: '/api/v1/contacts' })
      statuses.push(res.statusCode)
      if (res.statusCode === 429) refused = res
    }
    assert.ok(statuses.includes(429), `no 429 in ${statuses.join(',')}`)
    assert.ok(statuses.filter(s => s === 200).length <= 10 + 3, 'no more than the bucket and its refill')
    assert.ok(refused !== undefined)
    assert.deepEqual(problemIssues(refused), [])
    assert.ok(Number(refused.headers['retry-after']) >= 1)
    assert.equal(refused.headers['ratelimit-remaining'], '0')
    const res = await t.as(other, { method: 'GET', url: '/api/v1/contacts' })
    assert.equal(res.statusCode, 200, 'another caller of the same tenant is not limited')
    // the upsert costs 5 tokens: two of them empty a fresh bucket of 10
    const bulk = await validToken(t, { sub: 'bulk', tenant, roles: ['member'] })
    const upsert = async (n: number) =>
      await t.as(bulk, {
        method: 'POST',
        url: '/api/v1/contacts/upsert',
        payload: { contacts: [{ email: `u${n}@example.test` }] }
      })
    assert.equal((await upsert(1)).statusCode, 200)
    assert.equal((await upsert(2)).statusCode, 200)
    assert.equal((await upsert(3)).statusCode, 429)
  })
})

for (const kind of databases()) {
  void describe(`${kind}: load on a listening server`, { skip: LOAD ? false : 'set LOAD_TEST=1 to run it' }, () => {
    const t = useTestApp(kind)

    void it('serves a mix of reads and writes at 50 connections with no error and no lost write', async () => {
      const url = await listen(t)
      const tokens: string[] = []
      for (let i = 0; i < 50; i++) {
        tokens.push(await validToken(t, { sub: `load-${i}`, tenant: `load-tenant-${i % 4}`, roles: ['member'] }))
      }
      let next = 0
      const created: Array<{ id: string, token: string, email: string }> = []
      const auth = (c: AcContext): Record<string, string> => {
        c.token ??= tokens[next++ % tokens.length]
        return { authorization: `Bearer ${c.token ?? ''}`, 'content-type': 'application/json' }
      }
      const requests: AcRequestSpec[] = [
        {
          method: 'POST',
          setupRequest: (req, c) => ({
            ...req,
            method: 'POST',
            path: '/api/v1/contacts',
            headers: auth(c),
            body: JSON.stringify({
              first_name: 'Load',
              email: `load-${created.length}-${Math.random().toString(36).slice(2)}@example.test`
            })
          }),
          onResponse: (status, body, c) => {
            if (status !== 201) return
            const row = JSON.parse(body) as { id: string; email: string }
            c.lastId = row.id
            created.push({ id: row.id, token: c.token ?? '', email: row.email })
          }
        },
        {
          method: 'GET',
          setupRequest: (req, c) => ({
            ...req,
            method: 'GET',
            path: c.lastId !== undefined ? `/api/v1/contacts/${c.lastId}` : '/api/v1/contacts',
            headers: auth(c),
            body: ''
          })
        },
        {
          method: 'GET',
          setupRequest: (req, c) => ({
            ...req,
            method: 'GET',
            path: '/api/v1/contacts?size=10&sort_by=last_name',
            headers: auth(c),
            body: ''
          })
        },
        {
          method: 'PATCH',
          setupRequest: (req, c) =>
            c.lastId === undefined
              ? { ...req, method: 'GET', path: '/api/v1/auth/me', headers: auth(c), body: '' }
              : {
                  ...req,
                  method: 'PATCH',
                  path: `/api/v1/contacts/${c.lastId}`,
                  headers: auth(c),
                  body: JSON.stringify({ notes: 'patched under load' })
                }
        },
        {
          method: 'GET',
          setupRequest: (req, c) => ({
            ...req,
            method: 'GET',
            path: '/api/v1/contacts/search?query=load&limit=5',
            headers: auth(c),
            body: ''
          })
        }
      ]
      const result = await autocannon({ url, connections: 50, duration: 10, timeout: 30, requests })
      console.log(`load (${kind}): ${figures(result)}; ${created.length} contacts created`)

      // every acknowledged write is there
      const missing: string[] = []
      for (const c of created) {
        const res = await t.as(c.token, { method: 'GET', url: `/api/v1/contacts/${c.id}` })
        if (res.statusCode !== 200 || res.json<{ email: string }>().email !== c.email) {
          missing.push(`${c.id}: ${res.statusCode}`)
        }
      }
      console.log(`load (${kind}): ${created.length} created contacts read back, ${missing.length} missing`)
      assert.equal(result.errors, 0)
      assert.equal(result.timeouts, 0)
      assert.equal(result.non2xx, 0, JSON.stringify(result.statusCodeStats))
      assert.ok(created.length > 0)
      assert.deepEqual(missing, [])
    })
  })
}

void describe('pglite: rate limits under load', { skip: LOAD ? false : 'set LOAD_TEST=1 to run it' }, () => {
  const CAPACITY = 200
  const REFILL = 20
  const t = useTestApp('pglite', {
    env: { RATE_LIMIT_CAPACITY: String(CAPACITY), RATE_LIMIT_REFILL_PER_SEC: String(REFILL) }
  })

  void it('limits a greedy caller while 24 callers under their quota see no 429', async () => {
    const url = await listen(t)
    const greedy = await validToken(t, { sub: 'greedy', tenant: 'tenant-load', roles: ['member'] })
    const polite: string[] = []
    for (let i = 0; i < 24; i++) {
      polite.push(await validToken(t, { sub: `polite-${i}`, tenant: 'tenant-load', roles: ['member'] }))
    }
    let next = 0
    const started = Date.now()
    const PER_CALLER = CAPACITY - 50 // each polite connection (one user) stays below its bucket
    const [hog, fair] = await Promise.all([
      autocannon({
        url,
        connections: 24,
        duration: 8,
        timeout: 30,
        headers: { authorization: `Bearer ${greedy}` },
        requests: [{ method: 'GET', path: '/api/v1/contacts?size=5' }]
      }),
      autocannon({
        url,
        connections: 24,
        // a slow machine answers late, never wrongly: a timeout would reconnect with another caller's token
        timeout: 30,
        maxConnectionRequests: PER_CALLER,
        requests: [
          {
            method: 'GET',
            setupRequest: (req: AcRequest, c: AcContext) => {
              c.token ??= polite[next++ % polite.length]
              return {
                ...req,
                method: 'GET',
                path: '/api/v1/contacts?size=5',
                headers: { authorization: `Bearer ${c.token ?? ''}` }
              }
            }
          }
        ]
      })
    ])
    const elapsed = Math.ceil((Date.now() - started) / 1000) + 1
    console.log(`rate limit under load: greedy ${figures(hog)}`)
    console.log(`rate limit under load: polite ${figures(fair)}`)
    const hog429 = hog.statusCodeStats['429']?.count ?? 0
    assert.ok(hog429 > 0, 'the greedy caller is refused')
    assert.ok(
      hog['2xx'] <= CAPACITY + REFILL * elapsed,
      `the greedy caller got ${hog['2xx']} answers, more than its bucket allows`
    )
    assert.equal(fair.statusCodeStats['429']?.count ?? 0, 0, 'callers under their quota are never refused')
    assert.equal(fair.non2xx, 0)
    assert.equal(fair.errors, 0)
  })
})

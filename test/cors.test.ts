/**
 * CORS (docs/api-conventions.md, "CORS"): off unless CORS_ORIGINS names origins. Off, a preflight
 * is answered like any method a path does not serve (405 ErrorModel with Allow, 404 for an unknown
 * path) without Access-Control-* headers; on, a preflight needs no token and allows exactly the
 * listed origins, with the headers the API reads and sends. Never a 401 for a preflight.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig, ConfigError } from '../src/config.ts'
import { newTenant, useTestApp } from './helpers/build-app.ts'
import { problemIssues } from './helpers/problem.ts'

const APP = 'https://app.example.org'
const preflight = (origin: string, url = '/api/v1/contacts') => ({
  method: 'OPTIONS' as const,
  url,
  headers: {
    origin,
    'access-control-request-method': 'PATCH',
    'access-control-request-headers': 'authorization, content-type, if-match'
  }
})

void describe('CORS off (CORS_ORIGINS unset)', () => {
  const t = useTestApp('pglite')

  void it('answers a preflight 405 ErrorModel with Allow (404 on an unknown path), ' +
    'no CORS headers, no 401', async () => {
    const res = await t.app.inject(preflight(APP))
    assert.equal(res.statusCode, 405)
    assert.deepEqual(problemIssues(res), [])
    assert.equal(res.headers.allow, 'GET, POST')
    assert.equal(res.headers['access-control-allow-origin'], undefined)
    const unknown = await t.app.inject(preflight(APP, '/api/v1/nothing-here'))
    assert.equal(unknown.statusCode, 404)
    assert.deepEqual(problemIssues(unknown), [])
    const read = await t.app.inject({ method: 'GET', url: '/health', headers: { origin: APP } })
    assert.equal(read.headers['access-control-allow-origin'], undefined)
  })
})

void describe('CORS on (CORS_ORIGINS=https://app.example.org)', () => {
  const t = useTestApp('pglite', { env: { CORS_ORIGINS: APP } })

  void it("answers a listed origin's preflight 204 without a token, " +
    "allowing the API's methods and headers", async () => {
    const res = await t.app.inject(preflight(APP))
    assert.equal(res.statusCode, 204)
    assert.equal(res.headers['access-control-allow-origin'], APP)
    assert.match(String(res.headers['access-control-allow-methods']), /PATCH/)
    for (const h of ['Authorization', 'If-Match', 'Idempotency-Key']) {
      assert.match(String(res.headers['access-control-allow-headers']), new RegExp(h))
    }
    // even a bad token is not looked at on a preflight
    const withBadToken = await t.app.inject({
      ...preflight(APP),
      headers: { ...preflight(APP).headers, authorization: 'Bearer nonsense' }
    })
    assert.equal(withBadToken.statusCode, 204)
  })

  void it('gives another origin no Access-Control-Allow-Origin', async () => {
    const res = await t.app.inject(preflight('https://evil.example.net'))
    assert.notEqual(res.statusCode, 401)
    assert.equal(res.headers['access-control-allow-origin'], undefined)
  })

  void it('lets a listed origin read the answer and its headers (ETag, Location, RateLimit-*)', async () => {
    const token = await newTenant(t).user('alice')
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/contacts',
      headers: { origin: APP, authorization: `Bearer ${token}` },
      payload: { first_name: 'Ada' }
    })
    assert.equal(res.statusCode, 201)
    assert.equal(res.headers['access-control-allow-origin'], APP)
    for (const h of ['ETag', 'Location', 'RateLimit-Remaining', 'Retry-After']) {
      assert.match(String(res.headers['access-control-expose-headers']), new RegExp(h))
    }
  })
})

void describe('CORS_ORIGINS', () => {
  void it('takes * or origins, and refuses anything else naming the variable', () => {
    assert.deepEqual(loadConfig({ CORS_ORIGINS: `${APP}, http://localhost:5173` }).corsOrigins, [
      APP,
      'http://localhost:5173'
    ])
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, ['*'])
    assert.deepEqual(loadConfig({}).corsOrigins, [])
    for (const bad of [`${APP}/`, `${APP}/path`, 'ftp://files.example.org', 'app.example.org', 'not a url']) {
      assert.throws(
        () => loadConfig({ CORS_ORIGINS: bad }),
        (err: unknown) => err instanceof ConfigError && err.variable === 'CORS_ORIGINS',
        bad
      )
    }
  })
})

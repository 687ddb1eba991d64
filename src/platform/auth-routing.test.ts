/**
 * Authentication and rate limits are decided on the route the router matched, never on the raw
 * URL: a path that reaches an `/api/v1` route through percent-encoding, doubled slashes, dot
 * segments or another spelling is refused 401 (or not found), never handled without a caller.
 * Requests without a valid token (public pages, the IdP webhook, refused tokens) draw on a bucket
 * of their client address; X-Forwarded-For counts only from TRUST_PROXY.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import { buildApp } from '../app.ts'
import { ConfigError, loadConfig } from '../config.ts'
import { databases, freshDatabase, newTenant, useTestApp } from '../../test/helpers/build-app.ts'
import { routerRoutes } from '../../test/helpers/routes.ts'
import { problemIssues } from '../../test/helpers/problem.ts'
import { registerAuth, routeAuthMode } from './auth/plugin.ts'
import { registerErrorHandling } from './http/error-handler.ts'
import type { TokenVerifier } from './auth/verify.ts'

/** Other spellings of an `/api/v1/...` path (params already filled in). */
function variants (url: string): string[] {
  const rest = url.slice('/api/v1'.length) // "/contacts/1"
  const last = rest.split('/').filter(s => s !== '').at(-1) ?? ''
  const enc = (c: string): string => `%${c.charCodeAt(0).toString(16)}`
  const encUpper = (c: string): string => enc(c).toUpperCase()
  return [
    `/${enc('a')}pi/v1${rest}`,
    `/${encUpper('a')}pi/v1${rest}`,
    `/a${enc('p')}${enc('i')}/${enc('v')}1${rest}`,
    `/api/v1${rest.replace(last, enc(last[0] ?? 'x') + last.slice(1))}`,
    `/api${enc('/')}v1${rest}`,
    `//api/v1${rest}`,
    `/api//v1${rest}`,
    `/api/v1/${rest}`,
    `/api/v1/.${rest}`,
    `/api/v1/./${rest.slice(1)}`,
    `/api/x/../v1${rest}`,
    `/api/v1/x/..${rest}`,
    `/api/v1/%2e${rest}`,
    `/./api/v1${rest}`,
    `/API/v1${rest}`,
    `/Api/V1${rest}`,
    `/api/V1${rest}`,
    `/api/v1${rest.toUpperCase()}`,
    `/api/v1${rest}/`,
    `/api/v1${rest}//`,
    `/api/v1${rest};x=1`,
    `/api/v1${rest}%2F`,
    `/api/v1${rest}?a=1#f`,
    `/api/v1${rest}%00`,
    `/api/v1${rest}%20`,
    `\\api\\v1${rest.replaceAll('/', '\\')}`
  ]
}

for (const kind of databases()) {
  void describe(`${kind}: authentication on the matched route`, () => {
    const t = useTestApp(kind)

    void it('refuses /%61pi/v1/contacts and its kin 401, and they change nothing', async () => {
      const alice = await newTenant(t).user('alice', ['admin'])
      for (const url of ['/%61pi/v1/contacts', '/%61%70%69/v1/contacts', '/api/v1/%63ontacts', '/api/v1/%63ontacts/']) {
        const get = await t.app.inject({ method: 'GET', url })
        assert.equal(get.statusCode, 401, `GET ${url}: ${get.body}`)
        assert.deepEqual(problemIssues(get), [], url)
        assert.equal(get.headers['www-authenticate'], 'Bearer')
        const post = await t.app.inject({
          method: 'POST',
          url,
          payload: { first_name: 'Mallory', email: 'm@example.test' }
        })
        assert.equal(post.statusCode, 401, `POST ${url}: ${post.body}`)
        // with a token the same spelling is the same route
        const ok = await t.as(alice, { method: 'GET', url })
        assert.equal(ok.statusCode, 200, `GET ${url} with a token: ${ok.body}`)
      }
      assert.equal((await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })).json<{ total: number }>().total, 0)
    })

    void it('never handles a route that needs a token without one, whatever the spelling of its path', async () => {
      // every route of the router; those that answer their plain path 401 without a token need one
      const routes: Array<{ method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string }> = []
      for (const entry of routerRoutes(t.app)) {
        const [method, pattern] = entry.split(' ') as [string, string]
        if (!pattern.startsWith('/api/') || !['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) continue
        const url = pattern.replace(/:[A-Za-z_]+(\|:[A-Za-z_]+)*/g, '1')
        const plain = await t.app.inject({
          method: method as 'GET',
          url,
          ...(method !== 'GET' && method !== 'DELETE' ? { payload: {} } : {})
        })
        if (plain.statusCode === 401) routes.push({ method: method as 'GET', url })
      }
      assert.ok(routes.length > 50, `only ${routes.length} routes need a token`)
      const seen: string[] = []
      let refused = 0
      for (const route of routes) {
        for (const u of variants(route.url)) {
          const res = await t.app.inject({
            method: route.method,
            url: u,
            ...(route.method !== 'GET' && route.method !== 'DELETE' ? { payload: {} } : {})
          })
          if (![400, 401, 404, 405].includes(res.statusCode)) {
            seen.push(`${route.method} ${u}: ${res.statusCode} ${res.body.slice(0, 120)}`)
          } else if (problemIssues(res).length > 0) seen.push(`${route.method} ${u}: ${problemIssues(res).join('; ')}`)
          if (res.statusCode === 401) refused++
        }
      }
      assert.deepEqual(seen.slice(0, 20), [])
      assert.ok(refused > routes.length, 'the encoded spellings reach their routes and are refused 401')
    })

    void it('keeps the public routes public: health, readiness, documents, ' +
      'the public page and the webhook', async () => {
      for (const url of [
        '/health',
        '/ready',
        '/openapi.json',
        '/schemas/Contact.json',
        '/docs/',
        '/docs/json',
        '/%68ealth'
      ]) {
        const res = await t.app.inject({ method: 'GET', url })
        assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`)
      }
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/v1/public/spaces/nope' })).statusCode, 404)
      const hook = await t.app.inject({ method: 'POST', url: '/api/v1/integrations/idp/webhook', payload: {} })
      assert.notEqual(hook.statusCode, 401, 'the webhook authenticates by its signature, not a token')
    })
  })
}

void describe('a route is public only if it declares itself public', () => {
  const verifier: TokenVerifier = {
    devMode: true,
    verify: async () => { throw new Error('no token is valid here') }
  } as unknown as TokenVerifier

  void it('requires a token on any route outside the platform documents that declares nothing', async () => {
    const app: FastifyInstance = Fastify({ logger: false })
    registerErrorHandling(app, 'http://localhost')
    registerAuth(app, verifier, { current: undefined })
    app.get('/internal/report', async () => ({ secret: true }))
    app.get('/API/V1/Things', async () => ({ secret: true }))
    app.get('/hooks/in', { config: { auth: 'none' } }, async () => ({ open: true }))
    app.get('/health', async () => ({ ok: true }))
    await app.ready()
    assert.equal((await app.inject({ method: 'GET', url: '/internal/report' })).statusCode, 401)
    assert.equal((await app.inject({ method: 'GET', url: '/API/V1/Things' })).statusCode, 401)
    assert.equal((await app.inject({ method: 'GET', url: '/hooks/in' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/nowhere' })).statusCode, 404)
    await app.close()
    assert.equal(routeAuthMode('/api/v1/contacts', undefined), 'required')
    assert.equal(routeAuthMode('/docs/static/index.html', undefined), 'none')
    assert.equal(routeAuthMode('/docsx', undefined), 'required')
    assert.equal(routeAuthMode('/api/v1/public/spaces/:id', 'optional'), 'optional')
  })
})

// ---- the per-address bucket of requests without a valid token

interface Built { app: FastifyInstance, close: () => Promise<void>, token: (sub: string) => Promise<string> }

/** The statuses of `n` requests to an app sent one after the other; `request(i)` is the i-th. */
async function statusesOf (b: Built, n: number, request: (i: number) => InjectOptions): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < n; i++) statuses.push((await b.app.inject(request(i))).statusCode)
  return statuses
}

/** `GET /health` from the address `peer`, with `forwardedFor` in X-Forwarded-For. */
const health = (peer: string, forwardedFor: string): InjectOptions =>
  ({ method: 'GET', url: '/health', remoteAddress: peer, headers: { 'x-forwarded-for': forwardedFor } })

async function appWith (env: Record<string, string>): Promise<Built> {
  const db = await freshDatabase('pglite')
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-anon-rl-'))
  const config = loadConfig({
    DATA_DIR: dataDir,
    WORKERS: 'false',
    RATE_LIMIT_CAPACITY: '1000',
    RATE_LIMIT_REFILL_PER_SEC: '100',
    ...env
  })
  const { app } = await buildApp(config, { database: db.handle, logger: false })
  await app.ready()
  const { loadOrCreateDevKeys, signDevToken } = await import('./auth/dev-keys.ts')
  const keys = await loadOrCreateDevKeys(dataDir)
  return {
    app,
    token: async (sub) => await signDevToken(keys, { sub, tenant: 'tenant-anon', roles: ['member'] }),
    close: async () => {
      await app.close()
      await db.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

const randomAddress = (): string => `10.${crypto.randomInt(256)}.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`

void describe('rate limit of requests without a valid token', () => {
  let b: Built
  before(async () => { b = await appWith({ RATE_LIMIT_ANON_CAPACITY: '3', RATE_LIMIT_ANON_REFILL_PER_SEC: '1' }) })
  after(async () => { await b.close() })

  void it('limits the public page per client address: 429 ErrorModel with Retry-After, ' +
    'other addresses unaffected', async () => {
    const address = randomAddress()
    const statuses: number[] = []
    let limited
    for (let i = 0; i < 8; i++) {
      const res = await b.app.inject({ method: 'GET', url: '/api/v1/public/spaces/nope', remoteAddress: address })
      statuses.push(res.statusCode)
      if (res.statusCode === 429) limited = res
    }
    assert.ok(statuses.includes(429), statuses.join(','))
    assert.ok(statuses.filter(s => s === 404).length <= 3 + 2, statuses.join(','))
    assert.ok(limited !== undefined)
    assert.deepEqual(problemIssues(limited), [])
    assert.ok(Number(limited.headers['retry-after']) >= 1)
    assert.equal(limited.headers['ratelimit-limit'], '3')
    assert.equal(
      (await b.app.inject({ method: 'GET', url: '/api/v1/public/spaces/nope', remoteAddress: randomAddress() }))
        .statusCode,
      404
    )
  })

  void it('limits the IdP webhook and refused tokens per address; a valid token keeps its own bucket', async () => {
    const address = randomAddress()
    const hook = await statusesOf(b, 6, () => ({
      method: 'POST',
      url: '/api/v1/integrations/idp/webhook',
      payload: {},
      remoteAddress: address
    }))
    assert.ok(hook.includes(429), hook.join(','))

    const guesser = randomAddress()
    const guesses = await statusesOf(b, 8, i => ({
      method: 'GET',
      url: '/api/v1/contacts',
      headers: { authorization: `Bearer a.b${i}.c` },
      remoteAddress: guesser
    }))
    assert.deepEqual(guesses.slice(0, 3), [401, 401, 401])
    assert.ok(guesses.includes(429), guesses.join(','))
    const noToken = await b.app.inject({ method: 'GET', url: '/api/v1/contacts', remoteAddress: guesser })
    assert.equal(noToken.statusCode, 429, 'a request without a token from the same address shares the bucket')
    assert.deepEqual(problemIssues(noToken), [])
    assert.ok(Number(noToken.headers['retry-after']) >= 1)
    // a valid token from the same address is not limited by the address's bucket
    const ok = await b.app.inject({
      method: 'GET',
      url: '/api/v1/contacts',
      headers: { authorization: `Bearer ${await b.token('alice')}` },
      remoteAddress: guesser
    })
    assert.equal(ok.statusCode, 200, ok.body)
    assert.equal(ok.headers['ratelimit-limit'], '1000')
    // another address is not limited
    assert.equal(
      (await b.app.inject({ method: 'GET', url: '/api/v1/contacts', remoteAddress: randomAddress() })).statusCode,
      401
    )
  })

  void it('ignores X-Forwarded-For when TRUST_PROXY is unset', async () => {
    const address = randomAddress()
    const statuses = await statusesOf(b, 8, () => health(address, randomAddress()))
    assert.ok(statuses.includes(429), `a forged X-Forwarded-For escaped the bucket: ${statuses.join(',')}`)
  })
})

void describe('TRUST_PROXY', () => {
  let b: Built
  before(async () => {
    b = await appWith({
      RATE_LIMIT_ANON_CAPACITY: '2',
      RATE_LIMIT_ANON_REFILL_PER_SEC: '1',
      TRUST_PROXY: '127.0.0.1,192.0.2.0/24'
    })
  })
  after(async () => { await b.close() })

  void it('keys the bucket by the client X-Forwarded-For names when the peer is a trusted proxy, ' +
    'and by the peer otherwise', async () => {
    const client = randomAddress()
    const viaProxy = await statusesOf(b, 5, () => health('192.0.2.7', client))
    assert.ok(viaProxy.includes(429), viaProxy.join(','))
    // another client behind the same proxy has its own bucket
    assert.equal((await b.app.inject(health('192.0.2.7', randomAddress()))).statusCode, 200)
    // an untrusted peer cannot choose its key
    const peer = randomAddress()
    const direct = await statusesOf(b, 5, () => health(peer, randomAddress()))
    assert.ok(direct.includes(429), direct.join(','))
  })

  void it('refuses a bad value at start naming the variable', () => {
    for (const bad of ['yes', '10.0.0.0/33', 'proxy.example', '11', ',']) {
      assert.throws(
        () => loadConfig({ TRUST_PROXY: bad }),
        (e: unknown) => e instanceof ConfigError && e.variable === 'TRUST_PROXY',
        bad
      )
    }
    assert.equal(loadConfig({}).trustProxy, false)
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2)
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,::1' }).trustProxy, [
      'loopback',
      '10.0.0.0/8',
      '::1'
    ])
    assert.throws(() => loadConfig({ RATE_LIMIT_ANON_CAPACITY: '0' }), /RATE_LIMIT_ANON_CAPACITY/)
    assert.throws(() => loadConfig({ RATE_LIMIT_ANON_REFILL_PER_SEC: 'fast' }), /RATE_LIMIT_ANON_REFILL_PER_SEC/)
    assert.deepEqual(loadConfig({ RATE_LIMIT_CAPACITY: '50' }).anonymousRateLimit, { capacity: 50, refillPerSec: 20 })
  })
})

const redisUrl = process.env.TEST_REDIS_URL
void describe(
  'anonymous buckets in Redis',
  { skip: redisUrl === undefined || redisUrl === '' ? 'TEST_REDIS_URL not set' : false },
  () => {
    void it('shares one address bucket between two instances', async () => {
      const env = { RATE_LIMIT_ANON_CAPACITY: '4', RATE_LIMIT_ANON_REFILL_PER_SEC: '1', REDIS_URL: redisUrl ?? '' }
      const one = await appWith(env)
      const two = await appWith(env)
      try {
        const address = randomAddress()
        const statuses = []
        for (let i = 0; i < 3; i++) {
          statuses.push((await one.app.inject({ method: 'GET', url: '/health', remoteAddress: address })).statusCode)
          statuses.push((await two.app.inject({ method: 'GET', url: '/health', remoteAddress: address })).statusCode)
        }
        assert.deepEqual(statuses.slice(0, 4), [200, 200, 200, 200])
        assert.ok(statuses.slice(4).includes(429), statuses.join(','))
      } finally {
        await one.close()
        await two.close()
      }
    })
  }
)

/**
 * Authentication that explains itself, against a real identity provider on 127.0.0.1 (discovery
 * and JWKS over HTTP, which this suite can take away and bring back):
 *
 * - a token refused for its audience, issuer, unknown `kid` or expiry answers 401 as before and
 *   leaves one `info` log line with the reason and the token's unverified `kid`/`iss`/`aud`/`sub`
 *   (never the token or its signature); the same token again is logged at `debug` only;
 * - a provider that does not answer: tokens it must verify answer 503 ErrorModel + Retry-After, `/ready`
 *   answers 503 naming the provider, the start does not fail; once it answers again (asked at most
 *   every 5 s: crossed with a mocked `Date`), both answer 200. While it is away, keys it gave before
 *   still verify their tokens;
 * - discovery naming another issuer than OIDC_ISSUER (a trailing slash) stops the start with
 *   ConfigError('OIDC_ISSUER') naming both values; found only after a failed start, `/ready` says
 *   `misconfigured`.
 *
 * The apps share one PGlite database (authentication does not touch it; `/ready` asks it).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, it, mock } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose'
import { buildApp } from '../src/app.ts'
import { ConfigError, loadConfig, type Config } from '../src/config.ts'
import { createTokenVerifier } from '../src/platform/auth/verify.ts'
import { freshDatabase } from './helpers/build-app.ts'
import { problemIssues } from './helpers/problem.ts'

const AUDIENCE = 'collab-api'

interface Key { kid: string, privateKey: CryptoKey, jwk: JWK }
interface LogLine {
  level: number
  msg: string
  refusal?: { reason: string; status: number; repeat?: boolean; token?: Record<string, unknown> }
  [k: string]: unknown
}

async function newKey (kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } }
}

/** A small identity provider: `down` drops every connection; `issuerSuffix` makes discovery name another issuer. */
class Provider {
  readonly keys: Key[] = []
  down = false
  issuerSuffix = ''
  issuer = ''
  private server: http.Server | undefined

  async start (): Promise<void> {
    this.server = http.createServer((req, res) => {
      if (this.down) {
        req.socket.destroy()
        return
      }
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ issuer: `${this.issuer}${this.issuerSuffix}`, jwks_uri: `${this.issuer}/keys` }))
      } else if (req.url === '/keys') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ keys: this.keys.map(k => k.jwk) }))
      } else {
        res.writeHead(404).end()
      }
    })
    await new Promise<void>(resolve => this.server?.listen(0, '127.0.0.1', resolve))
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async stop (): Promise<void> {
    this.server?.closeAllConnections()
    await new Promise(resolve => this.server?.close(resolve))
  }
}

/** Captures the app's pino lines. */
class LogCapture extends Writable {
  readonly lines: LogLine[] = []
  readonly raw: string[] = []
  override _write (chunk: Buffer, _enc: string, done: () => void): void {
    for (const line of chunk.toString().split('\n').filter(l => l !== '')) {
      this.raw.push(line)
      this.lines.push(JSON.parse(line) as LogLine)
    }
    done()
  }

  /** lines written since `mark` */
  since (mark: number): LogLine[] { return this.lines.slice(mark) }
}

const INFO = 30
const WARN = 40
const DEBUG = 20

void describe('pglite: authentication refusals explained, an unreachable identity provider', () => {
  const provider = new Provider()
  const log = new LogCapture()
  let database: Awaited<ReturnType<typeof freshDatabase>>
  let dataDir = ''
  let k1: Key
  let k2: Key
  let stray: Key
  const apps: FastifyInstance[] = []

  const configFor = (p: Provider): Config => loadConfig({
    DATA_DIR: dataDir,
    BASE_URL: 'http://localhost:8080',
    WORKERS: 'false',
    RATE_LIMIT_CAPACITY: '1000000',
    RATE_LIMIT_REFILL_PER_SEC: '100000',
    OIDC_ISSUER: p.issuer,
    OIDC_AUDIENCE: AUDIENCE
  })

  async function app (migrate = false): Promise<FastifyInstance> {
    const built = await buildApp(configFor(provider), {
      database: database.handle,
      migrate,
      logger: { level: 'debug', stream: log }
    })
    await built.app.ready()
    apps.push(built.app)
    return built.app
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-oidc-refusals-'))
    k1 = await newKey('key-1')
    k2 = await newKey('key-2')
    stray = await newKey('key-never-published')
    provider.keys.push(k1)
    await provider.start()
    database = await freshDatabase('pglite')
  })
  after(async () => {
    mock.timers.reset()
    for (const a of apps) await a.close()
    await database.drop()
    await provider.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  async function token (key: Key, o: { aud?: string, iss?: string, exp?: number, sub?: string } = {}): Promise<string> {
    return await new SignJWT({ tenant_id: 'tenant-refusals', roles: ['member'] })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(o.iss ?? provider.issuer).setSubject(o.sub ?? 'user-ada').setAudience(o.aud ?? AUDIENCE)
      .setIssuedAt().setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 600)
      .sign(key.privateKey)
  }
  const me = async (a: FastifyInstance, tok: string) =>
    await a.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${tok}` } })

  void it('logs why a token is refused (audience, issuer, unknown kid, expiry) at info, a repeat at debug, ' +
    'never the token; the 401 stays as before', async () => {
    const a = await app(true)
    assert.equal((await me(a, await token(k1))).statusCode, 200, 'the provider works')
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['wrong audience (aud)', await token(k1, { aud: 'another-api' }), { aud: 'another-api', kid: 'key-1' }],
      ['wrong issuer (iss)', await token(k1, { iss: 'https://evil.example' }), { iss: 'https://evil.example' }],
      ['unknown signing key (kid)', await token(stray), { kid: 'key-never-published' }],
      ['expired (exp)', await token(k1, { exp: Math.floor(Date.now() / 1000) - 3600 }), { sub: 'user-ada' }]
    ]
    for (const [reason, tok, facts] of cases) {
      const mark = log.lines.length
      const res = await me(a, tok)
      assert.equal(res.statusCode, 401, `${reason}: ${res.body}`)
      assert.deepEqual(problemIssues(res), [], reason)
      assert.equal(
        res.json<{ detail: string }>().detail,
        'invalid or expired token',
        'the answer says no more than before'
      )
      assert.equal(res.headers['www-authenticate'], 'Bearer')
      const lines = log.since(mark).filter(l => l.refusal !== undefined)
      assert.equal(lines.length, 1, `${reason}: one line, got ${JSON.stringify(lines)}`)
      const line = lines[0]
      assert.equal(line?.level, INFO, reason)
      assert.equal(line?.refusal?.reason, reason)
      assert.equal(line?.refusal?.status, 401)
      assert.ok(line?.msg.includes(reason), line?.msg)
      for (const [k, v] of Object.entries(facts)) assert.equal(line?.refusal?.token?.[k], v, `${reason}: ${k}`)
      assert.equal(typeof line?.reqId, 'string', 'tied to its request')
      const signature = tok.split('.')[2] ?? ''
      for (const raw of log.raw.slice(mark)) {
        assert.ok(!raw.includes(tok) && !raw.includes(signature), `${reason}: the token is never logged: ${raw}`)
      }

      // the same token again: the same 401, logged at debug only
      const again = log.lines.length
      assert.equal((await me(a, tok)).statusCode, 401)
      const repeats = log.since(again).filter(l => l.refusal !== undefined)
      assert.equal(repeats.length, 1)
      assert.equal(repeats[0]?.level, DEBUG, `${reason}: a repeat is debug`)
      assert.equal(repeats[0]?.refusal?.repeat, true)
      assert.equal(repeats[0]?.refusal?.reason, reason)
    }
  })

  void it('keeps a long unverified claim short in the log', async () => {
    const a = apps[0] as FastifyInstance
    const mark = log.lines.length
    assert.equal((await me(a, await token(k1, { aud: 'x'.repeat(5000) }))).statusCode, 401)
    const line = log.since(mark).find(l => l.refusal !== undefined)
    assert.ok(line !== undefined, 'logged')
    assert.ok(String(line.refusal?.token?.aud).length < 200, 'bounded')
  })

  void it('answers 503 + Retry-After while the provider is away, with the keys it gave before still working; ' +
    '/ready names it', async () => {
    const a = apps[0] as FastifyInstance
    mock.timers.enable({ apis: ['Date'], now: Date.now() })
    try {
      const known = await token(k1, { sub: 'user-known' })
      provider.down = true
      provider.keys.push(k2) // a rotation the service cannot see while the provider is away
      mock.timers.tick(31_000) // past the JWKS cool-down: an unknown kid would be worth a fetch
      const mark = log.lines.length
      const res = await me(a, await token(k2))
      assert.equal(res.statusCode, 503, res.body)
      assert.deepEqual(problemIssues(res), [])
      assert.equal(res.headers['retry-after'], '5')
      assert.equal((await me(a, known)).statusCode, 200, 'a key fetched before still verifies its tokens')
      const ready = await a.inject({ method: 'GET', url: '/ready' })
      assert.equal(ready.statusCode, 503)
      assert.equal(ready.headers['retry-after'], '5')
      assert.match(
        ready.json<{ detail: string }>().detail,
        /^identity provider unreachable \(http:\/\/127\.0\.0\.1:\d+\): JWKS at http:\/\/127\.0\.0\.1:\d+\/keys: /
      )
      const lines = log.since(mark)
      assert.ok(
        lines.some(l => l.level === WARN && l.msg.startsWith('identity provider unreachable')),
        'the change is logged once at warn'
      )
      const refusals = lines.filter(l => l.refusal?.status === 503)
      assert.equal(refusals[0]?.level, WARN, 'the first refusal of the outage is warn')
      assert.match(refusals[0]?.refusal?.reason ?? '', /^identity provider unreachable: JWKS at /)
      assert.ok(!lines.some(l => l.level >= 50), 'no error lines')

      mock.timers.tick(6_000)
      const later = log.lines.length
      assert.equal((await me(a, await token(k2, { sub: 'user-again' }))).statusCode, 503)
      assert.deepEqual(
        log
          .since(later)
          .filter(l => l.refusal !== undefined)
          .map(l => l.level),
        [DEBUG],
        'later refusals of the outage are debug'
      )

      provider.down = false
      assert.equal((await me(a, await token(k2, { sub: 'user-soon' }))).statusCode, 503, 'not asked again before 5 s')
      mock.timers.tick(6_000)
      const back = log.lines.length
      assert.equal(
        (await a.inject({ method: 'GET', url: '/ready' })).statusCode,
        200,
        '/ready asks again and sees it back'
      )
      assert.equal((await me(a, await token(k2, { sub: 'user-back' }))).statusCode, 200, 'the rotated key is known now')
      assert.ok(log.since(back).some(l => l.level === INFO && l.msg.startsWith('identity provider answers again')))
    } finally {
      provider.down = false
      mock.timers.reset()
    }
  })

  void it('starts while the provider is unreachable: 503 and /ready 503 until it answers, then 200', async () => {
    provider.down = true
    const mark = log.lines.length
    const a = await app()
    try {
      assert.ok(
        log
          .since(mark)
          .some(
            l => l.level === WARN && l.msg.startsWith('identity provider unreachable at start: OIDC discovery at ')
          ),
        'said at start'
      )
      mock.timers.enable({ apis: ['Date'], now: Date.now() })
      const tok = await token(k1, { sub: 'user-start' })
      const res = await me(a, tok)
      assert.equal(res.statusCode, 503, res.body)
      assert.equal(res.headers['retry-after'], '5')
      assert.deepEqual(problemIssues(res), [])
      const ready = await a.inject({ method: 'GET', url: '/ready' })
      assert.equal(ready.statusCode, 503)
      assert.match(
        ready.json<{ detail: string }>().detail,
        new RegExp(String.raw`^identity provider unreachable \(http:\/\/127\.0\.0\.1:\d+\): OIDC discovery at ` +
          String.raw`http:\/\/127\.0\.0\.1:\d+\/\.well-known\/openid-configuration: `)
      )
      assert.equal((await a.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'alive all the same')

      provider.down = false
      mock.timers.tick(6_000)
      assert.equal((await me(a, tok)).statusCode, 200, 'a request asks again, and the token is verified')
      assert.equal((await a.inject({ method: 'GET', url: '/ready' })).statusCode, 200)
    } finally {
      provider.down = false
      mock.timers.reset()
    }
  })

  void it('stops the start when discovery names another issuer than OIDC_ISSUER ' +
    '(a trailing slash), naming both', async () => {
    provider.issuerSuffix = '/'
    try {
      await assert.rejects(createTokenVerifier(configFor(provider)), (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.variable, 'OIDC_ISSUER')
        assert.ok(
          err.message.includes(`"${provider.issuer}"`) && err.message.includes(`"${provider.issuer}/"`),
          err.message
        )
        assert.ok(!err.message.includes('\n'), 'one line')
        return true
      })
    } finally {
      provider.issuerSuffix = ''
    }
  })

  void it('says misconfigured on /ready and answers 503 when the issuer differs only once the provider answers ' +
    'after the start', async () => {
    provider.down = true
    const a = await app()
    mock.timers.enable({ apis: ['Date'], now: Date.now() })
    try {
      provider.down = false
      provider.issuerSuffix = '/'
      mock.timers.tick(6_000)
      const ready = await a.inject({ method: 'GET', url: '/ready' })
      assert.equal(ready.statusCode, 503)
      assert.match(
        ready.json<{ detail: string }>().detail,
        new RegExp(String.raw`^identity provider misconfigured \(.*\): OIDC_ISSUER is ".*" ` +
          String.raw`but the provider's discovery document .* names ".*\/"`)
      )
      assert.equal((await me(a, await token(k1, { sub: 'user-mis' }))).statusCode, 503)
    } finally {
      provider.down = false
      provider.issuerSuffix = ''
      mock.timers.reset()
    }
  })
})

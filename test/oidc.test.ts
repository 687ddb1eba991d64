/**
 * Real OIDC mode against a small identity provider on 127.0.0.1: discovery document, JWKS with
 * RS256 keys, ZITADEL claims (tenant from `urn:zitadel:iam:user:resourceowner:id`, roles as an
 * object under `urn:zitadel:iam:org:project:roles`), `aud` checked, the dev key refused, and key
 * rotation without restart: a token with an unknown `kid` makes the service fetch the JWKS once
 * more (at most once per cool-down), and then it is accepted.
 *
 * The JWKS cool-down (30 s) is crossed with a mocked clock (`Date` only). Authentication does not
 * touch the database, so this suite runs on PGlite only.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it, mock } from 'node:test'
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose'
import { useTestApp } from './helpers/build-app.ts'
import { problemIssues } from './helpers/problem.ts'

const AUDIENCE = 'collab-api'
const TENANT_CLAIM = 'urn:zitadel:iam:user:resourceowner:id'
const ROLES_CLAIM = 'urn:zitadel:iam:org:project:roles'

interface Key { kid: string, privateKey: CryptoKey, jwk: JWK }

async function newKey (kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } }
}

void describe('pglite: OIDC mode with a JWKS provider', () => {
  const env: Record<string, string> = {}
  const published: Key[] = []
  const fetches = { discovery: 0, jwks: 0 }
  let issuer = ''
  let server: http.Server
  let k1: Key
  let k2: Key
  let k3: Key

  before(async () => {
    k1 = await newKey('key-1')
    k2 = await newKey('key-2')
    k3 = await newKey('key-never-published')
    published.push(k1)
    server = http.createServer((req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        fetches.discovery++
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/oauth/v2/keys` }))
      } else if (req.url === '/oauth/v2/keys') {
        fetches.jwks++
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ keys: published.map(k => k.jwk) }))
      } else {
        res.writeHead(404).end()
      }
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    Object.assign(env, {
      OIDC_ISSUER: issuer,
      OIDC_AUDIENCE: AUDIENCE,
      OIDC_TENANT_CLAIM: TENANT_CLAIM,
      OIDC_ROLES_CLAIM: ROLES_CLAIM
    })
  })
  after(async () => {
    mock.timers.reset()
    await new Promise(resolve => server.close(resolve))
  })

  const t = useTestApp('pglite', { env })

  async function token (
    key: Key,
    claims: Record<string, unknown> = {},
    aud: string | string[] | null = AUDIENCE
  ): Promise<string> {
    let jwt = new SignJWT({
      [TENANT_CLAIM]: 'org-4711',
      [ROLES_CLAIM]: { admin: { 'org-4711': 'example.zitadel.cloud' } },
      email: 'ada@example.test',
      ...claims
    })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject('user-ada')
      .setIssuedAt()
      .setExpirationTime('10m')
    if (aud !== null) jwt = jwt.setAudience(aud)
    return await jwt.sign(key.privateKey)
  }

  const me = async (tok: string) =>
    await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${tok}` } })

  void it('accepts an RS256 token of the provider and reads the ZITADEL tenant and roles claims', async () => {
    const res = await me(await token(k1))
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json<{
      user_id: string
      tenant_id: string
      roles: string[]
      effective_role: string
      permissions: string[]
    }>()
    assert.equal(body.user_id, 'user-ada')
    assert.equal(body.tenant_id, 'org-4711')
    assert.deepEqual(body.roles, ['admin'])
    assert.equal(body.effective_role, 'admin')
    assert.ok(body.permissions.includes('tenant:admin'))
    assert.equal(fetches.discovery, 1, 'the JWKS address comes from discovery')
    assert.equal(fetches.jwks, 1)
  })

  void it('checks the audience when OIDC_AUDIENCE is set', async () => {
    for (const [name, tok] of [
      ['no aud', await token(k1, {}, null)],
      ['another aud', await token(k1, {}, 'another-api')]
    ] as const) {
      const res = await me(tok)
      assert.equal(res.statusCode, 401, `${name}: ${res.body}`)
      assert.deepEqual(problemIssues(res), [], name)
    }
    assert.equal(
      (await me(await token(k1, { jti: 'x' }, ['another-api', AUDIENCE]))).statusCode,
      200,
      'aud may list several audiences'
    )
  })

  void it('refuses the dev key, other issuers, HMAC and alg none in OIDC mode', async () => {
    const now = Math.floor(Date.now() / 1000)
    const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')
    const claims = {
      iss: issuer,
      sub: 'user-ada',
      aud: AUDIENCE,
      exp: now + 600,
      [TENANT_CLAIM]: 'org-4711',
      [ROLES_CLAIM]: { admin: {} }
    }
    const cases: Array<[string, string]> = [
      ['dev key', await t.token({ sub: 'user-ada', tenant: 'org-4711', roles: ['admin'] })],
      [
        'other issuer',
        await new SignJWT(claims)
          .setProtectedHeader({ alg: 'RS256', kid: k1.kid })
          .setIssuer('https://evil.example')
          .sign(k1.privateKey)
      ],
      [
        'HS256',
        await new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256', kid: k1.kid })
          .sign(new TextEncoder().encode('a-shared-secret-of-32-bytes-long!'))
      ],
      ['alg none', `${b64({ alg: 'none', kid: k1.kid })}.${b64(claims)}.`],
      ['no tenant claim', await token(k1, { [TENANT_CLAIM]: undefined })],
      [
        'expired',
        await new SignJWT(claims)
          .setProtectedHeader({ alg: 'RS256', kid: k1.kid })
          .setExpirationTime(now - 3600)
          .sign(k1.privateKey)
      ]
    ]
    for (const [name, tok] of cases) {
      const res = await me(tok)
      assert.equal(res.statusCode, 401, `${name}: ${res.body}`)
    }
  })

  void it('takes a rotated key without restart: one JWKS refresh for an unknown kid, rate-limited', async () => {
    mock.timers.enable({ apis: ['Date'], now: Date.now() })
    published.push(k2)
    mock.timers.tick(31_000) // past the JWKS cool-down
    const before = fetches.jwks
    const res = await me(await token(k2))
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(fetches.jwks, before + 1, 'exactly one refresh for the new kid')

    // an unknown kid right after a refresh: refused without another fetch (the refresh is rate-limited)
    const unknown = await me(await token(k3))
    assert.equal(unknown.statusCode, 401)
    assert.equal(fetches.jwks, before + 1)
    // both keys keep working, from the cached key set
    assert.equal((await me(await token(k1, { jti: 'again' }))).statusCode, 200)
    assert.equal((await me(await token(k2, { jti: 'again' }))).statusCode, 200)
    assert.equal(fetches.jwks, before + 1)

    // after the cool-down, an unknown kid is worth one more fetch, and is still refused
    mock.timers.tick(31_000)
    assert.equal((await me(await token(k3, { jti: 'later' }))).statusCode, 401)
    assert.equal(fetches.jwks, before + 2)
    mock.timers.reset()
  })
})

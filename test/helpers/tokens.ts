/**
 * Tokens for the authentication tests, signed here with `jose`: valid ones with the app's dev key
 * (and an audience when the app checks one), and every kind the verifier must refuse.
 */
import crypto from 'node:crypto'
import { SignJWT, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose'
import type { TestApp } from './build-app.ts'
import { DEV_ISSUER } from '../../src/platform/auth/dev-keys.ts'

export interface Claims {
  sub: string
  tenant: string
  roles?: string[]
  email?: string
  orgId?: string
}

export interface SignOptions {
  iss?: string
  aud?: string | undefined
  /** seconds from now; negative = already expired */
  expIn?: number
  omitSub?: boolean
  omitTenant?: boolean
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

function payloadOf (t: TestApp, c: Claims, o: SignOptions): Record<string, unknown> {
  const p: Record<string, unknown> = {}
  if (o.omitTenant !== true) p[t.config.oidc.tenantClaim] = c.tenant
  p[t.config.oidc.rolesClaim] = c.roles ?? ['member']
  if (c.email !== undefined) p.email = c.email
  if (c.orgId !== undefined) p.org_id = c.orgId
  return p
}

async function signWith (
  key: CryptoKey | Uint8Array,
  alg: string,
  kid: string | undefined,
  t: TestApp,
  c: Claims,
  o: SignOptions
): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  let jwt = new SignJWT(payloadOf(t, c, o))
    .setProtectedHeader({ alg, typ: 'JWT', ...(kid !== undefined ? { kid } : {}) })
    .setIssuer(o.iss ?? DEV_ISSUER)
    .setIssuedAt(now)
    .setExpirationTime(now + (o.expIn ?? 3600))
  if (o.omitSub !== true) jwt = jwt.setSubject(c.sub)
  const aud = 'aud' in o ? o.aud : t.config.oidc.audience
  if (aud !== undefined) jwt = jwt.setAudience(aud)
  return await jwt.sign(key)
}

/** A token the app accepts (dev key, dev issuer, the app's audience if it checks one). */
export async function validToken (t: TestApp, c: Claims, o: SignOptions = {}): Promise<string> {
  const key = await importJWK(t.keys.privateJwk as JWK, 'ES256')
  return await signWith(key as CryptoKey, 'ES256', t.keys.kid, t, c, o)
}

/** Every token the app must refuse with 401, by name. */
export async function badTokens (t: TestApp, c: Claims): Promise<Record<string, string | undefined>> {
  const stranger = await generateKeyPair('ES256')
  const rsa = await generateKeyPair('RS256')
  const hmacSecret = new TextEncoder().encode(JSON.stringify(t.keys.publicJwk))
  const now = Math.floor(Date.now() / 1000)
  const claims = {
    sub: c.sub,
    iss: DEV_ISSUER,
    exp: now + 3600,
    iat: now,
    [t.config.oidc.tenantClaim]: c.tenant,
    [t.config.oidc.rolesClaim]: c.roles ?? ['admin']
  }
  const valid = await validToken(t, c)
  const [h, p, s] = valid.split('.')
  const tampered = JSON.parse(Buffer.from(p ?? '', 'base64url').toString()) as Record<string, unknown>
  tampered[t.config.oidc.rolesClaim] = ['admin']
  tampered[t.config.oidc.tenantClaim] = `${c.tenant}-other`
  const tokens: Record<string, string | undefined> = {
    'no token': undefined,
    'malformed header': 'not-a-jwt',
    expired: await validToken(t, c, { expIn: -3600 }),
    'unknown key': await signWith(stranger.privateKey, 'ES256', crypto.randomBytes(8).toString('hex'), t, c, {}),
    'unknown key with the dev kid': await signWith(stranger.privateKey, 'ES256', t.keys.kid, t, c, {}),
    'RS256 by an unknown key': await signWith(rsa.privateKey, 'RS256', 'rsa-1', t, c, {}),
    'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`,
    'alg none with the dev kid': `${b64({ alg: 'none', typ: 'JWT', kid: t.keys.kid })}.${b64(claims)}.`,
    'HS256 keyed with the public key': await signWith(hmacSecret, 'HS256', t.keys.kid, t, c, {}),
    'tampered payload': `${h ?? ''}.${Buffer.from(JSON.stringify(tampered)).toString('base64url')}.${s ?? ''}`,
    'wrong issuer': await validToken(t, c, { iss: 'https://issuer.invalid' }),
    'without sub': await validToken(t, c, { omitSub: true }),
    'without tenant claim': await validToken(t, c, { omitTenant: true })
  }
  if (t.config.oidc.audience !== undefined) {
    tokens['wrong audience'] = await validToken(t, c, { aud: 'urn:collab:another-api' })
    tokens['without audience'] = await validToken(t, c, { aud: undefined })
  }
  return tokens
}

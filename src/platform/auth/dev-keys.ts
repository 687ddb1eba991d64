/**
 * Dev mode signing key: created once in DATA_DIR when OIDC_ISSUER is unset, trusted only then,
 * and used by `npm run token`. Never trusted when an issuer is configured.
 */
import { writeOnce } from '../write-once.ts'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose'

export const DEV_ISSUER = 'urn:collab:dev'
const FILE = 'dev-signing-key.json'

export interface DevKeys {
  kid: string
  privateJwk: JWK
  publicJwk: JWK
}

/** Where the dev key pair of `dataDir` lives (DATA_DIR as `loadConfig` resolves it). */
export function devKeyFile (dataDir: string): string {
  return path.join(dataDir, FILE)
}

/** Reads the dev key pair from `dataDir`, creating it (mode 0600) on first use. */
export async function loadOrCreateDevKeys (dataDir: string): Promise<DevKeys> {
  const file = devKeyFile(dataDir)
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as DevKeys
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  const kid = crypto.randomBytes(8).toString('hex')
  const keys: DevKeys = {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }
  }
  writeOnce(file, JSON.stringify(keys))
  return JSON.parse(fs.readFileSync(file, 'utf8')) as DevKeys
}

export interface DevTokenClaims {
  sub: string
  tenant: string
  roles?: string[]
  email?: string
  /** `email_verified` (the OpenID Connect claim) */
  emailVerified?: boolean
  orgId?: string
  /** seconds of validity, default one hour */
  ttl?: number
  /** the issue time (`iat`), unix seconds; default now */
  issuedAt?: number
  tenantClaim?: string
  rolesClaim?: string
}

/**
 * Signs a dev token with the dev key.
 *
 * @example
 *   const token = await signDevToken(keys, { sub: 'alice', tenant: 't1', roles: ['admin'] })
 */
export async function signDevToken (keys: DevKeys, claims: DevTokenClaims): Promise<string> {
  const key = await importJWK(keys.privateJwk, 'ES256')
  const payload: Record<string, unknown> = {
    [claims.tenantClaim ?? 'tenant_id']: claims.tenant,
    [claims.rolesClaim ?? 'roles']: claims.roles ?? ['member']
  }
  if (claims.email !== undefined) payload.email = claims.email
  if (claims.emailVerified !== undefined) payload.email_verified = claims.emailVerified
  if (claims.orgId !== undefined) payload.org_id = claims.orgId
  return await new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid: keys.kid, typ: 'JWT' })
    .setIssuer(DEV_ISSUER)
    .setSubject(claims.sub)
    .setIssuedAt(claims.issuedAt)
    .setExpirationTime(Math.floor(Date.now() / 1000) + (claims.ttl ?? 3600))
    .sign(key)
}

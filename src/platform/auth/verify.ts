/**
 * Bearer JWT verification (runtime contract, "Authentication"): asymmetric algorithms only,
 * `iss` must match, `exp` required, `exp`/`nbf` with 60 s leeway, `aud` when configured, `sub`
 * and the tenant claim required. Keys come from the issuer's JWKS (found by discovery or given),
 * refetched once when an unknown `kid` appears (jose rate-limits the refetch), so rotation needs
 * no restart. In dev mode only the key pair in DATA_DIR is trusted.
 *
 * Each distinct token is verified once and cached until its `exp` (never longer), in a bounded
 * map: the hot path of every request is then a map lookup. A token refused for a reason that cannot
 * change (bad signature, expired, malformed) is remembered for REFUSED_TTL_MS, so a client repeating
 * it costs a map lookup too, not a signature check; an unknown key (rotation), a claim that may
 * become valid and an unreachable provider are never remembered.
 */
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { Config } from '../../config.ts'
import { error401Unauthorized } from '../http/errors.ts'
import { DEV_ISSUER, loadOrCreateDevKeys } from './dev-keys.ts'
import { effectiveRole, permissionsOf, type Permission, type Role } from './permissions.ts'

export interface AuthContext {
  readonly userId: string
  readonly tenantId: string
  readonly email: string | null
  readonly orgId: string | null
  readonly roles: readonly string[]
  readonly effectiveRole: Role | 'none'
  readonly permissions: ReadonlySet<Permission>
  /** token expiry, unix seconds */
  readonly exp: number
}

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const CACHE_MAX = 10_000
const REFUSED_TTL_MS = 30_000
/** Refusals that the same token can never turn into a success. */
const FINAL_REFUSALS = new Set(['ERR_JWS_SIGNATURE_VERIFICATION_FAILED', 'ERR_JWT_EXPIRED', 'ERR_JWS_INVALID', 'ERR_JWT_INVALID'])

export interface TokenVerifier {
  verify (token: string): Promise<AuthContext>
  readonly devMode: boolean
}

async function discoverJwksUrl (issuer: string): Promise<URL> {
  const res = await fetch(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5_000) })
  if (!res.ok) throw new Error(`OIDC discovery at ${issuer} answered ${res.status}`)
  const doc = await res.json() as { jwks_uri?: unknown }
  if (typeof doc.jwks_uri !== 'string') throw new Error(`OIDC discovery at ${issuer} has no jwks_uri`)
  return new URL(doc.jwks_uri)
}

function rolesFrom (claim: unknown): string[] {
  if (Array.isArray(claim)) return claim.filter((r): r is string => typeof r === 'string')
  if (claim !== null && typeof claim === 'object') return Object.keys(claim)
  if (typeof claim === 'string') return claim.split(/[\s,]+/).filter(Boolean)
  return []
}

/** Reads a claim by name; names with dots or colons (ZITADEL's `urn:…`) are looked up whole. */
function claimOf (payload: JWTPayload, name: string): unknown {
  return (payload as Record<string, unknown>)[name]
}

export function contextFromClaims (payload: JWTPayload, config: Pick<Config, 'oidc'>): AuthContext {
  const sub = payload.sub
  const tenant = claimOf(payload, config.oidc.tenantClaim)
  if (typeof sub !== 'string' || sub === '') throw error401Unauthorized('token has no sub claim')
  if ((typeof tenant !== 'string' && typeof tenant !== 'number') || String(tenant) === '') {
    throw error401Unauthorized(`token has no ${config.oidc.tenantClaim} claim`)
  }
  const roles = rolesFrom(claimOf(payload, config.oidc.rolesClaim))
  const email = claimOf(payload, 'email')
  const org = claimOf(payload, 'org_id')
  return {
    userId: sub,
    tenantId: String(tenant),
    email: typeof email === 'string' ? email : null,
    orgId: typeof org === 'string' && org !== '' ? org : null,
    roles,
    effectiveRole: effectiveRole(roles),
    permissions: new Set(permissionsOf(roles)),
    exp: typeof payload.exp === 'number' ? payload.exp : 0
  }
}

export async function createTokenVerifier (config: Config): Promise<TokenVerifier> {
  let keySet: JWTVerifyGetKey
  let issuer: string
  const devMode = config.oidc.issuer === undefined
  if (config.oidc.issuer === undefined) {
    const keys = await loadOrCreateDevKeys(config.dataDir)
    keySet = createLocalJWKSet({ keys: [keys.publicJwk] })
    issuer = DEV_ISSUER
  } else {
    issuer = config.oidc.issuer
    const jwksUrl = config.oidc.jwksUrl
    let remote: JWTVerifyGetKey | undefined
    // Discovery happens on the first request, so a provider that is briefly away does not stop the start.
    keySet = async (header, token) => {
      remote ??= createRemoteJWKSet(jwksUrl !== undefined ? new URL(jwksUrl) : await discoverJwksUrl(issuer), {
        cooldownDuration: 30_000,
        timeoutDuration: 5_000
      })
      return await remote(header, token)
    }
  }

  const cache = new Map<string, AuthContext>()
  const refused = new Map<string, number>()

  return {
    devMode,
    async verify (token: string): Promise<AuthContext> {
      const now = Math.floor(Date.now() / 1000)
      const hit = cache.get(token)
      if (hit !== undefined) {
        if (hit.exp + 60 > now) return hit
        cache.delete(token)
      }
      const until = refused.get(token)
      if (until !== undefined) {
        if (until > Date.now()) throw error401Unauthorized('invalid or expired token')
        refused.delete(token)
      }
      let payload: JWTPayload
      try {
        ({ payload } = await jwtVerify(token, keySet, {
          issuer,
          algorithms: ALGORITHMS,
          clockTolerance: 60,
          requiredClaims: ['exp'],
          ...(config.oidc.audience !== undefined ? { audience: config.oidc.audience } : {})
        }))
      } catch (err) {
        const code = (err as { code?: string }).code ?? ''
        if (code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JOSE_GENERIC' || (err as Error).message.includes('discovery')) {
          throw error401Unauthorized('the token could not be verified: identity provider unreachable')
        }
        if (FINAL_REFUSALS.has(code)) {
          if (refused.size >= CACHE_MAX) {
            const oldest = refused.keys().next().value
            if (oldest !== undefined) refused.delete(oldest)
          }
          refused.set(token, Date.now() + REFUSED_TTL_MS)
        }
        throw error401Unauthorized('invalid or expired token')
      }
      const ctx = contextFromClaims(payload, config)
      if (cache.size >= CACHE_MAX) {
        const oldest = cache.keys().next().value
        if (oldest !== undefined) cache.delete(oldest)
      }
      cache.set(token, ctx)
      return ctx
    }
  }
}

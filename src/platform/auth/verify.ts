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
 * become valid and an unreachable provider are never remembered that way. Every refusal says why
 * (TokenRefused: the reason and the unverified `kid`/`alg`/`iss`/`aud`/`sub`/`exp`, never the token)
 * and whether the same token was refused for the same reason in the last REFUSED_TTL_MS, so the
 * plugin logs a repeat at debug only.
 *
 * The identity provider (OIDC mode) is asked at start: discovery (its `issuer` must be OIDC_ISSUER
 * exactly, else the start stops naming both) and the JWKS. A provider that does not answer does not
 * stop the start: it is `unreachable`, tokens needing it answer 503 + Retry-After
 * (ProviderUnavailable), `/ready` says so, and it is asked again at most every RETRY_MS, by a
 * request or by `/ready`. Meanwhile the keys fetched before it went away still verify their tokens.
 */
import {
  createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload,
  type JWTVerifyGetKey
} from 'jose'
import { ConfigError, type Config } from '../../config.ts'
import { ApiError, error401Unauthorized } from '../http/errors.ts'
import { DEV_ISSUER, loadOrCreateDevKeys } from './dev-keys.ts'
import { effectiveRole, permissionsOf, type Permission, type Role } from './permissions.ts'

export interface AuthContext {
  readonly userId: string
  readonly tenantId: string
  readonly email: string | null
  /** the token says the address is verified (`email_verified: true`) */
  readonly emailVerified?: boolean
  readonly orgId: string | null
  readonly roles: readonly string[]
  readonly effectiveRole: Role | 'none'
  readonly permissions: ReadonlySet<Permission>
  /** token expiry, unix seconds */
  readonly exp: number
  /** token issue time (`iat`), unix seconds, when the token says */
  readonly iat?: number
  /**
   * Set when the caller is a service account authenticated with an API key (docs/api-keys.md): the key, its account,
   * and the scopes it is limited to (null: every permission of its role, never `scim`, which must be named).
   */
  readonly apiKey?: {
    readonly keyId: string; readonly serviceAccountId: string; readonly scopes: ReadonlySet<string> | null
  }
}

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const CACHE_MAX = 10_000
const REFUSED_TTL_MS = 30_000
/** Refusals that the same token can never turn into a success. */
const FINAL_REFUSALS = new Set([
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JWT_EXPIRED',
  'ERR_JWS_INVALID',
  'ERR_JWT_INVALID'
])
/** Errors of a key set that are the token's doing (its `kid` or `alg`), not the provider's. */
const TOKEN_KEY_ERRORS = new Set([
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
  'ERR_JOSE_NOT_SUPPORTED'
])
/** Each request to the provider (discovery, JWKS) waits at most this long. */
const FETCH_TIMEOUT_MS = 5_000
/** An unreachable provider is asked again at most this often (and 503 answers Retry-After: this, in seconds). */
const RETRY_MS = 5_000
/** The longest value of an unverified claim or header that a log line carries. */
const LOGGED_VALUE_MAX = 120

/** What a refused token says about itself, unverified: for the log only, each value bounded. */
export interface TokenFacts {
  kid?: string
  alg?: string
  iss?: string
  aud?: string | string[]
  sub?: string
  exp?: number
}

/** A 401 with the reason of the refusal, for the log (the answer itself says no more than before). */
export class TokenRefused extends ApiError {
  constructor (detail: string, readonly reason: string, readonly facts: TokenFacts, readonly repeat: boolean) {
    super(401, detail, [], { 'www-authenticate': 'Bearer' })
  }
}

/** A 503: the identity provider does not answer (or is misconfigured), so the token cannot be checked now. */
export class ProviderUnavailable extends ApiError {
  constructor (readonly reason: string, readonly repeat: boolean) {
    super(503, 'the identity provider is unreachable, so the token cannot be verified now; retry shortly', [], {
      'retry-after': String(RETRY_MS / 1000)
    })
  }
}

export interface ProviderState {
  /**
   * `ready`: keys fetched; `unreachable`: discovery or JWKS did not answer; `misconfigured`: its issuer is not
   * OIDC_ISSUER
   */
  readonly kind: 'ready' | 'unreachable' | 'misconfigured'
  /** what happened, for the log and `/ready` (addresses and errors, never a secret) */
  readonly reason: string
}

/** The identity provider as the service last saw it (OIDC mode only). */
export interface IdentityProvider {
  readonly issuer: string
  state (): ProviderState
  /**
   * Asks the provider again when it is not ready and RETRY_MS have passed, waiting at most `timeoutMs`; the state then.
   */
  check (timeoutMs: number): Promise<ProviderState>
  /** Called when the state changes kind (ready ↔ unreachable / misconfigured). */
  onChange (listener: (state: ProviderState) => void): void
}

export interface TokenVerifier {
  verify (token: string): Promise<AuthContext>
  readonly devMode: boolean
  /** the identity provider, in OIDC mode */
  readonly provider?: IdentityProvider | undefined
  /** BASE_URL, for the problem documents the plugin sends itself */
  readonly baseUrl?: string | undefined
}

function bounded (v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  return v.length > LOGGED_VALUE_MAX ? `${v.slice(0, LOGGED_VALUE_MAX)}…` : v
}

/** The header and claims a refused token names, decoded without trusting them. */
export function tokenFacts (token: string): TokenFacts {
  const facts: TokenFacts = {}
  try {
    const h = decodeProtectedHeader(token)
    const kid = bounded(h.kid)
    const alg = bounded(h.alg)
    if (kid !== undefined) facts.kid = kid
    if (alg !== undefined) facts.alg = alg
  } catch {}
  try {
    const p = decodeJwt(token)
    const iss = bounded(p.iss)
    const sub = bounded(p.sub)
    const aud = Array.isArray(p.aud)
      ? p.aud
        .slice(0, 5)
        .map(bounded)
        .filter((a): a is string => a !== undefined)
      : bounded(p.aud)
    if (iss !== undefined) facts.iss = iss
    if (sub !== undefined) facts.sub = sub
    if (aud !== undefined) facts.aud = aud
    if (typeof p.exp === 'number' && Number.isFinite(p.exp)) facts.exp = p.exp
  } catch {}
  return facts
}

/** Why jose refused a token, in words an operator can act on. */
function refusalReason (err: unknown): string {
  const e = err as { code?: string, claim?: string, reason?: string }
  switch (e.code ?? '') {
    case 'ERR_JWT_EXPIRED': return e.claim === 'iat' ? 'issued too long ago (iat)' : 'expired (exp)'
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = bounded(e.claim) ?? 'unspecified'
      if (e.reason === 'missing') return `no ${claim} claim`
      if (claim === 'aud') return 'wrong audience (aud)'
      if (claim === 'iss') return 'wrong issuer (iss)'
      if (claim === 'nbf') return 'not valid yet (nbf)'
      return `invalid ${claim} claim`
    }
    case 'ERR_JWKS_NO_MATCHING_KEY': return 'unknown signing key (kid)'
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS': return 'ambiguous signing key (kid)'
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED': return 'bad signature'
    case 'ERR_JOSE_ALG_NOT_ALLOWED': return 'algorithm not allowed (alg)'
    case 'ERR_JOSE_NOT_SUPPORTED': return 'unsupported algorithm or key (alg)'
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID': return 'malformed token'
    default: return 'invalid token'
  }
}

/** A failed request to the provider, in one short line (no stack, no body). */
function fetchFailure (what: string, err: unknown): string {
  const e = err as { name?: string, code?: string, message?: string, cause?: { code?: string, message?: string } }
  if (e.name === 'TimeoutError' || e.code === 'ERR_JWKS_TIMEOUT') {
    return `${what}: no answer within ${FETCH_TIMEOUT_MS / 1000} s`
  }
  if (e.code === 'ERR_JWKS_INVALID') return `${what}: not a JSON Web Key Set`
  const detail = e.cause?.code ?? e.cause?.message ?? e.message ?? String(err)
  return `${what}: ${detail.slice(0, 200)}`
}

/** The provider's answer was wrong in a way only its configuration (or ours) can fix. */
class IssuerMismatch extends Error {}

/**
 * Reads the discovery document and checks that it names OIDC_ISSUER as its issuer, exactly (OpenID
 * Connect Discovery 1.0, 4.3): tokens carry that value in `iss`, so any difference refuses them all.
 */
async function discoverJwksUrl (issuer: string): Promise<URL> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
  const what = `OIDC discovery at ${url}`
  let res: Response
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) })
  } catch (err) {
    throw new Error(fetchFailure(what, err))
  }
  if (!res.ok) {
    await res.body?.cancel()
    throw new Error(`${what}: answered HTTP ${res.status}`)
  }
  let doc: { issuer?: unknown, jwks_uri?: unknown }
  try {
    doc = await res.json() as { issuer?: unknown, jwks_uri?: unknown }
  } catch (err) {
    throw new Error(fetchFailure(`${what} (not JSON)`, err))
  }
  if (doc === null || typeof doc !== 'object') throw new Error(`${what}: not a JSON object`)
  if (doc.issuer !== issuer) {
    const found = typeof doc.issuer === 'string' ? JSON.stringify(bounded(doc.issuer)) : 'no issuer'
    throw new IssuerMismatch(
      `is ${JSON.stringify(issuer)} but the provider's discovery document (${url}) names ${found}: ` +
      'tokens carry the provider\'s value in iss, so set OIDC_ISSUER to exactly that'
    )
  }
  if (typeof doc.jwks_uri !== 'string') throw new Error(`${what}: no jwks_uri`)
  try {
    return new URL(doc.jwks_uri)
  } catch {
    throw new Error(`${what}: jwks_uri is not a URL`)
  }
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
    ...(claimOf(payload, 'email_verified') === true && typeof email === 'string' ? { emailVerified: true } : {}),
    orgId: typeof org === 'string' && org !== '' ? org : null,
    roles,
    effectiveRole: effectiveRole(roles),
    permissions: new Set(permissionsOf(roles)),
    exp: typeof payload.exp === 'number' ? payload.exp : 0,
    ...(typeof payload.iat === 'number' && Number.isFinite(payload.iat) ? { iat: payload.iat } : {})
  }
}

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>

/** The provider's keys: discovery and JWKS at start, then on demand; its state for `/ready` and the log. */
async function connectProvider (
  issuer: string,
  jwksUrl: string | undefined
): Promise<{ keySet: JWTVerifyGetKey; provider: IdentityProvider }> {
  let state: ProviderState = { kind: 'unreachable', reason: 'not asked yet' }
  const listeners: Array<(s: ProviderState) => void> = []
  let remote: RemoteKeySet | undefined
  let jwksHref = ''
  /** the keys of the last good answer, used while the provider is away */
  let lastKnown: JWTVerifyGetKey | undefined
  let nextTryAt = 0
  let probing: Promise<void> | undefined
  /** whether a token was refused 503 since the provider went away (the later ones are repeats) */
  let refusedSinceDown = false

  const setState = (next: ProviderState): void => {
    const changed = next.kind !== state.kind
    if (changed && state.kind === 'ready') {
      refusedSinceDown = false
      const jwks = remote?.jwks()
      lastKnown = jwks !== undefined ? createLocalJWKSet(jwks) : undefined
    }
    state = next
    if (changed) for (const l of listeners) l(next)
  }

  const unreachable = (reason: string): void => {
    nextTryAt = Date.now() + RETRY_MS
    setState({ kind: 'unreachable', reason })
  }

  /** One attempt at a time: discovery (until it has answered once), then the JWKS. */
  const probe = async (): Promise<void> => {
    probing ??= (async () => {
      nextTryAt = Date.now() + RETRY_MS
      if (remote === undefined) {
        let jwksAt: URL
        try {
          jwksAt = jwksUrl !== undefined ? new URL(jwksUrl) : await discoverJwksUrl(issuer)
        } catch (err) {
          if (err instanceof IssuerMismatch) setState({ kind: 'misconfigured', reason: `OIDC_ISSUER ${err.message}` })
          else unreachable((err as Error).message)
          return
        }
        remote = createRemoteJWKSet(jwksAt, { cooldownDuration: 30_000, timeoutDuration: FETCH_TIMEOUT_MS })
        jwksHref = jwksAt.href
      }
      try {
        await remote.reload()
      } catch (err) {
        unreachable(fetchFailure(`JWKS at ${jwksHref}`, err))
        return
      }
      setState({ kind: 'ready', reason: `issuer ${issuer}, JWKS at ${jwksHref}` })
    })().finally(() => {
      probing = undefined
    })
    await probing
  }

  const unavailable = (): ProviderUnavailable => {
    const repeat = refusedSinceDown
    refusedSinceDown = true
    return new ProviderUnavailable(`identity provider ${state.kind}: ${state.reason}`, repeat)
  }

  const keySet: JWTVerifyGetKey = async (header, token) => {
    if (state.kind !== 'ready' && Date.now() >= nextTryAt) await probe()
    if (state.kind === 'ready' && remote !== undefined) {
      try {
        return await remote(header, token)
      } catch (err) {
        if (TOKEN_KEY_ERRORS.has((err as { code?: string }).code ?? '')) throw err
        unreachable(fetchFailure(`JWKS at ${jwksHref}`, err))
      }
    }
    // away: the keys it gave before still verify their tokens; a token of any other key must wait
    if (lastKnown !== undefined) {
      try {
        return await lastKnown(header, token)
      } catch (err) {
        if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw err
      }
    }
    throw unavailable()
  }

  await probe()
  if (state.kind === 'misconfigured') throw new ConfigError('OIDC_ISSUER', state.reason.replace(/^OIDC_ISSUER /, ''))

  return {
    keySet,
    provider: {
      issuer,
      state: () => state,
      async check (timeoutMs) {
        if (state.kind !== 'ready' && Date.now() >= nextTryAt) {
          let timer: NodeJS.Timeout | undefined
          await Promise.race([
            probe(),
            new Promise<void>(resolve => {
              timer = setTimeout(resolve, timeoutMs)
            })
          ])
          clearTimeout(timer)
        }
        return state
      },
      onChange (listener) {
        listeners.push(listener)
      }
    }
  }
}

export async function createTokenVerifier (config: Config): Promise<TokenVerifier> {
  let keySet: JWTVerifyGetKey
  let issuer: string
  let provider: IdentityProvider | undefined
  const devMode = config.oidc.issuer === undefined
  if (config.oidc.issuer === undefined) {
    const keys = await loadOrCreateDevKeys(config.dataDir)
    keySet = createLocalJWKSet({ keys: [keys.publicJwk] })
    issuer = DEV_ISSUER
  } else {
    issuer = config.oidc.issuer
    ;({ keySet, provider } = await connectProvider(issuer, config.oidc.jwksUrl))
  }

  const cache = new Map<string, AuthContext>()
  /** recent refusals by token: a final one answers again without a signature check; any one makes a repeat */
  const refused = new Map<string, { until: number, reason: string, final: boolean, facts: TokenFacts }>()

  const refuse = (token: string, detail: string, reason: string, final: boolean): TokenRefused => {
    const now = Date.now()
    const last = refused.get(token)
    if (last !== undefined && last.until > now && last.reason === reason) {
      return new TokenRefused(detail, reason, last.facts, true)
    }
    if (last !== undefined) refused.delete(token)
    if (refused.size >= CACHE_MAX) {
      const oldest = refused.keys().next().value
      if (oldest !== undefined) refused.delete(oldest)
    }
    const facts = tokenFacts(token)
    refused.set(token, { until: now + REFUSED_TTL_MS, reason, final, facts })
    return new TokenRefused(detail, reason, facts, false)
  }

  return {
    devMode,
    provider,
    baseUrl: config.baseUrl,
    async verify (token: string): Promise<AuthContext> {
      const now = Math.floor(Date.now() / 1000)
      const hit = cache.get(token)
      if (hit !== undefined) {
        if (hit.exp + 60 > now) return hit
        cache.delete(token)
      }
      const last = refused.get(token)
      if (last?.final === true && last.until > Date.now()) {
        throw new TokenRefused('invalid or expired token', last.reason, last.facts, true)
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
        if (err instanceof ProviderUnavailable) throw err
        const code = (err as { code?: string }).code ?? ''
        throw refuse(token, 'invalid or expired token', refusalReason(err), FINAL_REFUSALS.has(code))
      }
      let ctx: AuthContext
      try {
        ctx = contextFromClaims(payload, config)
      } catch (err) {
        if (!(err instanceof ApiError)) throw err
        throw refuse(token, err.detail, err.detail.replace(/^token has /, ''), false)
      }
      if (last !== undefined) refused.delete(token)
      if (cache.size >= CACHE_MAX) {
        const oldest = cache.keys().next().value
        if (oldest !== undefined) cache.delete(oldest)
      }
      cache.set(token, ctx)
      return ctx
    }
  }
}

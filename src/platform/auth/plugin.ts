/**
 * Sets `request.auth` from the bearer token. The decision is taken on the route the router matched
 * (its registered pattern and config), never on the request's URL: `/%61pi/v1/contacts` matches the
 * route `/api/v1/contacts` and is treated as that route. Every route requires a token unless it
 * declares `config: { auth: 'none' }` (the IdP webhook, the OpenAPI document) or
 * `config: { auth: 'optional' }` (the public space page, which shows more to a signed-in viewer), or
 * is one of the platform's public documents outside `/api/` (PUBLIC_ROUTES: health, readiness,
 * schemas, docs). A request that matched no route needs none: it is answered 404 (or 405).
 *
 * Refusals are logged with their reason (docs/authentication.md, "Refusals in the log"): a refused
 * token at `info` with the reason and its unverified `kid`/`alg`/`iss`/`aud`/`sub`/`exp` (never the
 * token), the same token refused again for the same reason within 30 s at `debug`; a token that
 * cannot be verified because the identity provider does not answer is 503 + Retry-After, logged
 * at `warn` for the first one after the provider went away and at `debug` after that. A missing
 * or malformed header, and a refusal on a route where the token is optional, are `debug`. The
 * provider's state is logged once at start and at each change.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, error401Unauthorized } from '../http/errors.ts'
import { sendProblem } from '../http/error-handler.ts'
import {
  ProviderUnavailable, TokenRefused, type AuthContext, type IdentityProvider, type TokenVerifier
} from './verify.ts'

export type AuthMode = 'required' | 'optional' | 'none'

/**
 * Refuses the tokens of users the identity provider removed or deactivated (set by the identity module): false
 * refuses, true lets the caller in as the token says, an AuthContext lets them in as that (the token's roles with the
 * roles of the user's SCIM groups added, docs/scim.md).
 */
export type UserGate = (auth: AuthContext) => Promise<boolean | AuthContext>

/**
 * Bearer credentials that are not JWTs: the API keys of service accounts (`cbk_…`, docs/api-keys.md), checked by the
 * api-keys module's engine, which app.ts gives `registerAuth`.
 */
export interface ApiKeyAuthenticator {
  /** whether a bearer value is meant as an API key (its prefix), so that it is never read as a JWT */
  claims (token: string): boolean
  /** the key's caller (with `apiKey` set); a TokenRefused naming why not */
  verify (token: string, request: FastifyRequest): Promise<AuthContext>
  /** called after the response of every request authenticated with a key */
  used (request: FastifyRequest, reply: FastifyReply): void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the identity provider whose keys verify tokens (OIDC mode), for `/ready`; null in dev mode */
    identityProvider: IdentityProvider | null
  }
  interface FastifyRequest {
    /** The verified caller. Only read it on routes whose auth mode is 'required'. */
    auth: AuthContext
    /** The caller when a valid token was given, on any route. */
    optionalAuth: AuthContext | null
  }
  interface FastifyContextConfig {
    auth?: AuthMode
    /** rate-limit tokens this route costs (default 1) */
    cost?: number
  }
}

/** Route patterns outside `/api/` that need no token (the platform's documents and probes). */
const PUBLIC_ROUTES = new Set(['/health', '/ready', '/openapi.json', '/schemas/:name'])
const PUBLIC_PREFIXES = ['/docs/']

/** The auth mode of a registered route: what it declares, else public documents, else required. */
export function routeAuthMode (url: string, declared: AuthMode | undefined): AuthMode {
  if (declared !== undefined) return declared
  if (PUBLIC_ROUTES.has(url) || url === '/docs' || PUBLIC_PREFIXES.some(p => url.startsWith(p))) return 'none'
  return 'required'
}

export function authModeOf (request: FastifyRequest): AuthMode {
  const url = request.routeOptions.url
  // no route matched: the not-found handler answers 404 / 405 and runs nothing else
  if (url === undefined) return 'none'
  return routeAuthMode(url, request.routeOptions.config.auth)
}

/** Called before a request is refused 401 (the rate limit counts refusals per address; it may throw 429 instead). */
export type RefusalHook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

/** The bearer value of the header: a JWT's three parts, or an API key (`cbk_…`, checked for its format later). */
function bearer (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const m = /^Bearer\s+([A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]*|cbk_[A-Za-z0-9]{1,200})\s*$/i.exec(header)
  return m?.[1]
}

/** One log line per refusal: its reason, at info (warn when the provider is away), a repeat at debug. */
function logRefusal (request: FastifyRequest, err: unknown, mode: AuthMode): void {
  if (err instanceof ProviderUnavailable) {
    const level = err.repeat || mode === 'optional' ? 'debug' : 'warn'
    request.log[level]({ refusal: { reason: err.reason, status: 503 } }, `token not verified: ${err.reason}`)
  } else if (err instanceof TokenRefused) {
    const level = err.repeat || mode === 'optional' ? 'debug' : 'info'
    request.log[level](
      { refusal: { reason: err.reason, status: 401, repeat: err.repeat, token: err.facts } },
      `token refused: ${err.reason}`
    )
  } else {
    request.log.info({ err }, 'token refused')
  }
}

function logProviderState (app: FastifyInstance, provider: IdentityProvider, atStart: boolean): void {
  const s = provider.state()
  const fields = { identityProvider: { issuer: provider.issuer, state: s.kind, reason: s.reason } }
  if (s.kind === 'ready') {
    app.log.info(fields, `identity provider ${atStart ? 'ready' : 'answers again'}: ${s.reason}`)
  } else {
    app.log.warn(
      fields,
      `identity provider ${s.kind}${atStart ? ' at start' : ''}: ${s.reason}; tokens it must verify are answered 503 ` +
      'until it answers'
    )
  }
}

export function registerAuth (
  app: FastifyInstance,
  verifier: TokenVerifier,
  gate: { current: UserGate | undefined },
  onRefusal?: RefusalHook,
  apiKeys?: ApiKeyAuthenticator
): void {
  app.decorateRequest('auth', null as unknown as AuthContext)
  app.decorateRequest('optionalAuth', null)
  const provider = verifier.provider
  app.decorate('identityProvider', provider ?? null)
  if (provider !== undefined) {
    logProviderState(app, provider, true)
    provider.onChange(() => {
      logProviderState(app, provider, false)
    })
  }

  app.addHook('onRequest', async (request, reply) => {
    const mode = authModeOf(request)
    if (mode === 'none') return
    const header = request.headers.authorization
    const token = bearer(header)
    // a refusal is answered here, as the error handler would answer it: a 401 skips Fastify's error path (the
    // refusal path's line in docs/performance.md)
    const refuse = async (err: unknown): Promise<FastifyReply> => {
      await onRefusal?.(request, reply)
      if (!(err instanceof ApiError)) throw err
      return sendProblem(reply, err, verifier.baseUrl ?? '')
    }
    if (token === undefined) {
      if (mode === 'optional' && header === undefined) return
      request.log.debug(
        {
          refusal: { reason: header === undefined ? 'no bearer token' : 'malformed authorization header', status: 401 }
        },
        'request without a valid authorization header'
      )
      return await refuse(
        error401Unauthorized(header === undefined ? 'missing bearer token' : 'malformed authorization header')
      )
    }
    let auth: AuthContext
    try {
      auth = apiKeys?.claims(token) === true ? await apiKeys.verify(token, request) : await verifier.verify(token)
    } catch (err) {
      logRefusal(request, err, mode)
      if (mode === 'optional') return
      if (err instanceof ProviderUnavailable) {
        // the service's trouble, said once in the log above: answered here, not by the error handler (which logs every
        // 5xx as an error)
        await onRefusal?.(request, reply)
        sendProblem(reply, err, verifier.baseUrl ?? '')
        return reply
      }
      return await refuse(err)
    }
    // a service account is no user of the identity provider: its key's check covers its state
    const gated = auth.apiKey === undefined && gate.current !== undefined ? await gate.current(auth) : true
    if (gated === false) {
      if (mode === 'optional') return
      request.log.debug(
        { refusal: { reason: 'user not active', status: 401, token: { sub: auth.userId } } },
        'token refused: the user is not active'
      )
      return await refuse(error401Unauthorized('the user is not active'))
    }
    if (gated !== true) auth = gated
    request.auth = auth
    request.optionalAuth = auth
  })

  // every request made with an API key is recorded once answered (docs/api-keys.md, "What is audited")
  if (apiKeys !== undefined) {
    app.addHook('onResponse', async (request, reply) => {
      if (request.optionalAuth?.apiKey !== undefined) apiKeys.used(request, reply)
    })
  }
}

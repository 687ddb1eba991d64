/**
 * Sets `request.auth` from the bearer token. Every `/api/v1/**` route requires one unless it opts
 * out with `config: { auth: 'none' }` (the IdP webhook) or `config: { auth: 'optional' }` (the public
 * space page, which shows more to a signed-in viewer). Routes outside `/api/v1` (health, docs,
 * schemas) need none.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { error401Unauthorized } from '../http/errors.ts'
import type { AuthContext, TokenVerifier } from './verify.ts'

export type AuthMode = 'required' | 'optional' | 'none'

/** Refuses the tokens of users the identity provider removed or deactivated (set by the identity module). */
export type UserGate = (auth: AuthContext) => Promise<boolean>

declare module 'fastify' {
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

export function authModeOf (request: FastifyRequest): AuthMode {
  const declared = request.routeOptions.config.auth
  if (declared !== undefined) return declared
  return request.url.startsWith('/api/v1/') ? 'required' : 'none'
}

function bearer (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const m = /^Bearer\s+([A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]*)\s*$/i.exec(header)
  return m?.[1]
}

export function registerAuth (app: FastifyInstance, verifier: TokenVerifier, gate: { current: UserGate | undefined }): void {
  app.decorateRequest('auth', null as unknown as AuthContext)
  app.decorateRequest('optionalAuth', null)

  app.addHook('onRequest', async (request) => {
    const mode = authModeOf(request)
    if (mode === 'none') return
    const header = request.headers.authorization
    const token = bearer(header)
    if (token === undefined) {
      if (mode === 'optional' && header === undefined) return
      throw error401Unauthorized(header === undefined ? 'missing bearer token' : 'malformed authorization header')
    }
    let auth: AuthContext
    try {
      auth = await verifier.verify(token)
    } catch (err) {
      if (mode === 'optional') return
      throw err
    }
    if (gate.current !== undefined && !(await gate.current(auth))) {
      if (mode === 'optional') return
      throw error401Unauthorized('the user is not active')
    }
    request.auth = auth
    request.optionalAuth = auth
  })
}

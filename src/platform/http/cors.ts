/**
 * CORS for browser clients on other origins: off unless CORS_ORIGINS names them
 * (docs/api-conventions.md, "CORS"). Tokens travel in the `Authorization` header, never in cookies,
 * so no credentials mode is needed.
 *
 * Off: nothing is registered, and a preflight is answered like any method a path does not serve,
 * 405 ErrorModel with `Allow` (404 for an unknown path), without Access-Control-* headers; never 401.
 * On: @fastify/cors answers a preflight 204 before authentication (a browser sends no token on a
 * preflight), with `Access-Control-Allow-Origin` only for a listed origin.
 */
import type { FastifyInstance } from 'fastify'
import cors from '@fastify/cors'

/** What a browser may send and read across origins: the headers the API honours and sends. */
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'Idempotency-Key']
const EXPOSED_HEADERS = [
  'ETag',
  'Location',
  'Link',
  'Allow',
  'Retry-After',
  'WWW-Authenticate',
  'Idempotent-Replayed',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  // check-in and check-out say whether they changed anything (docs/check-in.md)
  'Check-In-Result',
  'Check-Out-Result',
  'Preference-Applied'
]

export async function registerCors (app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return
  // the preflight route @fastify/cors adds (`OPTIONS *`) needs no token
  app.addHook('onRoute', (route) => {
    if (route.url === '*' && route.method === 'OPTIONS') route.config = { ...route.config, auth: 'none' }
  })
  await app.register(cors, {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    // an OPTIONS request without Origin is answered 204 too, not a text/plain 400
    strictPreflight: false
  })
}

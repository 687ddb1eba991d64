/**
 * Every log line of a request names it: `reqId` (Fastify's request id), `route` (the route
 * template, `unmatched` when no route matched) and, once the token is verified, `tenant`. Handlers
 * and the error handler log through `request.log`, which carries them.
 *
 * - `route` is bound when Fastify creates the request's child logger: each route gets its own
 *   `childLoggerFactory` (`registerRequestLog`, an onRoute hook), the not-found handler and the
 *   router's errors the server's (`unmatchedRouteLogger`).
 * - `tenant` is bound by `bindTenant`, the onRequest hook right after authentication, to
 *   `request.log` and `reply.log` alike.
 * - Fastify's "incoming request" line is not written: it comes before authentication, so it could
 *   not name the tenant. "request completed" carries the request (method, URL, address) instead
 *   (`RequestLogController`), with the value of a `token` query parameter (a calendar feed's secret,
 *   docs/integrations.md) replaced by `[redacted]`.
 */
import {
  LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest
} from 'fastify'

type Bindings = Record<string, unknown>
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]

/** The server's child logger factory: requests that matched no route. */
export function unmatchedRouteLogger (
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions
): FastifyBaseLogger {
  return logger.child({ ...bindings, route: 'unmatched' }, options)
}

/**
 * Gives every route registered after it a child logger factory that binds its template. Call before any route is added.
 */
export function registerRequestLog (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.childLoggerFactory !== undefined) return
    const template = route.url
    route.childLoggerFactory = (logger, bindings, options) => logger.child({ ...bindings, route: template }, options)
  })
}

/** Binds the verified caller's tenant to the request's logger (register right after authentication). */
export async function bindTenant (request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const auth = request.optionalAuth
  if (auth === null || auth === undefined) return
  const log = request.log.child({ tenant: auth.tenantId })
  request.log = log
  reply.log = log
}

/** A URL with the value of every `token` query parameter replaced: secrets stay out of the logs. */
export function redactedUrl (url: string): string {
  const q = url.indexOf('?')
  if (q < 0 || !/(^|[?&])token=/.test(url.slice(q))) return url
  const params = new URLSearchParams(url.slice(q + 1))
  for (const key of new Set(params.keys())) {
    if (key === 'token') params.set(key, '[redacted]')
  }
  return `${url.slice(0, q)}?${params.toString()}`
}

/** The request as its log line shows it: the request itself, or a view of it whose URL is redacted. */
function loggedRequest (request: FastifyRequest): FastifyRequest {
  const url = redactedUrl(request.url)
  return url === request.url ? request : Object.create(request, { url: { value: url } }) as FastifyRequest
}

/** Fastify's request lines, less "incoming request"; "request completed" names the request. */
export class RequestLogController extends LogController {
  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return
    if (error !== null && error !== undefined) {
      const req = loggedRequest(request)
      reply.log.error({ req, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored')
    } else {
      reply.log.info({ req: loggedRequest(request), res: reply, responseTime: reply.elapsedTime }, 'request completed')
    }
  }
}

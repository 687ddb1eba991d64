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
 * - Every child is lazy (`LazyChild`): its bindings are serialized when it first writes a line at an enabled level,
 *   not when the request starts. At the production level (`warn`) most requests write none, and pino's `child`
 *   (which renders its bindings as JSON text at once) cost two calls a request (docs/performance.md).
 */
import {
  LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest
} from 'fastify'

type Bindings = Record<string, unknown>
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type LogArgs = Parameters<FastifyBaseLogger['info']>

/** Whether `logger` writes lines of `level` (pino's own test; a logger without one writes them all). */
function writes (logger: FastifyBaseLogger, level: Level): boolean {
  const test = (logger as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled
  return typeof test !== 'function' || test.call(logger, level)
}

/**
 * A child logger made of its parent and bindings, turned into the parent's real child (`parent.child(bindings)`) the
 * first time it writes a line at a level its parent writes, or its level is read or set: until then nothing is
 * serialized. A line it writes is the line the real child would write.
 */
export class LazyChild implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Bindings
  #real: FastifyBaseLogger | undefined

  constructor (parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  /** The real child: of the parent's real child when the parent is lazy too. */
  #child (): FastifyBaseLogger {
    if (this.#real === undefined) {
      const parent = this.#parent instanceof LazyChild ? this.#parent.#child() : this.#parent
      this.#real = parent.child(this.#bindings)
    }
    return this.#real
  }

  #write (level: Level, args: LogArgs): void {
    if (this.#real === undefined && !writes(this.#parent, level)) return
    const real = this.#child()
    real[level](...args)
  }

  get level (): string { return this.#real?.level ?? this.#parent.level }
  set level (level: string) { this.#child().level = level }

  isLevelEnabled (level: Level): boolean {
    return this.#real !== undefined ? writes(this.#real, level) : writes(this.#parent, level)
  }

  fatal (...args: LogArgs): void { this.#write('fatal', args) }
  error (...args: LogArgs): void { this.#write('error', args) }
  warn (...args: LogArgs): void { this.#write('warn', args) }
  info (...args: LogArgs): void { this.#write('info', args) }
  debug (...args: LogArgs): void { this.#write('debug', args) }
  trace (...args: LogArgs): void { this.#write('trace', args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return childOf(this, bindings, options)
  }
}

/** A lazy child, or the real one when options change how it writes (a route's own level or serializers). */
function childOf (parent: FastifyBaseLogger, bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
  if (options !== undefined && Object.keys(options).length > 0) return parent.child(bindings, options)
  return new LazyChild(parent, bindings)
}

/** The server's child logger factory: requests that matched no route. */
export function unmatchedRouteLogger (
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions
): FastifyBaseLogger {
  return childOf(logger, { ...bindings, route: 'unmatched' }, options)
}

/**
 * Gives every route registered after it a child logger factory that binds its template. Call before any route is added.
 */
export function registerRequestLog (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.childLoggerFactory !== undefined) return
    const template = route.url
    route.childLoggerFactory = (logger, bindings, options) => childOf(logger, { ...bindings, route: template }, options)
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

/**
 * The one error handler: every failure leaves as `application/problem+json` ErrorModel.
 * ApiError renders as itself; Ajv failures become 400 with one entry per problem; framework
 * errors keep their 4xx status; database errors map through pg-errors; everything else is a 500
 * whose details stay in the log (never a stack trace or SQL text to the client). Every body names its
 * problem type: `code` and `type` = `<BASE_URL>/problems/<code>` (problem-types.ts, docs/errors.md).
 */
import { STATUS_CODES } from 'node:http'
import Router, { type HTTPMethod } from 'find-my-way'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, error404NotFound, type ErrorDetail, type ErrorModel } from './errors.ts'
import { mayAnswer, problemTypeUri, registerProblemTypes, type ProblemCode } from './problem-types.ts'
import { toErrorDetails } from './validation.ts'
import { mapPgError } from '../db/pg-errors.ts'

export const PROBLEM_JSON = 'application/problem+json'

/** Converts any thrown value into an ApiError; unknown errors become a 500. */
export function toApiError (err: unknown, request?: FastifyRequest): ApiError {
  if (err instanceof ApiError) return err
  const e = err as FastifyError & { validationContext?: string, validation?: unknown }
  if (Array.isArray(e.validation)) {
    return new ApiError(400, 'validation failed', toErrorDetails(e.validation, e.validationContext ?? 'body'))
  }
  const pg = mapPgError(err)
  if (pg !== undefined) return pg
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'request body is too large')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      // the media type sent, named (a route of its own types: the CSV and iCalendar imports, the page's form)
      return new ApiError(415, `unsupported media type ${request?.headers['content-type'] ?? '(none)'}`, [
        { location: 'header.content-type', message: 'unsupported media type', value: request?.headers['content-type'] }
      ], {}, 'unsupported_media_type')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'validation failed', [{ location: 'body', message: 'expected a JSON body' }])
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError(400, 'validation failed', [{ location: 'body', message: 'invalid JSON' }])
    default:
      break
  }
  if (err instanceof SyntaxError && (e.statusCode === 400)) {
    return new ApiError(400, 'validation failed', [{ location: 'body', message: 'invalid JSON' }])
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500
  if (status >= 400 && status < 500) return new ApiError(status, e.message || (STATUS_CODES[status] ?? 'error'))
  return new ApiError(500, 'internal server error')
}

export function problemBody (err: ApiError, request: FastifyRequest, baseUrl: string): ErrorModel {
  const body: ErrorModel = {
    $schema: `${baseUrl}/schemas/ErrorModel.json`,
    status: err.status,
    title: err.title,
    detail: err.detail,
    type: problemTypeUri(baseUrl, err.code),
    code: err.code,
    instance: `${request.url.split('?')[0] ?? '/'}#${request.id}`
  }
  if (err.errors.length > 0) body.errors = err.errors as ErrorDetail[]
  return body
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The answers whose specific code their operation does not declare (`operationId code`, at most 100): the
     * document would not list them (openapi.ts, `x-problem-codes`). test/problem-types.test.ts holds it empty.
     */
    undeclaredProblemCodes: Set<string>
  }
}

/** Notes (and logs) a code the request's operation does not declare (problem-types.ts, `on`). */
function noteUndeclared (request: FastifyRequest, code: ProblemCode): void {
  const schema = request.routeOptions.schema as { operationId?: string, tags?: string[] } | undefined
  const operationId = schema?.operationId
  if (operationId === undefined) return
  if (mayAnswer({ method: request.method, tags: schema?.tags, operationId }, code)) return
  request.log.warn({ code, operationId }, 'problem code not declared by its operation (problem-types.ts)')
  const seen = request.server.undeclaredProblemCodes as Set<string> | undefined
  if (seen !== undefined && seen.size < 100) seen.add(`${operationId} ${code}`)
}

export function sendProblem (reply: FastifyReply, err: ApiError, baseUrl: string): FastifyReply {
  noteUndeclared(reply.request, err.code)
  for (const [k, v] of Object.entries(err.headers)) void reply.header(k, v)
  return reply.code(err.status).type(PROBLEM_JSON).send(problemBody(err, reply.request, baseUrl))
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
const RETRY_CODES = new Set<unknown>(['40001', '40P01'])

export function registerErrorHandling (app: FastifyInstance, baseUrl: string): void {
  app.decorate('undeclaredProblemCodes', new Set<string>())
  registerProblemTypes(app, baseUrl, code => error404NotFound(`no problem type ${code}`))
  // A shadow router of every route's path, to tell "no such path" (404) from "not this method" (405).
  const paths = Router()
  app.addHook('onRoute', (route) => {
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) {
      if ((METHODS as readonly string[]).includes(m) && paths.find(m as HTTPMethod, route.url) === null) {
        paths.on(m as HTTPMethod, route.url, () => {})
      }
    }
  })

  app.setErrorHandler((err, request, reply) => {
    const apiError = toApiError(err, request)
    if (apiError.status >= 500) {
      request.log.error({ err, method: request.method, url: request.url }, 'request failed')
    } else if (RETRY_CODES.has((err as { code?: unknown }).code)) {
      // a deadlock or serialization failure that outlived withTenant's retries: the server's own words say which locks
      // met
      const e = err as { code: string, message?: string, detail?: string }
      request.log.warn(
        { status: apiError.status, code: e.code, error: e.message, pgDetail: e.detail },
        'request conflicted in the database'
      )
    } else if (apiError.status !== 404 && apiError.status !== 401) {
      request.log.info({ status: apiError.status, detail: apiError.detail }, 'request refused')
    }
    return sendProblem(reply, apiError, baseUrl)
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const allowed = METHODS.filter(m => paths.find(m, path) !== null)
    if (allowed.length > 0) {
      return sendProblem(
        reply,
        new ApiError(405, `${request.method} is not allowed on ${path}`, [], { allow: allowed.join(', ') }),
        baseUrl
      )
    }
    return sendProblem(reply, new ApiError(404, `no route for ${request.method} ${path}`), baseUrl)
  })
}

/**
 * SCIM's own error format (RFC 7644 §3.12) for every 4xx and 5xx of the SCIM routes:
 * `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"400","scimType":"invalidValue","detail":"…"}`.
 * A `ScimError` carries its `scimType`; any other error (schema validation, a refused token, a rate limit, a database
 * conflict) is mapped from the platform's problem document by its status.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../../platform/http/errors.ts'
import { toApiError } from '../../platform/http/error-handler.ts'

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error'
export const SCIM_JSON = 'application/scim+json; charset=utf-8'

export type ScimType =
  | 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget'
  | 'invalidValue' | 'invalidVers' | 'sensitive'

/** An error of a SCIM route with its `scimType` (RFC 7644 §3.12, table 9). */
export class ScimError extends ApiError {
  constructor (status: number, readonly scimType: ScimType | undefined, detail: string) {
    super(status, detail)
  }
}

export const invalidValue = (detail: string): ScimError => new ScimError(400, 'invalidValue', detail)
export const invalidSyntax = (detail: string): ScimError => new ScimError(400, 'invalidSyntax', detail)
export const invalidFilter = (detail: string): ScimError => new ScimError(400, 'invalidFilter', detail)
export const uniqueness = (detail: string): ScimError => new ScimError(409, 'uniqueness', detail)
export const notFound = (detail: string): ScimError => new ScimError(404, undefined, detail)

export interface ScimErrorBody {
  schemas: string[]
  status: string
  scimType?: string
  detail: string
}

export function scimErrorBody (status: number, detail: string, scimType?: string): ScimErrorBody {
  return { schemas: [ERROR_SCHEMA], status: String(status), ...(scimType !== undefined ? { scimType } : {}), detail }
}

/** The scimType of an error that is not a ScimError, by what it is. */
function scimTypeOf (err: unknown, api: ApiError): ScimType | undefined {
  if (err instanceof ScimError) return err.scimType
  const e = err as FastifyError & { validation?: unknown }
  if (api.status === 409) return 'uniqueness'
  if (api.status !== 400) return undefined
  if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
    err instanceof SyntaxError) return 'invalidSyntax'
  return 'invalidValue'
}

/** The detail of an error: its own, and for a validation failure the first problem's place and words. */
function detailOf (api: ApiError): string {
  const first = api.errors[0]
  if (first === undefined) return api.detail
  return `${api.detail}: ${first.location ?? ''} ${first.message ?? ''}`.trim()
}

async function sendScimError (reply: FastifyReply, api: ApiError, scimType: string | undefined): Promise<FastifyReply> {
  for (const [k, v] of Object.entries(api.headers)) void reply.header(k, v)
  return await reply.code(api.status).type(SCIM_JSON).send(JSON.stringify(scimErrorBody(api.status, detailOf(api),
    scimType)))
}

/**
 * In the SCIM routes' scope: errors leave as SCIM errors, bodies as `application/scim+json`. The error handler answers
 * what the routes and their hooks throw; the onSend hook rewrites a problem document sent before the routes' scope
 * could (a refused token, a rate limit: the platform's hooks answer those themselves).
 */
export function registerScimErrors (app: FastifyInstance): void {
  app.setErrorHandler(async (err, request: FastifyRequest, reply) => {
    const api = toApiError(err)
    if (api.status >= 500) request.log.error({ err, method: request.method, url: request.url }, 'request failed')
    else if (api.status !== 404 && api.status !== 401) {
      request.log.info({ status: api.status, detail: api.detail }, 'request refused')
    }
    return await sendScimError(reply, api, scimTypeOf(err, api))
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    const type = String(reply.getHeader('content-type') ?? '')
    if (type.startsWith('application/problem+json') && typeof payload === 'string') {
      let problem: { status?: number, detail?: string }
      try {
        problem = JSON.parse(payload) as { status?: number, detail?: string }
      } catch {
        return payload
      }
      void reply.type(SCIM_JSON)
      const status = problem.status ?? reply.statusCode
      return JSON.stringify(scimErrorBody(status, problem.detail ?? 'error'))
    }
    if (type.startsWith('application/json')) void reply.type(SCIM_JSON)
    return payload
  })
}

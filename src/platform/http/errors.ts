/**
 * Errors are values with a status: throw an ApiError anywhere, and the one error handler
 * renders it as `application/problem+json` with the spec's ErrorModel (part 7). Each carries a
 * `code` of the problem catalogue (problem-types.ts, docs/errors.md): the status's generic one
 * unless the throw site names a specific one, the last argument of the helpers.
 */
import { STATUS_CODES } from 'node:http'
import { Type, type Static } from '@sinclair/typebox'
import { defaultCode, PROBLEM_CODES, type ProblemCode } from './problem-types.ts'

export const ErrorDetail = Type.Object({
  location: Type.Optional(Type.String({ description: 'Where the error occurred, e.g. body.items[3].tags or path.id' })),
  message: Type.Optional(Type.String({ description: 'Error message text' })),
  value: Type.Optional(Type.Unknown({ description: 'The value at the given location' }))
}, { $id: 'ErrorDetail', additionalProperties: false })
export type ErrorDetail = Static<typeof ErrorDetail>

export const ErrorModel = Type.Object(
  {
    $schema: Type.Optional(Type.String({ format: 'uri', description: 'A URL to the JSON Schema for this object.' })),
    status: Type.Integer({ description: 'HTTP status code', examples: [400] }),
    title: Type.String({
      description: 'A short, human-readable summary of the problem type.',
      examples: ['Bad Request']
    }),
    detail: Type.Optional(
      Type.String({ description: 'A human-readable explanation specific to this occurrence of the problem.' })
    ),
    type: Type.String({
      description: 'The problem type: `<BASE_URL>/problems/<code>`, a page saying when it happens and what to do ' +
        '(docs/errors.md).',
      format: 'uri'
    }),
    code: Type.Unsafe<ProblemCode>(Type.String({
      enum: PROBLEM_CODES,
      description: 'The stable, machine-readable kind of the problem (docs/errors.md): branch on it, not on ' +
        '`detail`. New codes may be added.'
    })),
    instance: Type.Optional(
      Type.String({ description: 'A URI reference that identifies the specific occurrence of the problem.' })
    ),
    errors: Type.Optional(Type.Array(ErrorDetail, { description: 'Optional list of individual error details' }))
  },
  { $id: 'ErrorModel', additionalProperties: false }
)
export type ErrorModel = Static<typeof ErrorModel>

/**
 * An error that the handler renders with its own status, detail and field errors.
 *
 * @example
 *   throw new ApiError(409, 'contact already attends this event', [{ location: 'body.contact_id', value: id }], {},
 *     'already_attending')
 */
export class ApiError extends Error {
  /** the problem's code in the catalogue (docs/errors.md): the status's generic one unless given */
  readonly code: ProblemCode

  constructor (
    readonly status: number,
    readonly detail: string,
    readonly errors: ErrorDetail[] = [],
    readonly headers: Record<string, string> = {},
    code?: ProblemCode
  ) {
    // an answer, not a fault: no stack trace is captured (a tenth of the 401 path's CPU; docs/performance.md)
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(detail)
    Error.stackTraceLimit = limit
    this.name = 'ApiError'
    this.code = code ?? defaultCode(status)
  }

  get title (): string {
    return STATUS_CODES[this.status] ?? 'Error'
  }
}

/** One field problem, for the `errors` list. */
export function fieldError (location: string, message: string, value?: unknown): ErrorDetail {
  return value === undefined ? { location, message } : { location, message, value }
}

export const error400BadRequest = (detail: string, errors: ErrorDetail[] = [], code?: ProblemCode): ApiError =>
  new ApiError(400, detail, errors, {}, code)
export const error401Unauthorized = (detail = 'missing or invalid credentials'): ApiError =>
  new ApiError(401, detail, [], { 'www-authenticate': 'Bearer' })
export const error403Forbidden = (detail = 'not allowed', code?: ProblemCode): ApiError =>
  new ApiError(403, detail, [], {}, code)
export const error404NotFound = (detail = 'not found'): ApiError => new ApiError(404, detail)
export const error409Conflict = (detail: string, errors: ErrorDetail[] = [], code?: ProblemCode): ApiError =>
  new ApiError(409, detail, errors, {}, code)
export const error412PreconditionFailed = (detail: string): ApiError => new ApiError(412, detail)
export const error413PayloadTooLarge = (detail: string): ApiError => new ApiError(413, detail)
export const error415UnsupportedMediaType = (detail: string): ApiError => new ApiError(415, detail)
export const error422UnprocessableEntity = (
  detail: string, errors: ErrorDetail[] = [], code?: ProblemCode
): ApiError => new ApiError(422, detail, errors, {}, code)
export const error503ServiceUnavailable = (detail: string): ApiError =>
  new ApiError(503, detail, [], { 'retry-after': '5' })

/** A 400 for one field, the common case of a rule that a schema cannot express. */
export function invalidField (location: string, message: string, value?: unknown): ApiError {
  return error400BadRequest('validation failed', [fieldError(location, message, value)])
}

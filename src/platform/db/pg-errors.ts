/**
 * PostgreSQL errors that a client caused or should retry, mapped to API errors. Constraint
 * names and SQL text are never echoed: they would describe the schema (and other tenants' rows).
 */
import { ApiError } from '../http/errors.ts'
import type { ProblemCode } from '../http/problem-types.ts'

const UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006'
])

export function isDatabaseUnavailable (err: unknown): boolean {
  const e = err as { code?: string, message?: string }
  if (e.code !== undefined && UNAVAILABLE.has(e.code)) return true
  return (
    typeof e.message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
      e.message
    )
  )
}

/** A 409 with its code: a client retries a concurrent update or a lock, and does not retry a duplicate. */
const conflict = (detail: string, code: ProblemCode): ApiError => new ApiError(409, detail, [], {}, code)

export function mapPgError (err: unknown): ApiError | undefined {
  const e = err as { code?: string, severity?: string }
  if (isDatabaseUnavailable(err)) {
    return new ApiError(503, 'database unavailable, retry shortly', [], { 'retry-after': '5' })
  }
  if (typeof e.code !== 'string' || e.severity === undefined) return undefined
  switch (e.code) {
    case '23505': return conflict('a resource with the same unique value already exists', 'unique_violation')
    case '23503': return conflict('a referenced resource does not exist or is still referenced', 'reference_conflict')
    case '23514': return new ApiError(400, 'a value is out of the allowed range')
    case '22P02':
    case '22007':
    case '22008':
    case '22003':
    case '22001':
    case '22021':
    case '22P05': return new ApiError(400, 'a value has an invalid format or is out of range')
    case '40001':
    case '40P01': return conflict('concurrent update, retry the request', 'concurrent_update')
    case '55P03': return conflict('the resource is locked by another request, retry', 'resource_locked')
    case '57014': return new ApiError(503, 'the query took too long', [], { 'retry-after': '5' })
    default: return undefined
  }
}

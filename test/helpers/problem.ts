/**
 * Checks that a response is what the error handler promises (runtime contract, "Errors"): an
 * `application/problem+json` ErrorModel whose status matches, with a `location` on every field
 * error of a 400, and no stack trace or SQL text.
 */
import assert from 'node:assert/strict'
import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { LightMyRequestResponse } from 'fastify'
import { ErrorModel } from '../../src/platform/http/errors.ts'

type AddFormats = (ajv: Ajv) => Ajv
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats)

/** An Ajv for response bodies: strict types, every format known, OpenAPI annotations tolerated. */
export function responseAjv (): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: true, addUsedSchema: false })
  addFormats(ajv)
  return ajv
}

const ajv = responseAjv()
const validateError: ValidateFunction = ajv.compile({ ...ErrorModel, $id: undefined })

const LEAKS = new RegExp([
  String.raw`\bat [\w.<>]+ \(`, 'node_modules', String.raw`\bselect\b.*\bfrom\b`, String.raw`\binsert into\b`,
  String.raw`\bupdate \w+ set\b`, 'violates .* constraint', 'relation "', 'syntax error at'
].join('|'), 'i')

/** Problems with an error response, empty when it is a proper ErrorModel. */
export function problemIssues (
  res: LightMyRequestResponse | { statusCode: number; headers: Record<string, unknown>; body: string }
): string[] {
  const issues: string[] = []
  const type = String(res.headers['content-type'] ?? '')
  if (!type.startsWith('application/problem+json')) issues.push(`content-type ${type}`)
  let body: unknown
  try {
    body = JSON.parse(res.body)
  } catch {
    return [...issues, `body is not JSON: ${res.body.slice(0, 200)}`]
  }
  if (!validateError(body)) issues.push(`not an ErrorModel: ${ajv.errorsText(validateError.errors)}`)
  const b = body as { status?: unknown; errors?: Array<{ location?: unknown }> }
  if (b.status !== res.statusCode) issues.push(`body.status ${String(b.status)} != ${res.statusCode}`)
  if (res.statusCode === 400) {
    if (!Array.isArray(b.errors) || b.errors.length === 0) issues.push('400 without errors[]')
    else if (b.errors.some(e => typeof e.location !== 'string' || e.location === '')) {
      issues.push('400 with an error without location')
    }
  }
  if (LEAKS.test(res.body)) issues.push(`body leaks internals: ${res.body.slice(0, 300)}`)
  return issues
}

export function errorLocations (res: { body: string }): string[] {
  try {
    const b = JSON.parse(res.body) as { errors?: Array<{ location?: string }> }
    return (b.errors ?? []).map(e => e.location ?? '')
  } catch {
    return []
  }
}

/** The field errors of an answer whose location is exactly `location`. */
export function errorsAt (
  res: LightMyRequestResponse,
  location: string
): Array<{ location?: string; message?: string }> {
  try {
    const b = JSON.parse(res.body) as { errors?: Array<{ location?: string; message?: string }> }
    return (b.errors ?? []).filter(e => e.location === location)
  } catch {
    return []
  }
}

/**
 * Whether an answer refuses a value that is exactly at its declared bound: a size error at its
 * location, or a 400 without any location (the database refused what the schema allows). Other
 * rules at that location (a real time zone, a known template) may still refuse the filler value.
 */
export function refusedAtBound (res: LightMyRequestResponse, location: string): boolean {
  if (res.statusCode === 400 && errorLocations(res).length === 0) return true
  return errorsAt(res, location).some(e => /length|items|<=|>=/.test(e.message ?? ''))
}

/** A 400 ErrorModel (as `problemIssues` checks it) with a field error at `location`, among others. */
export function assertBadRequestAt (
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  location: string
): void {
  assert.equal(res.statusCode, 400, res.body)
  assert.deepEqual(problemIssues(res), [])
  const locations = errorLocations(res)
  assert.ok(
    locations.includes(location),
    `expected ${location} in ${JSON.stringify(locations)}: ${res.body.slice(0, 400)}`
  )
}

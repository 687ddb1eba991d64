/**
 * Request validation. Two Ajv instances: bodies are validated strictly (no type coercion, so
 * `"5"` is not an integer), while query, path and header values are strings on the wire and are
 * coerced. Both report every problem at once (Huma's exhaustive errors) and never strip unknown
 * properties: unknown body fields are refused by the schemas instead.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { onDemand, structuralCache } from './compile-on-demand.ts'
import { fieldError, invalidField, type ErrorDetail } from './errors.ts'

// ajv-formats is CommonJS; under ESM its function arrives as the module's `default`.
type AddFormats = (ajv: Ajv) => Ajv
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats)

function newAjv (coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    verbose: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    // Named schemas appear in many routes; do not register them globally by $id.
    addUsedSchema: false
  })
  addFormats(ajv)
  ajv.addKeyword({ keyword: 'x-kind' })
  return ajv
}

const bodyAjv = newAjv(false)
const paramAjv = newAjv(true)
const validators = {
  body: structuralCache<ValidateFunction>(),
  param: structuralCache<ValidateFunction>(),
  // apart from the params and headers: a query's validator normalises its flags first
  query: structuralCache<ValidateFunction>()
}

interface QuerySchema { properties?: Record<string, { type?: unknown }>, allOf?: QuerySchema[] }

/** The boolean properties of a query schema (`QueryFlag`, schema.ts), of its own or of the parts it intersects. */
function queryFlagsOf (schema: unknown): string[] {
  const { properties = {}, allOf = [] } = schema as QuerySchema
  return [
    ...Object.keys(properties).filter(name => properties[name]?.type === 'boolean'),
    ...allOf.flatMap(queryFlagsOf)
  ]
}

const FLAG_VALUES: Record<string, boolean> = { 1: true, 0: false }

/**
 * The query flags as the schema reads them: `1` and `0` as booleans (Ajv coerces only `true` and `false`), an empty
 * value as not given (the `''` of the filters that once were string enums); anything else is left for the schema
 * to refuse with a 400 naming `query.<name>`.
 */
export function normaliseQueryFlags (query: unknown, flags: readonly string[]): void {
  if (query === null || typeof query !== 'object') return
  const q = query as Record<string, unknown>
  for (const name of flags) {
    const value = q[name]
    if (value === '') delete q[name]
    else if (typeof value === 'string' && value in FLAG_VALUES) q[name] = FLAG_VALUES[value]
  }
}

/** Validators compiled on demand and shared between routes with equal schemas (compile-on-demand.ts). */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const body = httpPart === 'body'
  const query = httpPart === 'querystring'
  return validators[body ? 'body' : query ? 'query' : 'param'](schema, () => {
    const flags = query ? queryFlagsOf(schema) : []
    const compiled = onDemand(() => (body ? bodyAjv : paramAjv).compile(schema as object))
    // Fastify reads `errors` from the function it was given
    const validate = ((data: unknown) => {
      if (flags.length > 0) normaliseQueryFlags(data, flags)
      const fn = compiled()
      const ok = fn(data)
      validate.errors = fn.errors
      return ok
    }) as ValidateFunction
    return validate
  })
}

const PART: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

const FORMAT_NAMES: Record<string, string> = {
  'date-time': 'RFC 3339 date-time',
  date: 'RFC 3339 full-date',
  email: 'RFC 5322 email',
  uri: 'RFC 3986 uri',
  uuid: 'RFC 4122 uuid'
}

/** `/items/3/tags` → `.items[3].tags` */
function pointerToPath (pointer: string): string {
  if (pointer === '') return ''
  return pointer.split('/').slice(1).map((seg) => {
    const s = seg.replace(/~1/g, '/').replace(/~0/g, '~')
    return /^\d+$/.test(s) ? `[${s}]` : `.${s}`
  }).join('')
}

function message (e: ErrorObject): string {
  const p = e.params as Record<string, unknown>
  switch (e.keyword) {
    case 'required': return `expected required property ${String(p.missingProperty)} to be present`
    case 'additionalProperties': return 'unexpected property'
    case 'maxLength': return `expected length <= ${String(p.limit)}`
    case 'minLength': return `expected length >= ${String(p.limit)}`
    case 'maximum': return `expected number <= ${String(p.limit)}`
    case 'minimum': return `expected number >= ${String(p.limit)}`
    case 'exclusiveMaximum': return `expected number < ${String(p.limit)}`
    case 'exclusiveMinimum': return `expected number > ${String(p.limit)}`
    case 'maxItems': return `expected array length <= ${String(p.limit)}`
    case 'minItems': return `expected array length >= ${String(p.limit)}`
    case 'maxProperties': return `expected object with at most ${String(p.limit)} properties`
    case 'uniqueItems': return 'expected array items to be unique'
    case 'type': return `expected ${String(p.type)}`
    case 'format': return `expected string to be ${FORMAT_NAMES[String(p.format)] ?? String(p.format)}`
    case 'enum': return `expected value to be one of "${(p.allowedValues as unknown[]).join(', ')}"`
    case 'const': return `expected value to be ${JSON.stringify(p.allowedValue)}`
    case 'pattern': return `expected string to match pattern ${String(p.pattern)}`
    default: return e.message ?? 'invalid value'
  }
}

/**
 * A value echoed in a field error, with nesting below 16 levels elided: a deeply nested value would overflow the
 * serializer.
 */
function elideDeep (value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value
  if (depth >= 16) return Array.isArray(value) ? '[…]' : '{…}'
  if (Array.isArray(value)) return value.map(v => elideDeep(v, depth + 1))
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, elideDeep(v, depth + 1)]))
}

interface TaggedUnion {
  oneOf?: unknown
  properties?: Record<string, unknown>
}

/**
 * The property whose value names the branch of a union (automation actions' `type`): one the union declares and
 * every branch fixes with a `const`.
 */
function tagOf (union: TaggedUnion | undefined): string | undefined {
  const branches = union?.oneOf
  if (!Array.isArray(branches)) return undefined
  const fixes = (name: string) => (b: { properties?: Record<string, { const?: unknown }> }) =>
    b.properties?.[name]?.const !== undefined
  return Object.keys(union?.properties ?? {}).find(name => branches.every(fixes(name)))
}

/**
 * Ajv reports a failed `oneOf` with the errors of every branch. Of a union tagged by a property whose `const` names
 * each branch (automation actions' `type`), keeps those of the branch the value names: the others' (`type` should be
 * "webhook", `url` is missing…) describe objects the client did not send. A value that names no
 * branch keeps none of them; the union's own `properties` report its tag. Needs Ajv's `verbose`
 * errors, which carry the value and the union's schema.
 */
export function namedBranchErrors (errors: ErrorObject[]): ErrorObject[] {
  const others: Array<{ schemaPath: string, instancePath: string }> = []
  for (const e of errors) {
    if (e.keyword !== 'oneOf') continue
    const union = e.parentSchema as TaggedUnion | undefined
    const tag = tagOf(union)
    if (!Array.isArray(union?.oneOf) || tag === undefined) continue
    const value = e.data !== null && typeof e.data === 'object' ? (e.data as Record<string, unknown>)[tag] : undefined
    union.oneOf.forEach((branch: { properties?: Record<string, { const?: unknown }> }, i) => {
      if (value === undefined || branch.properties?.[tag]?.const !== value) {
        others.push({ schemaPath: `${e.schemaPath}/${i}/`, instancePath: e.instancePath })
      }
    })
  }
  if (others.length === 0) return errors
  return errors.filter(e => !others.some(o =>
    e.schemaPath.startsWith(o.schemaPath) &&
    (e.instancePath === o.instancePath || e.instancePath.startsWith(`${o.instancePath}/`))))
}

/**
 * Turns Ajv errors into ErrorModel details with Huma locations
 * (`body.first_name`, `query.size`, `path.id`, `header.if-match`).
 */
export function toErrorDetails (errors: ErrorObject[], context: string): ErrorDetail[] {
  const part = PART[context] ?? context
  // A union (nullable field) reports every branch; keep the branch that explains the problem.
  const real = namedBranchErrors(errors)
    .filter(e => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if')
  const byPath = new Map<string, ErrorObject[]>()
  for (const e of real) {
    const list = byPath.get(e.instancePath) ?? []
    list.push(e)
    byPath.set(e.instancePath, list)
  }
  const out: ErrorDetail[] = []
  const seen = new Set<string>()
  for (const [, list] of byPath) {
    const kept =
      list.length > 1
        ? list.filter(e => !(e.keyword === 'type' && (e.params as { type?: string }).type === 'null'))
        : list
    for (const e of kept.length > 0 ? kept : list) {
      const p = e.params as Record<string, unknown>
      let loc = part + pointerToPath(e.instancePath)
      let value: unknown = e.data
      if (e.keyword === 'required') {
        loc += `.${String(p.missingProperty)}`
        value = undefined
      } else if (e.keyword === 'additionalProperties') {
        loc += `.${String(p.additionalProperty)}`
        value = (e.data as Record<string, unknown> | undefined)?.[String(p.additionalProperty)]
      }
      const msg = message(e)
      const k = `${loc}\u0000${msg}`
      if (seen.has(k)) continue
      seen.add(k)
      out.push(
        fieldError(
          loc,
          msg,
          typeof value === 'string' && value.length > 200 ? `${value.slice(0, 200)}…` : elideDeep(value)
        )
      )
    }
  }
  return out
}

/** Deepest nesting of objects and arrays a request may carry (docs/api-conventions.md). */
export const MAX_JSON_DEPTH = 32

/** A UTF-16 surrogate without its pair: jsonb and PostgreSQL text refuse it (22P05). */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Where a JSON value holds a lone UTF-16 surrogate (in a key or a string), as a field location under `location`
 * (`body.metadata.a[2]`), or undefined. Walked without recursion, so any depth is safe to check.
 */
export function loneSurrogateAt (root: unknown, location: string): string | undefined {
  const stack: Array<[unknown, string]> = [[root, location]]
  while (stack.length > 0) {
    const [value, at] = stack.pop() as [unknown, string]
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) return at
      continue
    }
    if (value === null || typeof value !== 'object') continue
    const entries = Object.entries(value)
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, v] = entries[i] as [string, unknown]
      const here = Array.isArray(value) ? `${at}[${k}]` : `${at}.${k}`
      if (LONE_SURROGATE.test(k)) return here
      stack.push([v, here])
    }
  }
  return undefined
}

/** Whether `tz` names a time zone of the IANA database (as the runtime's Intl knows it). */
export function isTimezone (tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz }).format(0)
    return true
  } catch {
    return false
  }
}

/** A 400 naming `location` when a time zone is given and is not an IANA name. */
export function checkTimezone (tz: string | undefined, location: string): void {
  if (tz !== undefined && !isTimezone(tz)) throw invalidField(location, 'expected an IANA time zone name', tz)
}

export interface TextProblem { location: string, message: string }

/**
 * Finds the first value PostgreSQL could not store or that would make the request expensive to
 * handle: nesting deeper than MAX_JSON_DEPTH, text with a NUL character (PostgreSQL text cannot
 * hold one), or a lone UTF-16 surrogate (jsonb refuses it). Iterative, so no input is too deep
 * for it.
 */
export function findTextProblem (root: unknown, rootLocation: string): TextProblem | undefined {
  const stack: Array<{ value: unknown; location: string; depth: number }> = [
    { value: root, location: rootLocation, depth: 0 }
  ]
  while (stack.length > 0) {
    const { value, location, depth } = stack.pop() as { value: unknown, location: string, depth: number }
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return { location, message: 'expected text without NUL characters' }
      if (LONE_SURROGATE.test(value)) {
        return { location, message: 'expected well-formed Unicode text (no lone surrogates)' }
      }
      continue
    }
    if (value === null || typeof value !== 'object') continue
    if (depth >= MAX_JSON_DEPTH) return { location, message: `expected JSON nested at most ${MAX_JSON_DEPTH} levels` }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i], location: `${location}[${i}]`, depth: depth + 1 })
      }
      continue
    }
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000') || LONE_SURROGATE.test(k)) {
        return {
          location: `${location}.${[...k].map(c => (c === '\u0000' || LONE_SURROGATE.test(c) ? '?' : c)).join('')}`,
          message: 'expected a well-formed property name'
        }
      }
      stack.push({ value: v, location: `${location}.${k}`, depth: depth + 1 })
    }
  }
  return undefined
}

/**
 * Values from JSON schemas (as the OpenAPI document gives them): a minimal valid instance, and
 * fast-check arbitraries of valid, boundary and invalid values for the fuzzer.
 */
import fc from 'fast-check'
import type { JsonSchema } from './routes.ts'

const asList = (v: unknown): JsonSchema[] => Array.isArray(v) ? v as JsonSchema[] : []
const typeOf = (s: JsonSchema): string | undefined => {
  const t = s.type
  if (Array.isArray(t)) return t.find(x => x !== 'null') as string | undefined
  return t as string | undefined
}

function formatSample (format: string | undefined): string | undefined {
  switch (format) {
    case 'email': return 'someone@example.test'
    case 'uri': return 'https://example.test/a'
    case 'uuid': return '00000000-0000-4000-8000-000000000000'
    case 'date-time': return '2030-01-02T03:04:05Z'
    case 'date': return '2030-01-02'
    case 'time': return '03:04:05Z'
    case undefined:
    default: return undefined
  }
}

/** A small valid instance: required properties only, lower bounds, first enum value. */
export function sampleValid (schema: JsonSchema | undefined): unknown {
  if (schema === undefined) return undefined
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  if ('default' in schema && schema.default !== undefined) return schema.default
  const branches = asList(schema.anyOf ?? schema.oneOf)
  if (branches.length > 0) {
    const nonNull = branches.find(b => b.type !== 'null') ?? branches[0]
    return sampleValid(nonNull)
  }
  const all = asList(schema.allOf)
  if (all.length > 0) return Object.assign({}, ...all.map(s => sampleValid(s) as object))
  switch (typeOf(schema) ?? 'object') {
    case 'string': {
      const f = formatSample(schema.format as string | undefined)
      if (f !== undefined) return f
      const min = Number(schema.minLength ?? 1)
      return 'x'.repeat(Math.max(1, min))
    }
    case 'integer':
    case 'number': {
      const min =
        typeof schema.minimum === 'number'
          ? schema.minimum
          : typeof schema.exclusiveMinimum === 'number'
            ? schema.exclusiveMinimum + 1
            : 1
      return Math.max(min, typeof schema.maximum === 'number' ? Math.min(1, schema.maximum) : 1)
    }
    case 'boolean': return true
    case 'null': return null
    case 'array': {
      const min = Number(schema.minItems ?? 0)
      const items = schema.items as JsonSchema | undefined
      return Array.from({ length: min }, (_v, i) => {
        const v = sampleValid(items)
        return typeof v === 'string' && schema.uniqueItems === true ? `${v}${i}` : v
      })
    }
    case 'object':
    default: {
      const props = (schema.properties ?? {}) as Record<string, JsonSchema>
      const out: Record<string, unknown> = {}
      for (const name of asList(schema.required) as unknown as string[]) {
        if (props[name] !== undefined) out[name] = sampleValid(props[name])
      }
      return out
    }
  }
}

// ---------------------------------------------------------------- arbitraries

const unicode = fc.string({ unit: 'binary', maxLength: 40 })
const graphemes = fc.string({ unit: 'grapheme', maxLength: 40 })
const nasty = fc.constantFrom(
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff\ud800', '\u202e\u202dRTL', '🙂👩‍👩‍👧‍👦', 'é', 'ﬁ', '\u200b',
  "' or 1=1 --", '"; drop table contacts; --', '%', '_', '\\', '%00', '../../etc/passwd', '<script>alert(1)</script>',
  '$' + '{7*7}', '{{7*7}}', '0', '-1', '1e309', 'NaN', 'null', 'true', '[]', '{}', 'x'.repeat(300)
)
/** A JSON value nested `depth` levels deep. */
export const deepJson = (depth: number, kind: 'array' | 'object'): string =>
  kind === 'array' ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`

const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.double(), unicode, nasty, fc.constant([]), fc.constant({}),
  fc.array(fc.integer(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 })
)

function stringArb (s: JsonSchema): fc.Arbitrary<string> {
  const maxLength = typeof s.maxLength === 'number' ? s.maxLength : 60
  const minLength = typeof s.minLength === 'number' ? s.minLength : 0
  const format = s.format as string | undefined
  let arb: fc.Arbitrary<string>
  switch (format ?? '') {
    case 'email':
      arb = fc.emailAddress()
      break
    case 'uri':
      arb = fc.webUrl()
      break
    case 'uuid':
      arb = fc.uuid()
      break
    case 'date-time':
      arb = fc
        .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true })
        .map(d => d.toISOString())
      break
    case 'date':
      arb = fc
        .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true })
        .map(d => d.toISOString().slice(0, 10))
      break
    default:
      arb =
        typeof s.pattern === 'string'
          ? fc.stringMatching(new RegExp(s.pattern as string), { maxLength })
          : fc.oneof(
            fc.string({ minLength, maxLength: Math.min(maxLength, 40) }),
            fc.string({ unit: 'grapheme', minLength, maxLength: Math.min(maxLength, 40) })
          )
  }
  if (typeof s.pattern === 'string' && format !== undefined) {
    const re = new RegExp(s.pattern as string)
    arb = arb.filter(v => re.test(v))
  }
  const boundary = minLength <= maxLength && maxLength <= 20_000 ? [fc.constant('x'.repeat(maxLength))] : []
  return fc.oneof(
    { weight: 4, arbitrary: arb.filter(v => v.length >= minLength && v.length <= maxLength) },
    ...boundary
  )
}

/** Values that the schema accepts (plus the bounds themselves). */
export function validArb (s: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (s === undefined) return fc.constant(undefined)
  if ('const' in s) return fc.constant(s.const)
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]))
  const branches = asList(s.anyOf ?? s.oneOf)
  if (branches.length > 0) return fc.oneof(...branches.map(b => validArb(b, depth + 1)))
  const all = asList(s.allOf)
  if (all.length > 0) {
    return fc.tuple(...all.map(b => validArb(b, depth + 1))).map(parts => Object.assign({}, ...(parts as object[])))
  }
  switch (typeOf(s) ?? 'object') {
    case 'string':
      return stringArb(s)
    case 'integer': {
      const min = typeof s.minimum === 'number' ? s.minimum : -1_000_000
      const max = typeof s.maximum === 'number' ? Math.min(s.maximum, Number.MAX_SAFE_INTEGER) : 1_000_000
      return fc.oneof(
        fc.integer({ min: Math.max(min, -2_147_483_648), max: Math.min(max, 2_147_483_647) }),
        fc.constantFrom(min, max)
      )
    }
    case 'number':
      return fc.double({
        noNaN: true,
        noDefaultInfinity: true,
        min: typeof s.minimum === 'number' ? s.minimum : -1e9,
        max: typeof s.maximum === 'number' ? s.maximum : 1e9
      })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const maxItems = typeof s.maxItems === 'number' ? s.maxItems : 5
      const minItems = typeof s.minItems === 'number' ? s.minItems : 0
      if (depth > 4) return fc.constant([])
      const item = validArb((s.items as JsonSchema | undefined) ?? {}, depth + 1)
      return fc.array(item, { minLength: minItems, maxLength: Math.min(Math.max(minItems, 3), maxItems) })
    }
    case 'object':
    default: {
      const props = (s.properties ?? {}) as Record<string, JsonSchema>
      if (Object.keys(props).length === 0) {
        return depth > 3 ? fc.constant({}) : fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 })
      }
      const required = new Set(asList(s.required) as unknown as string[])
      const model: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, v] of Object.entries(props)) if (k !== '$schema' && depth < 6) model[k] = validArb(v, depth + 1)
      return fc.record(model, { requiredKeys: [...required].filter(k => k in model) })
    }
  }
}

/** One wrong value for a schema: another type, out of bounds, too long, huge, deep, odd unicode. */
export function invalidArb (s: JsonSchema | undefined): fc.Arbitrary<unknown> {
  const options: Array<fc.Arbitrary<unknown>> = [anyJson, nasty, graphemes]
  if (s !== undefined) {
    if (typeof s.maxLength === 'number') options.push(fc.constant('y'.repeat(s.maxLength + 1)))
    if (typeof s.minLength === 'number' && s.minLength > 0) options.push(fc.constant('y'.repeat(s.minLength - 1)))
    if (typeof s.maximum === 'number') options.push(fc.constant(s.maximum + 1))
    if (typeof s.minimum === 'number') options.push(fc.constant(s.minimum - 1))
    if (typeof s.maxItems === 'number') {
      options.push(fc.constant(Array.from({ length: s.maxItems + 1 }, () => sampleValid(s.items as JsonSchema))))
    }
  }
  options.push(
    fc.constant('z'.repeat(100_000)),
    fc.constant(JSON.parse(deepJson(2_000, 'array')) as unknown),
    fc.constant(JSON.parse(deepJson(2_000, 'object')) as unknown),
    fc.constantFrom(Number.MAX_SAFE_INTEGER + 2, -0, 1e308, 2 ** 31, -(2 ** 31) - 1, 0.5)
  )
  return fc.oneof(...options)
}

/** An object body: valid, valid with one property wrong, with an unknown property, or not an object at all. */
export function bodyArb (s: JsonSchema | undefined): fc.Arbitrary<unknown> {
  if (s === undefined) return fc.constant(undefined)
  const valid = validArb(s)
  const props = Object.keys((s.properties ?? {}) as object).filter(k => k !== '$schema')
  const oneWrong = props.length === 0
    ? invalidArb(undefined)
    : fc.tuple(valid, fc.constantFrom(...props)).chain(([v, k]) =>
      invalidArb(((s.properties ?? {}) as Record<string, JsonSchema>)[k]).map(bad => ({ ...(v as object), [k]: bad })))
  const extra = fc.tuple(valid, fc.string({ minLength: 1, maxLength: 10 }), anyJson).map(([v, k, x]) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...(v as object), [`x_${k}`]: x } : v)
  const missing = valid.map((v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v
    const keys = Object.keys(v)
    if (keys.length === 0) return v
    const copy: Record<string, unknown> = { ...(v as Record<string, unknown>) }
    delete copy[keys[0] ?? '']
    return copy
  })
  return fc.oneof(
    { weight: 3, arbitrary: valid },
    { weight: 3, arbitrary: oneWrong },
    extra,
    missing,
    invalidArb(undefined)
  )
}

/**
 * Response serialization through fast-json-stringify, as Fastify does by default, but compiled on
 * demand and shared between routes with equal schemas: every API route declares the ErrorModel for
 * a dozen error statuses, which would otherwise be compiled some 1 500 times (compile-on-demand.ts).
 *
 * Nullable fields are declared `anyOf: [T, null]` (TypeBox unions). fast-json-stringify serializes
 * an `anyOf` by running a validator on the value to pick the branch, for every field of every row;
 * for a simple T the serializer gets the equivalent `type: [T, 'null']`, a null check
 * (docs/performance.md). Validation and the OpenAPI document keep the declared schemas.
 */
import fastJsonStringify from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify'
import { onDemand, structuralCache } from './compile-on-demand.ts'

type Schema = Record<string, unknown>

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)
const isNullSchema = (s: unknown): boolean => isObject(s) && s.type === 'null'

/** `anyOf: [T, {type: 'null'}]` with T of one plain type → T with `type: [T.type, 'null']`; else undefined. */
function nullableAsTypeList (schema: Schema): Schema | undefined {
  const branches = schema.anyOf
  if (!Array.isArray(branches) || branches.length !== 2 || schema.oneOf !== undefined || schema.allOf !== undefined) {
    return undefined
  }
  const value = branches.find(b => !isNullSchema(b)) as unknown
  if (!branches.some(isNullSchema) || !isObject(value) || typeof value.type !== 'string' || value.type === 'null') {
    return undefined
  }
  if (['anyOf', 'oneOf', 'allOf', '$ref', 'const', 'not', 'if'].some(k => value[k] !== undefined)) return undefined
  const { anyOf: _anyOf, ...outer } = schema
  return {
    ...value,
    ...outer,
    type: [value.type, 'null'],
    ...(Array.isArray(value.enum) ? { enum: [...value.enum as unknown[], null] } : {})
  }
}

/** A copy of `schema` with every simple nullable rewritten as a type list. */
export function forSerialization (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forSerialization)
  if (!isObject(schema)) return schema
  const rewritten = nullableAsTypeList(schema) ?? schema
  const out: Schema = {}
  for (const [k, v] of Object.entries(rewritten)) {
    // `enum`, `const`, `default`, `examples` hold values, not schemas
    out[k] = ['enum', 'const', 'default', 'examples', 'required'].includes(k) ? v : forSerialization(v)
  }
  return out
}

const serializers = structuralCache<(data: unknown) => string>()

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => serializers(schema, () => {
  const compiled = onDemand(() =>
    fastJsonStringify(forSerialization(schema) as Parameters<typeof fastJsonStringify>[0])
  )
  return (data: unknown) => compiled()(data)
})

/**
 * Response serialization through fast-json-stringify, as Fastify does by default, but compiled on
 * demand and shared between routes with equal schemas: every API route declares the ErrorModel for
 * a dozen error statuses, which would otherwise be compiled some 1 500 times (compile-on-demand.ts).
 */
import fastJsonStringify from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify'
import { onDemand, structuralCache } from './compile-on-demand.ts'

const serializers = structuralCache<(data: unknown) => string>()

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => serializers(schema, () => {
  const compiled = onDemand(() => fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]))
  return (data: unknown) => compiled()(data)
})

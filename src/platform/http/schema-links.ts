/**
 * `$schema` and `Link: <…>; rel="describedBy"` on every JSON object response (Huma's
 * SchemaLinkTransformer), and `GET /schemas/<Name>.json` serving the schemas the routes declare.
 * The names are the `$id`s of the TypeBox schemas, which are the spec's schema names.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { error404NotFound } from './errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** status code → response schema name, filled from the route's response schemas */
    responseNames?: Record<string, string>
  }
}

type Json = Record<string, unknown>

function collect (schema: unknown, into: Map<string, Json>): void {
  if (schema === null || typeof schema !== 'object') return
  if (Array.isArray(schema)) {
    for (const s of schema) collect(s, into)
    return
  }
  const s = schema as Json
  if (typeof s.$id === 'string' && !s.$id.startsWith('#') && !into.has(s.$id)) into.set(s.$id, s)
  for (const key of ['properties', 'patternProperties', '$defs']) {
    const v = s[key]
    if (v !== null && typeof v === 'object') for (const sub of Object.values(v as Json)) collect(sub, into)
  }
  for (const key of ['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not']) collect(s[key], into)
}

export function registerSchemaLinks (app: FastifyInstance, baseUrl: string): Map<string, Json> {
  const registry = new Map<string, Json>()

  app.addHook('onRoute', (route) => {
    const schema = route.schema as { body?: unknown, response?: Record<string, unknown> } | undefined
    if (schema === undefined) return
    collect(schema.body, registry)
    const names: Record<string, string> = {}
    for (const [code, res] of Object.entries(schema.response ?? {})) {
      collect(res, registry)
      const id = (res as Json | undefined)?.$id
      if (typeof id === 'string') names[code] = id
    }
    route.config = { ...(route.config ?? {}), responseNames: names }
  })

  app.addHook('preSerialization', async (request, reply, payload) => {
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || Buffer.isBuffer(payload)) return payload
    const names = request.routeOptions.config.responseNames
    const name = names?.[String(reply.statusCode)] ?? names?.[`${String(reply.statusCode)[0] ?? ''}xx`]
    if (name === undefined) return payload
    const url = `${baseUrl}/schemas/${name}.json`
    void reply.header('link', `<${url}>; rel="describedBy"`)
    return { $schema: url, ...(payload as Json) }
  })

  app.get('/schemas/:name', {
    schema: {
      operationId: 'get-schema',
      summary: 'JSON Schema of a named object',
      tags: ['Meta'],
      params: Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9_]+\\.json$', maxLength: 200 }) })
    },
    config: { public: true }
  }, async (request, reply) => {
    const name = (request.params as { name: string }).name.replace(/\.json$/, '')
    const schema = registry.get(name)
    if (schema === undefined) throw error404NotFound(`schema ${name} not found`)
    return reply.type('application/schema+json').send(JSON.stringify({
      ...schema,
      $id: `${baseUrl}/schemas/${name}.json`,
      $schema: 'https://json-schema.org/draft/2020-12/schema'
    }))
  })

  return registry
}

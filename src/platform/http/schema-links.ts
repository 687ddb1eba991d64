/**
 * `$schema` and `Link: <…>; rel="describedBy"` on every JSON object response (Huma's
 * SchemaLinkTransformer), and `GET /schemas/<Name>.json` serving the schemas the routes declare.
 * The names are the `$id`s of the TypeBox schemas, which are the spec's schema names.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { error404NotFound } from './errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** status code → URL of the response schema, filled from the route's response schemas */
    responseSchemaUrls?: Record<string, string>
  }
}

type Json = Record<string, unknown>

/** The URL of the response's schema, also sent as the Link header; undefined for unnamed responses. */
function linkSchema (request: FastifyRequest, reply: FastifyReply): string | undefined {
  const urls = request.routeOptions.config.responseSchemaUrls
  const url = urls?.[String(reply.statusCode)] ?? urls?.[`${String(reply.statusCode)[0] ?? ''}xx`]
  if (url === undefined) return undefined
  void reply.header('link', `<${url}>; rel="describedBy"`)
  return url
}

/** A JSON text in pieces, to be written one after the other (strings as UTF-8). */
export type JsonChunks = Array<string | Buffer>

/**
 * Sends an object whose fields are JSON texts rendered elsewhere (row-json-cache.ts), as the
 * serializer would have sent it: `$schema` first, the Link header, the JSON content type. The
 * texts must match the route's response schema; nothing checks them on the way out. The body is
 * written into one buffer: a calendar month is some 360 KB, and a string body would be encoded
 * to UTF-8 once more on its way to the socket.
 */
export async function sendJsonFields (
  request: FastifyRequest,
  reply: FastifyReply,
  fields: Record<string, string | JsonChunks>
): Promise<FastifyReply> {
  const url = linkSchema(request, reply)
  const chunks: JsonChunks = []
  for (const [key, json] of Object.entries(url === undefined ? fields : { $schema: JSON.stringify(url), ...fields })) {
    chunks.push(`${chunks.length === 0 ? '{' : ','}${JSON.stringify(key)}:`)
    chunks.push(...(typeof json === 'string' ? [json] : json))
  }
  chunks.push(chunks.length === 0 ? '{}' : '}')
  const body = Buffer.allocUnsafe(
    chunks.reduce((n, c) => n + (typeof c === 'string' ? Buffer.byteLength(c) : c.length), 0)
  )
  let at = 0
  for (const c of chunks) at += typeof c === 'string' ? body.write(c, at) : c.copy(body, at)
  return await reply.type('application/json; charset=utf-8').send(body)
}

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
    const urls: Record<string, string> = {}
    for (const [code, res] of Object.entries(schema.response ?? {})) {
      collect(res, registry)
      const id = (res as Json | undefined)?.$id
      if (typeof id === 'string') urls[code] = `${baseUrl}/schemas/${id}.json`
    }
    route.config = { ...(route.config ?? {}), responseSchemaUrls: urls }
  })

  app.addHook('preSerialization', async (request, reply, payload) => {
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || Buffer.isBuffer(payload)) {
      return payload
    }
    const url = linkSchema(request, reply)
    return url === undefined ? payload : { $schema: url, ...(payload as Json) }
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

/**
 * The route table, read from the running app, so that the cross-cutting suites (route matrix,
 * fuzzing, limits) cover every route without a list to keep up to date.
 *
 * The OpenAPI document gives each operation's method, path, parameters, schemas, auth mode
 * (`security`) and permission (`x-permission`, from `declaredPermission`). The router
 * (`printRoutes`) is the cross-check: an `/api/v1` route missing from the document (hidden, or
 * registered without a schema) fails `apiRoutes` with its name instead of being skipped silently.
 */
import type { FastifyInstance } from 'fastify'

export type AuthMode = 'required' | 'optional' | 'none'
export type JsonSchema = Record<string, unknown>

export interface OpenApiParameter {
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  required?: boolean
  schema?: JsonSchema
}

export interface OpenApiOperation {
  operationId?: string
  parameters?: OpenApiParameter[]
  requestBody?: { required?: boolean, content?: Record<string, { schema?: JsonSchema }> }
  responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>
  security?: Array<Record<string, unknown>>
  'x-permission'?: string
  'x-policy'?: string
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>
  /** schemas, and the shared responses, parameters and headers that operations reference */
  components?: Record<string, Record<string, JsonSchema> | undefined>
}

export interface ApiRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Fastify form: `/api/v1/contacts/:id` */
  url: string
  /** `GET /api/v1/contacts/:id` */
  name: string
  operationId: string
  auth: AuthMode
  permission: string | undefined
  /** path parameter names in path order */
  params: string[]
  operation: OpenApiOperation
  /** the JSON body schema (dereferenced), when the route takes one */
  bodySchema: JsonSchema | undefined
  /** the content type the body is sent as */
  bodyType: string | undefined
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
export const isWrite = (r: Pick<ApiRoute, 'method'>): boolean => r.method !== 'GET'

export async function openApiDocument (app: FastifyInstance): Promise<OpenApiDocument> {
  const res = await app.inject({ method: 'GET', url: '/openapi.json' })
  if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`)
  return res.json<OpenApiDocument>()
}

/**
 * Inlines `#/components/<kind>/<name>` references (schemas, responses, parameters, headers; recursive schemas stop at
 * depth 12).
 */
export function deref (doc: OpenApiDocument, schema: unknown, depth = 0): unknown {
  if (schema === null || typeof schema !== 'object') return schema
  if (Array.isArray(schema)) return schema.map(s => deref(doc, s, depth))
  const s = schema as JsonSchema
  if (typeof s.$ref === 'string') {
    const m = /^#\/components\/([^/]+)\/(.+)$/.exec(s.$ref)
    const target =
      m?.[1] !== undefined && m[2] !== undefined ? doc.components?.[m[1]]?.[decodeURIComponent(m[2])] : undefined
    if (target === undefined) throw new Error(`unresolvable $ref ${s.$ref}`)
    if (depth > 12) return {}
    const { $ref: _ref, ...rest } = s
    return deref(doc, { ...target, ...rest }, depth + 1)
  }
  const out: JsonSchema = {}
  for (const [k, v] of Object.entries(s)) out[k] = deref(doc, v, depth)
  return out
}

/** `METHOD /path` of every route the router knows (HEAD excluded), from `printRoutes`. */
export function routerRoutes (app: FastifyInstance): Set<string> {
  const out = new Set<string>()
  const stack: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line)
    if (m === null) continue
    const depth = (m[1] ?? '').length / 4
    stack.length = depth
    stack.push(m[2] ?? '')
    const full = stack.join('')
    for (const method of (m[3] ?? '').split(',').map(x => x.trim()).filter(Boolean)) {
      if (method !== 'HEAD') out.add(`${method} ${full}`)
    }
  }
  return out
}

/** Every `/api/v1` operation of the app, with what the matrix and the fuzzer need to call it. */
export async function apiRoutes (app: FastifyInstance): Promise<{ doc: OpenApiDocument, routes: ApiRoute[] }> {
  const doc = await openApiDocument(app)
  const routes: ApiRoute[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith('/api/v1/')) continue
    for (const method of METHODS) {
      const operation = item[method.toLowerCase()]
      if (operation === undefined) continue
      const url = path.replace(/\{([^}]+)\}/g, ':$1')
      const security = operation.security
      const auth: AuthMode = security === undefined || security.length === 0
        ? 'none'
        : security.some(s => Object.keys(s).length === 0) ? 'optional' : 'required'
      const content = operation.requestBody?.content ?? {}
      const bodyType = Object.keys(content)[0]
      const rawBody = bodyType !== undefined ? content[bodyType]?.schema : undefined
      routes.push({
        method,
        url,
        name: `${method} ${url}`,
        operationId: operation.operationId ?? `${method} ${url}`,
        auth,
        permission: operation['x-permission'],
        params: [...path.matchAll(/\{([^}]+)\}/g)].map(m => m[1] ?? ''),
        operation: deref(doc, operation) as OpenApiOperation,
        bodySchema: rawBody === undefined ? undefined : deref(doc, rawBody) as JsonSchema,
        bodyType
      })
    }
  }
  // the router prints parameters of one position together (`:id|:event_id`): compare without names
  const shape = (name: string): string => name.replace(/:[^/]+/g, ':')
  const documented = new Set(routes.map(r => shape(r.name)))
  const missing = [...routerRoutes(app)]
    .filter(r => r.split(' ')[1]?.startsWith('/api/v1/') === true && !documented.has(shape(r)))
  if (missing.length > 0) {
    throw new Error(
      `routes missing from the OpenAPI document, so the security suite cannot check them: ${missing.join(', ')}`
    )
  }
  return { doc, routes }
}

/**
 * Fixture keys of a route's path parameters, each as [specific, short]:
 * `/api/v1/events/:id/managers/:user_id` → [`events/:id`, `events/:id`], [`events/:id/managers/:user_id`,
 * `managers/:user_id`].
 * The registry may define either; the specific key wins.
 */
export function paramKeyCandidates (url: string): Array<[string, string]> {
  const segs = url.replace(/^\/api\/v1\//, '').split('/')
  const out: Array<[string, string]> = []
  for (const [i, seg] of segs.entries()) {
    if (seg.startsWith(':')) out.push([segs.slice(0, i + 1).join('/'), `${segs[i - 1] ?? ''}/${seg}`])
  }
  return out
}

/** The short fixture key of every path parameter, in path order. */
export function paramKeys (url: string): string[] {
  return paramKeyCandidates(url).map(c => c[1])
}

/** Fills the path parameters of a route from a key → value map. */
export function fillPath (url: string, values: Record<string, string>): string {
  const segs = url.split('/')
  return segs.map((seg, i) => {
    if (!seg.startsWith(':')) return seg
    const v = values[`${segs[i - 1] ?? ''}/${seg}`]
    if (v === undefined) throw new Error(`no value for ${seg} in ${url}`)
    return encodeURIComponent(v)
  }).join('/')
}

/** The declared success responses of an operation: status → schema (undefined when bodiless). */
export function successSchemas (route: ApiRoute): Map<number, JsonSchema | undefined> {
  const out = new Map<number, JsonSchema | undefined>()
  for (const [code, res] of Object.entries(route.operation.responses ?? {})) {
    const n = Number(code)
    if (!(n >= 200 && n < 300)) continue
    const content = res.content ?? {}
    const first = Object.values(content)[0]
    out.set(n, first?.schema)
  }
  return out
}

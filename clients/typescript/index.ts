/**
 * Typed client of the Collaboration Service API: openapi-fetch over the types that
 * `npm run client:generate` writes to schema.d.ts from the served OpenAPI document. Paths,
 * parameters, bodies and answers are checked by TypeScript; an error answer is the ErrorModel.
 *
 * @example
 *   const api = createCollabClient({ baseUrl: 'http://127.0.0.1:8080', token: process.env.TOKEN })
 *   const { data, error } = await api.GET('/api/v1/contacts/{id}', { params: { path: { id } } })
 */
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch'
import type { components, paths } from './schema.d.ts'

export type { components, operations, paths } from './schema.d.ts'
/** The named objects of the API (`Schemas['Contact']`, `Schemas['Event']`…). */
export type Schemas = components['schemas']
/** Every error answer (application/problem+json, RFC 9457). */
export type ErrorModel = components['schemas']['ErrorModel']
export type CollabClient = Client<paths>

export interface CollabClientOptions extends ClientOptions {
  /** the service's address, e.g. `http://127.0.0.1:8080` (paths in calls start with `/api/v1`) */
  baseUrl: string
  /** a bearer token, or a function giving the current one (called for every request) */
  token?: string | (() => string | Promise<string>)
}

/** A client of the API at `baseUrl`, sending `Authorization: Bearer <token>` when a token is given. */
export function createCollabClient ({ token, ...options }: CollabClientOptions): CollabClient {
  const client = createClient<paths>(options)
  if (token !== undefined) {
    const bearer: Middleware = {
      async onRequest ({ request }) {
        request.headers.set('authorization', `Bearer ${typeof token === 'function' ? await token() : token}`)
        return request
      }
    }
    client.use(bearer)
  }
  return client
}

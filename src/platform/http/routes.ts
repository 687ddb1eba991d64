/**
 * Route-definition helpers of the modules' routes files: the shapes many routes share, each
 * written once. A route still spells out its operation (operationId, summary, params, body,
 * response) and its policy where it is registered, through `operation()`; what these helpers add is
 * the plumbing around it.
 */
import type {
  FastifyReply, FastifyRequest, FastifySchema, onRequestAsyncHookHandler, preParsingAsyncHookHandler,
  preValidationAsyncHookHandler, RawServerDefault, RouteGenericInterface
} from 'fastify'
import type { FastifyContextConfig } from 'fastify/types/context.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { IncomingMessage } from 'node:http'
import type { Kysely } from 'kysely'
import type { App } from '../app-context.ts'
import type { AuthContext } from '../auth/verify.ts'
import type { Database } from '../db/database.ts'
import { withTenant, type Tx } from '../db/tenant.ts'
import { setEtag } from './conditional.ts'
import { idempotentWrite } from './idempotency.ts'
import { OPTIONAL_BODY } from './openapi.ts'
import { NoContent } from './schema.ts'

/** The request of a route declared with `schema`, typed by its TypeBox schemas. */
export type RequestOf<S extends FastifySchema> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  IncomingMessage,
  S,
  TypeBoxTypeProvider
>

/**
 * Answers a page of a list: `list` runs in one transaction of the caller's tenant with the request's
 * query, and the answer echoes the page size asked for (`size`).
 *
 * @example
 *   async request => await answerPage(db, request, (trx, q, auth) => repo.listVisible(trx, auth, q))
 */
export async function answerPage<P extends object, Q extends { size: number }> (
  db: Kysely<Database>,
  request: { auth: AuthContext, query: Q },
  list: (trx: Tx, query: Q, auth: AuthContext) => Promise<P>
): Promise<P & { size: number }> {
  const found = await withTenant(db, request.auth, trx => list(trx, request.query, request.auth))
  return { ...found, size: request.query.size }
}

/**
 * Answers the resource `write` returns (run in one transaction of the caller's tenant) with its
 * ETag, the `"<revision>"` that If-Match names.
 *
 * @example
 *   async (request, reply) => await answerWithEtag(db, request, reply, (trx, auth) => repo.lockVisible(trx, auth, id))
 */
export async function answerWithEtag<T extends { revision: number }> (
  db: Kysely<Database>,
  request: { auth: AuthContext },
  reply: FastifyReply,
  write: (trx: Tx, auth: AuthContext) => Promise<T>
): Promise<T> {
  const row = await withTenant(db, request.auth, trx => write(trx, request.auth))
  setEtag(reply, row.revision)
  return row
}

/** What a route may declare besides its operation and its policy. */
export interface RouteOptions {
  /** `{ idempotency: 'transaction' }`: the Idempotency-Key is claimed in the write's own transaction; `cost` */
  config?: FastifyContextConfig
  /**
   * The body's fields are all options of an action (publish, check-in): no body at all means `{}`, with or without
   * a Content-Type, and the document says `requestBody.required: false` (docs/api-conventions.md, "Bodies")
   */
  optionalBody?: true
}

/**
 * An empty body sent with a Content-Type (`application/json` and no bytes) as if it were sent without one: Fastify's
 * JSON parser refuses an empty body, and the route takes none.
 */
const emptyBodyUntyped: preParsingAsyncHookHandler = async request => {
  const length = request.headers['content-length']
  const empty = length === '0' || (length === undefined && request.headers['transfer-encoding'] === undefined)
  if (empty) delete request.headers['content-type']
}

/**
 * A `preValidation` hook for a body of optional fields only (notification options, a check-in
 * note): no body at all means `{}`.
 */
const emptyBodyAsObject: preValidationAsyncHookHandler = async request => {
  request.body ??= {}
}

/** The hooks of a route whose body is optional (`optionalBody`). */
const OPTIONAL_BODY_HOOKS = { preParsing: emptyBodyUntyped, preValidation: emptyBodyAsObject }

/**
 * A route's options from its OpenAPI operation and its policy: the id, the summary, the description, the tag of the
 * routes file, the request's and answer's schemas, and the authorization policy's hook
 * (`requirePolicy(resource, action)`), which no operation goes without. A routes file makes one
 * `operation` for its tag.
 *
 * The description says in a sentence or three what the operation does and when to use it; the document adds what
 * the route declares (permission, policy, If-Match, Idempotency-Key, an optional body: `describeOperation`,
 * openapi.ts), so the description need not repeat it.
 *
 * @example
 *   const operation = operationsTagged('Event milestones')
 *   app.get('/api/v1/events/:id/milestones', operation('list-event-milestones', 'List the milestones by sequence', {
 *     description: 'The events that are milestones of this one, in their sequence.',
 *     params: EventParams, querystring: KeysetPageQuery, response: { 200: PagedBodyMilestone }
 *   }, requirePolicy('link', 'read')), async request => …)
 */
export function operationsTagged (...tags: string[]) {
  return <S extends Omit<FastifySchema, 'tags' | 'summary' | 'operationId'> & { description: string }>(
    operationId: string,
    summary: string,
    schema: S,
    policy: onRequestAsyncHookHandler,
    { optionalBody, ...options }: RouteOptions = {}
  ) => ({
    schema: { operationId, summary, tags, ...schema, ...(optionalBody === true ? { [OPTIONAL_BODY]: true } : {}) },
    onRequest: policy,
    ...options,
    ...(optionalBody === true ? OPTIONAL_BODY_HOOKS : {})
  })
}

/** An OpenAPI operation without its responses: the route declares no other. */
export type Operation = Omit<FastifySchema, 'response'> & { operationId: string, summary: string, tags: string[] }

/** A write route's options: those `operation()` returns. */
export interface WriteRoute<S extends FastifySchema> extends RouteOptions {
  schema: S
  onRequest: onRequestAsyncHookHandler
  preParsing?: preParsingAsyncHookHandler
  preValidation?: preValidationAsyncHookHandler
}

/**
 * Registers a write whose work runs in one transaction of the caller's tenant (through `idempotent()` when the route
 * claims its Idempotency-Key there), answered with `status` and what the work returns (no body for 204).
 */
function writeRoute<S extends FastifySchema> (
  app: App,
  db: Kysely<Database>,
  method: 'delete' | 'patch' | 'post' | 'put',
  url: string,
  route: WriteRoute<S>,
  status: 201 | 204,
  work: (trx: Tx, request: RequestOf<S>) => Promise<unknown>
): void {
  app.route({
    method,
    url,
    ...route,
    // registered untyped (the schema is generic here); `work` gets the request typed by it
    schema: route.schema as FastifySchema,
    handler: async (request, reply) => {
      const write = async (trx: Tx) => await work(trx, request as unknown as RequestOf<S>)
      const result = route.config?.idempotency === 'transaction'
        ? await idempotentWrite(db, request, write)
        : await withTenant(db, request.auth, write)
      return await reply.code(status).send(status === 204 ? null : result)
    }
  })
}

/**
 * Registers a write that answers 204 No Content: `change` runs in one transaction of the caller's
 * tenant (through `idempotent()` when the route claims its Idempotency-Key there), then the reply
 * is sent with no body.
 *
 * @example
 *   noContentRoute(app, db, 'delete', '/api/v1/spaces/:id', operation('delete-space', 'Delete a space', {
 *     params: SpaceParams
 *   }, requirePolicy('space', 'edit')), (trx, request) => service.deleteSpace(trx, request.auth, request.params.id))
 */
export function noContentRoute<S extends Operation> (
  app: App,
  db: Kysely<Database>,
  method: 'delete' | 'patch' | 'post',
  url: string,
  route: WriteRoute<S>,
  change: (trx: Tx, request: RequestOf<S>) => Promise<unknown>
): void {
  writeRoute(app, db, method, url, { ...route, schema: { ...route.schema, response: { 204: NoContent } } }, 204, change)
}

/**
 * Registers a write that answers 201 Created with what `create` returns, run in one transaction of the caller's
 * tenant (through `idempotent()` when the route claims its Idempotency-Key there).
 *
 * @example
 *   createdRoute(app, db, 'post', '/api/v1/spaces/:id/contacts', operation('add-space-contact', 'Link a contact', {
 *     params: SpaceParams, body: AddContactBody, response: { 201: SpaceContact }
 *   }, requirePolicy('space', 'contacts')), async (trx, { auth, params, body }) => …)
 */
export function createdRoute<S extends FastifySchema> (
  app: App,
  db: Kysely<Database>,
  method: 'post' | 'put',
  url: string,
  route: WriteRoute<S>,
  create: (trx: Tx, request: RequestOf<S>) => Promise<unknown>
): void {
  writeRoute(app, db, method, url, route, 201, create)
}

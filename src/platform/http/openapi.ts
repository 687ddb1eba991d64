/**
 * OpenAPI 3.1 at `/openapi.json` and interactive docs at `/docs`, generated from the route
 * schemas, then completed so that generated clients can rely on it (docs/api-conventions.md,
 * "OpenAPI document"):
 *
 * - every error status of an operation is a `$ref` to one of the shared `components.responses`
 *   (`Error`, and `Unauthorized`, `TooManyRequests`, `ServiceUnavailable`, which add their headers),
 *   each `application/problem+json` with `components.schemas.ErrorModel`;
 * - a query parameter with a default is optional;
 * - the request headers a route honours (`If-Match`, `If-None-Match`, `Idempotency-Key`) and the
 *   response headers it sends (`ETag`, `Location`, `RateLimit-*`, `Retry-After`) are declared, from
 *   `components.parameters` and `components.headers`;
 * - unauthenticated operations carry `security: []`, the others the bearer requirement;
 * - `servers` is relative (`/`), so "Try it out" at `/docs` calls the address the page came from.
 *
 * The permission a route declares appears as `x-permission` on its operation, the policy row it
 * enforces as `x-policy`. A multipart body, which @fastify/multipart streams to the handler and no
 * schema validates, is described by `multipartBody()` in the route schema.
 */
import { STATUS_CODES } from 'node:http'
import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { ErrorDetail, ErrorModel } from './errors.ts'
import { methodWideCodes, specificCodesOf } from './problem-types.ts'
import { declaredPermission, declaredPolicy } from '../auth/permissions.ts'

// one object for all: serializers are shared by schema object (compile-on-demand.ts); the
// document replaces each of these by a reference to a shared response
const ERROR_RESPONSE = { ...ErrorModel, description: 'Error' }
const ERROR_STATUSES = ['400', '401', '403', '404', '409', '412', '413', '415', '422', '429', '500', '503']

/**
 * Request and response headers of operations, by operationId. The code that honours them is in
 * the handlers (`ifMatchOf`, `setEtag`, `reply.header('location', …)`), which a route schema does
 * not show; test/openapi.test.ts calls every write with a stale `If-Match` and checks that exactly
 * these answer 412, and the client journey checks every `ETag` and `Location` it receives.
 */
export const IF_MATCH_OPERATIONS: ReadonlySet<string> = new Set([
  'merge-contacts',
  'replace-contact',
  'patch-contact',
  'set-contact-favorite',
  'delete-contact',
  'erase-contact',
  'replace-space',
  'patch-space',
  'delete-space',
  'replace-event',
  'patch-event',
  'delete-event',
  'archive-event',
  'publish-event',
  'unpublish-event',
  'edit-event',
  'discard-event-draft',
  'transition-event',
  'add-event-space',
  'remove-event-space',
  'upload-event-cover',
  'patch-event-series',
  'delete-event-series',
  'publish-event-series',
  'update-event-attendee',
  'remove-event-attendee',
  'check-in-event-attendee',
  'update-event-manager',
  'remove-event-manager',
  'replace-automation-rule',
  'patch-automation-rule',
  'delete-automation-rule',
  'replace-scim-user', 'patch-scim-user', 'delete-scim-user',
  'replace-scim-group', 'patch-scim-group', 'delete-scim-group'
])
export const ETAG_OPERATIONS: ReadonlySet<string> = new Set([
  'merge-contacts',
  'create-contact',
  'get-contact',
  'replace-contact',
  'patch-contact',
  'set-contact-favorite',
  'create-space',
  'get-space',
  'replace-space',
  'patch-space',
  'create-event',
  'clone-event',
  'get-event',
  'replace-event',
  'patch-event',
  'edit-event',
  'get-event-draft',
  'transition-event',
  'upload-event-cover',
  'get-event-series',
  'patch-event-series',
  'add-event-attendee',
  'update-event-attendee',
  'get-event-manager',
  'add-event-manager',
  'update-event-manager',
  'get-public-space',
  'get-space-calendar-feed',
  'get-personal-calendar-feed',
  'create-automation-rule',
  'get-automation-rule',
  'replace-automation-rule',
  'patch-automation-rule',
  'get-scim-user', 'create-scim-user', 'replace-scim-user', 'patch-scim-user',
  'get-scim-group', 'create-scim-group', 'replace-scim-group', 'patch-scim-group'
])
export const LOCATION_OPERATIONS: ReadonlySet<string> = new Set([
  'create-contact',
  'create-space',
  'create-event',
  'clone-event',
  'create-event-with-series',
  'create-automation-rule',
  'create-event-automation',
  'create-scim-user',
  'create-scim-group'
])
export const IF_NONE_MATCH_OPERATIONS: ReadonlySet<string> = new Set([
  'get-public-space', 'get-space-calendar-feed', 'get-personal-calendar-feed'
])

/** The 304 of a read that sent an ETag: no body, the headers of the 200 it stands for (RFC 9110, 15.4.5). */
const NOT_MODIFIED = { description: 'Not Modified: the ETag named in If-None-Match is current; no body' }

/** The tags of the document, in the order Swagger UI shows them; every operation's tag is one of these. */
export const TAGS = [
  { name: 'Health', description: 'Liveness and readiness probes. No token.' },
  {
    name: 'Identity',
    description: 'The caller as the token describes it, and the identity-provider webhook (HMAC-signed, no token).'
  },
  {
    name: 'Contacts',
    description: 'Personal and organization contacts: search, merge-patch edits, favorites, bulk upsert.'
  },
  {
    name: 'Spaces',
    description:
      'Spaces: a hierarchy with drafts, members, managers, contacts, linked events, activity and a public page.'
  },
  { name: 'Event templates', description: 'The registry of event templates and their versions.' },
  {
    name: 'Events',
    description: 'Events with drafts, publishing, state transitions, the calendar, activity and spaces.'
  },
  { name: 'Series', description: 'Recurring series of events: the rule, its occurrences, edits by scope, publishing.' },
  {
    name: 'Event attendees',
    description: 'Contacts attending an event: add (one or in bulk), status, check-in and check-out, check-in tokens.'
  },
  {
    name: 'Event registration',
    description:
      'Capacity, waitlist and approval of an event or a series; approving registrations, no-shows, cancellation.'
  },
  {
    name: 'Guests',
    description: 'The people events are for, without an account: invitations they answer from a mailed link, public ' +
      'registration with double opt-in, their own link to manage their place, mails in their language with calendar ' +
      'entries (docs/guests.md).'
  },
  { name: 'Event managers', description: 'Who manages an event, with which permissions; invitations by e-mail.' },
  { name: 'Event milestones', description: 'Events that are milestones of another event, in sequence.' },
  { name: 'Event references', description: 'Documents, attachments and links between events and series.' },
  { name: 'Event cover', description: 'The cover image of an event: upload (multipart) and download (image bytes).' },
  {
    name: 'Automation',
    description:
      'Automation rules (tenant, space and event scope): triggers, actions, manual runs and their executions.'
  },
  {
    name: 'Notifications',
    description: "The tenant's notification outbox as administrators see it: what was sent, what waits, what failed."
  },
  {
    name: 'Webhooks',
    description:
      'Outbound webhooks (Standard Webhooks): subscriptions to domain events, signing secrets, deliveries and retries.'
  },
  {
    name: 'Calendar feeds',
    description: 'iCalendar (RFC 5545) feeds of a space and of a user, and the secret feed tokens that open them.'
  },
  {
    name: 'Calendar import',
    description: 'iCalendar (RFC 5545) files imported into a space as events and series; a later import of the same ' +
      'UIDs updates them.'
  },
  {
    name: 'Service accounts',
    description: 'Machines\' callers of a tenant with a role and scopes, and their API keys (`Bearer cbk_…`): ' +
      'shown once, rotated with an overlap, revoked at once (docs/api-keys.md).'
  },
  {
    name: 'SCIM',
    description: 'SCIM 2.0 provisioning (RFC 7643/7644) of the tenant\'s users and groups, for an API key with the ' +
      '`scim` scope; `application/scim+json`, errors in SCIM\'s own format (docs/scim.md).'
  },
  {
    name: 'Audit',
    description: 'The tenant audit log: who changed what, when and from where, in a hash chain that verifies; read, ' +
      'exported and verified by tenant admins (docs/audit.md).'
  }
]

/** "every POST may answer `idempotency_key_reused` …": the codes no operation lists for itself. */
function everyWriteCodes (): string {
  const byMethods = new Map<string, string[]>()
  for (const { code, methods } of methodWideCodes()) {
    const key = methods.length === 1 ? `every ${methods[0]?.toUpperCase() ?? ''}` : 'every write'
    byMethods.set(key, [...(byMethods.get(key) ?? []), `\`${code}\``])
  }
  return [...byMethods].map(([who, codes]) => `${who} ${codes.join(', ')}`).join('; ')
}

const DESCRIPTION = [
  'Multi-tenant collaboration API: contacts, spaces, events with drafts and recurring series, ' +
  'attendees and check-in, event managers and invitations, automation rules.',
  '',
  '**Authentication.** Every `/api/v1` operation needs `Authorization: Bearer <JWT>` unless it declares `security: ' +
  '[]` (health, the identity-provider webhook) or makes the token optional (the public space page). The tenant is ' +
  "the token's tenant claim. In dev mode `npm run token` mints one.",
  '',
  '**Errors** are `application/problem+json` (`ErrorModel`, RFC 9457): a 400 lists every problem in `errors[]` with ' +
  'its `location` (`body.first_name`, `query.size`, `path.id`, `header.if-match`). Every problem names its kind ' +
  'in `code` and `type` (`/problems/{code}`, docs/errors.md): an operation may answer the generic code of each ' +
  `status it documents, ${everyWriteCodes()}, and the codes its \`x-problem-codes\` lists.`,
  '',
  '**Conventions.** Lists are paged with `page` (from 1) and `size` (1 to 100). PATCH is a JSON merge-patch. ' +
  'Resources with a revision send `ETag`; a write with a stale `If-Match` answers 412. Any POST may carry ' +
  '`Idempotency-Key`; a repeat replays the first answer. Every answer carries `RateLimit-Limit`, ' +
  '`RateLimit-Remaining` and `RateLimit-Reset`; 429 and 503 carry `Retry-After`.'
].join('\n')

const PROBLEM = { 'application/problem+json': { schema: { $ref: '#/components/schemas/ErrorModel' } } }
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' }
}

const COMPONENTS = {
  responses: {
    Error: { description: 'Error (RFC 9457 problem details)', headers: RATE_LIMIT_HEADERS, content: PROBLEM },
    Unauthorized: {
      description: 'No bearer token, or one that is malformed, expired or not trusted',
      headers: { 'WWW-Authenticate': { description: '`Bearer`', schema: { type: 'string' } }, ...RATE_LIMIT_HEADERS },
      content: PROBLEM
    },
    TooManyRequests: {
      description: "Rate limit exceeded: the caller's bucket is empty",
      headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' }, ...RATE_LIMIT_HEADERS },
      content: PROBLEM
    },
    ServiceUnavailable: {
      description:
        'A dependency (the database, the object storage) is unavailable or the request took too long; retry later',
      headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' }, ...RATE_LIMIT_HEADERS },
      content: PROBLEM
    }
  },
  parameters: {
    'If-Match': {
      name: 'If-Match',
      in: 'header',
      required: false,
      description:
        'The `ETag` the change is based on (`"<revision>"`, or `*`); another revision answers 412 and changes nothing.',
      schema: { type: 'string', examples: ['"3"'] }
    },
    'If-None-Match': {
      name: 'If-None-Match',
      in: 'header',
      required: false,
      description: 'The `ETag` the client holds; the same one answers 304 without a body.',
      schema: { type: 'string' }
    },
    'Idempotency-Key': {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'A client-chosen key (1 to 255 visible ASCII characters); a repeat with the same body within 24 hours ' +
        'replays the first answer (`Idempotent-Replayed: true`), another body answers 409.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' }
    }
  },
  headers: {
    ETag: {
      description: 'The resource\'s revision, `"<revision>"`: send it back in `If-Match`.',
      schema: { type: 'string' }
    },
    Location: { description: 'Path of the created resource.', schema: { type: 'string' } },
    'RateLimit-Limit': { description: "Tokens in the caller's bucket when full.", schema: { type: 'integer' } },
    'RateLimit-Remaining': { description: 'Tokens left now.', schema: { type: 'integer' } },
    'RateLimit-Reset': { description: 'Seconds until tokens come back.', schema: { type: 'integer' } },
    'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } }
  }
}

/** The shared response for an error status. */
const errorResponseRef = (status: string): string =>
  '#/components/responses/' +
  `${status === '401'
    ? 'Unauthorized'
    : status === '429' ? 'TooManyRequests' : status === '503' ? 'ServiceUnavailable' : 'Error'}`

/**
 * The error statuses an operation documents, each a reference to a shared response: those a client
 * would act on, where the operation can answer them, then `4XX` and `5XX` for the rest (405, 414,
 * 422, 500…). Every one of them is an ErrorModel (docs/api-conventions.md, "Errors").
 */
function errorStatuses (op: Operation, method: string, path: string, authenticated: boolean): string[] {
  const statuses = ['400']
  if (authenticated) statuses.push('401')
  if (op['x-permission'] !== undefined || op['x-policy'] !== undefined) statuses.push('403')
  if (path.includes('{')) statuses.push('404')
  // conflicts, wrong states, and an Idempotency-Key reused with another body
  if (method !== 'get') statuses.push('409')
  if (IF_MATCH_OPERATIONS.has(op.operationId ?? '')) statuses.push('412')
  if (op.requestBody !== undefined) statuses.push('413', '415')
  statuses.push('429', '503', '4XX', '5XX')
  return statuses
}

/**
 * Key in a route schema under which `multipartBody` describes its parts (copied to the operation by @fastify/swagger,
 * then replaced).
 */
const MULTIPART = 'x-multipart-body'

/**
 * Key in a route schema that marks its body optional (`optionalBody` of routes.ts), copied to the operation by
 * @fastify/swagger, then replaced by `requestBody.required: false`.
 */
export const OPTIONAL_BODY = 'x-optional-body'

/** Key under which the `onRoute` hook marks a route that claims its Idempotency-Key in the write's transaction. */
const IDEMPOTENT_WRITE = 'x-idempotent-write'

/**
 * What a route declares, said in its operation's description after the route's own words, so that the text cannot
 * drift from the code: who may call it (no token, the permission, the policy row), `If-Match`, an Idempotency-Key
 * claimed with the write, an optional body.
 */
function declaredFacts (op: Operation, method: string, authenticated: boolean): string[] {
  const facts: string[] = []
  const permission = op['x-permission']
  const policy = op['x-policy']
  const tokenOptional = Array.isArray(op.security) && op.security.some(s => Object.keys(s as Json).length === 0)
  if (!authenticated) facts.push('Needs no token.')
  else if (tokenOptional) facts.push('A token is optional: with one, the answer shows what its caller may see.')
  if (typeof permission === 'string') {
    facts.push(`Needs the \`${permission}\` permission` +
      `${typeof policy === 'string' ? ` and passes the authorization policy \`${policy}\`` : ''}.`)
  } else if (typeof policy === 'string') facts.push(`Passes the authorization policy \`${policy}\`.`)
  if (IF_MATCH_OPERATIONS.has(op.operationId ?? '')) {
    facts.push('With `If-Match`, a revision other than the one named answers 412 and changes nothing.')
  }
  if (op[IDEMPOTENT_WRITE] === true && method === 'post') {
    facts.push('An `Idempotency-Key` is claimed in the write\'s own transaction: the change and the answer a repeat ' +
      'replays are kept together or not at all.')
  }
  if (op[OPTIONAL_BODY] === true) facts.push('The body may be left out: all its fields are optional.')
  return facts
}

/**
 * The operation's description: the route's own (`operation()`'s `description`), then what the route declares
 * (`declaredFacts`) as a paragraph of its own.
 */
function describeOperation (op: Operation, method: string, authenticated: boolean): void {
  const own = typeof op.description === 'string' ? op.description : ''
  const facts = declaredFacts(op, method, authenticated).join(' ')
  op.description = [own, facts].filter(text => text !== '').join('\n\n')
}

const LITERAL_KEYS = new Set(['type', 'enum', 'const'])

/** The value of a branch that is one literal (`{type, const}` or `{type, enum: [v]}`), with its type. */
function literalOf (branch: unknown): { type: unknown, value: unknown } | undefined {
  if (branch === null || typeof branch !== 'object') return undefined
  const b = branch as Json
  if (!Object.keys(b).every(k => LITERAL_KEYS.has(k)) || typeof b.type !== 'string') return undefined
  if ('const' in b) return { type: b.type, value: b.const }
  return Array.isArray(b.enum) && b.enum.length === 1 ? { type: b.type, value: b.enum[0] } : undefined
}

/**
 * A copy of a part of the document with every union of literals of one type (TypeBox's
 * `Union([Literal(0), Literal(10)])`) as one `enum`: Swagger UI shows `anyOf` of literals as
 * `string | (string | string)`, generators make a type per branch, and the values are what a reader wants to see.
 * A copy, since the document shares schema objects with the routes, which validate with them.
 */
export function collapseLiteralUnions (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(collapseLiteralUnions)
  if (node === null || typeof node !== 'object') return node
  const schema = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, collapseLiteralUnions(v)]))
  for (const key of ['anyOf', 'oneOf']) {
    const branches = schema[key]
    if (!Array.isArray(branches) || branches.length === 0) continue
    const literals = branches.map(literalOf)
    const type = literals[0]?.type
    if (literals.some(l => l === undefined || l.type !== type)) continue
    delete schema[key]
    schema.type = type
    schema.enum = literals.map(l => l?.value)
  }
  return schema
}

/**
 * Documents a `multipart/form-data` request body in a route schema: the parts (a JSON Schema
 * object's properties) and the content types allowed for each file part. Fastify does not validate
 * it (the handler reads the parts); the document shows it as the operation's `requestBody`.
 *
 * @example
 *   schema: { ...multipartBody({ file: { type: 'string', format: 'binary' } }, { file: 'image/png' }), … }
 */
export function multipartBody (
  parts: Record<string, Record<string, unknown>>,
  contentTypes: Record<string, string> = {}
): { [MULTIPART]: unknown } {
  return {
    [MULTIPART]: {
      schema: { type: 'object', required: Object.keys(parts), properties: parts },
      encoding: Object.fromEntries(Object.entries(contentTypes).map(([part, type]) => [part, { contentType: type }]))
    }
  }
}

type Json = Record<string, unknown>
interface Operation extends Json {
  operationId?: string
  parameters?: Json[]
  responses?: Record<string, Json>
  requestBody?: Json
}

const isErrorModelContent = (response: Json): boolean => {
  const content = response.content as Record<string, { schema?: Json }> | undefined
  const schema = content === undefined ? undefined : Object.values(content)[0]?.schema
  const props = schema?.properties as Json | undefined
  return props !== undefined && 'status' in props && 'title' in props && 'instance' in props
}

/**
 * The specific problem codes an operation may answer (problem-types.ts, docs/errors.md) as `x-problem-codes`, in
 * catalogue order; the generic code of each status it documents goes without saying. ErrorModel's `code` enumerates
 * every code, so a generated client's `error.code` is a union it can switch on. SCIM answers SCIM's own errors.
 */
function declareProblemCodes (op: Operation, method: string): void {
  const tags = op.tags as string[] | undefined
  if (tags?.includes('SCIM') === true) return
  const codes = specificCodesOf({ method, tags, operationId: op.operationId })
  if (codes.length > 0) op['x-problem-codes'] = codes
}

/** Named (`$id`) schemas a route uses at the top of its body or of a response, by operationId. */
export interface NamedSchemas { body?: string, responses: Record<string, string> }

const idOf = (schema: unknown): string | undefined => {
  const id = (schema as { $id?: unknown } | null | undefined)?.$id
  return typeof id === 'string' ? id : undefined
}

/**
 * Replaces `content[*].schema` by a reference to `components.schemas[name]`, adding the component
 * when it is missing. @fastify/swagger inlines a route's top-level schema even when it is named;
 * a nested one it already references.
 */
function hoist (content: Record<string, { schema?: Json }> | undefined, name: string, schemas: Json): void {
  for (const media of Object.values(content ?? {})) {
    if (media.schema === undefined || '$ref' in media.schema) continue
    schemas[name] ??= media.schema
    media.schema = { $ref: `#/components/schemas/${encodeURIComponent(name)}` }
  }
}

/** The document as generated from the route schemas → the document as served (see the header comment). */
export function completeDocument (doc: Json, named: ReadonlyMap<string, NamedSchemas> = new Map()): Json {
  const paths = doc.paths as Record<string, Record<string, Operation>>
  const components = (doc.components ?? {}) as Json
  const schemas = { ...(components.schemas as Json | undefined) }
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      declareProblemCodes(op, method)
      // query parameters with a default are filled in by the validator: a client may leave them out
      for (const p of op.parameters ?? []) {
        if (p.in === 'query' && (p.schema as Json | undefined)?.default !== undefined) p.required = false
      }
      const headers: Json[] = []
      const id = op.operationId ?? ''
      if (IF_MATCH_OPERATIONS.has(id)) headers.push({ $ref: '#/components/parameters/If-Match' })
      // every read that sends an ETag answers 304 to it (not-modified.ts): the header and the 304 are declared
      const conditionalRead = IF_NONE_MATCH_OPERATIONS.has(id) || (method === 'get' && ETAG_OPERATIONS.has(id))
      if (conditionalRead) {
        headers.push({ $ref: '#/components/parameters/If-None-Match' })
        op.responses = { ...op.responses, 304: op.responses?.['304'] ?? NOT_MODIFIED }
      }
      // the idempotency hook keys a POST on its caller: every POST that takes a token
      const authenticated = Array.isArray(op.security) && op.security.length > 0
      if (method === 'post' && authenticated) {
        headers.push({ $ref: '#/components/parameters/Idempotency-Key' })
      }
      if (headers.length > 0) op.parameters = [...(op.parameters ?? []), ...headers]

      const multipart = op[MULTIPART] as Json | undefined
      if (multipart !== undefined) {
        op.requestBody = { required: true, content: { 'multipart/form-data': multipart } }
        delete op[MULTIPART]
      }
      describeOperation(op, method, authenticated)
      // a client may call it with no body at all (optionalBody, routes.ts)
      if (op[OPTIONAL_BODY] === true && op.requestBody !== undefined) op.requestBody.required = false
      delete op[OPTIONAL_BODY]
      delete op[IDEMPOTENT_WRITE]

      const names = named.get(id)
      if (names?.body !== undefined) {
        hoist(
          (op.requestBody as { content?: Record<string, { schema?: Json }> } | undefined)?.content,
          names.body,
          schemas
        )
      }
      const responses: Record<string, Json> = {}
      // a route's own wording of an error status is kept (3.1 lets a reference override its description)
      const worded = new Map<string, string>()
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (Number(status) < 400 || !isErrorModelContent(response)) responses[status] = response
        else if (typeof response.description === 'string' && response.description !== 'Error') {
          worded.set(status, response.description)
        }
      }
      for (const status of new Set([...errorStatuses(op, method, path, authenticated), ...worded.keys()])) {
        const description = worded.get(status)
        responses[status] =
          description === undefined
            ? { $ref: errorResponseRef(status) }
            : { $ref: '#/components/responses/Error', description }
      }
      op.responses = responses
      for (const [status, response] of Object.entries(responses)) {
        const code = Number(status)
        if (!(code < 400)) continue
        const responseName = names?.responses[status]
        if (responseName !== undefined) {
          hoist(response.content as Record<string, { schema?: Json }> | undefined, responseName, schemas)
        }
        if (response.description === 'Default Response') response.description = STATUS_CODES[code] ?? status
        const sent: Json = { ...RATE_LIMIT_HEADERS }
        if (ETAG_OPERATIONS.has(id) && (code < 300 || code === 304)) sent.ETag = { $ref: '#/components/headers/ETag' }
        if (LOCATION_OPERATIONS.has(id) && code === 201) sent.Location = { $ref: '#/components/headers/Location' }
        response.headers = { ...(response.headers as Json | undefined), ...sent }
      }
    }
  }

  const { $id: _id, ...errorModel } = structuredClone(ErrorModel) as Json
  const errorProps = errorModel.properties as Json
  errorProps.errors = { ...(errorProps.errors as Json), items: { $ref: '#/components/schemas/ErrorDetail' } }
  const { $id: _detailId, ...errorDetail } = structuredClone(ErrorDetail) as Json
  doc.components = {
    ...components,
    schemas: { ...schemas, ErrorModel: errorModel, ErrorDetail: schemas.ErrorDetail ?? errorDetail },
    ...COMPONENTS
  }
  doc.paths = collapseLiteralUnions(doc.paths)
  const completed = doc.components as Json
  completed.schemas = collapseLiteralUnions(completed.schemas)
  return doc
}

export async function registerOpenApi (app: FastifyInstance): Promise<void> {
  const named = new Map<string, NamedSchemas>()
  app.addHook('onRoute', (route) => {
    if (route.schema === undefined || route.url.startsWith('/docs')) return
    const operationId = (route.schema as { operationId?: unknown }).operationId
    if (typeof operationId === 'string') {
      const responses: Record<string, string> = {}
      for (const [code, schema] of Object.entries(route.schema.response as Record<string, unknown> | undefined ?? {})) {
        const id = idOf(schema)
        if (id !== undefined) responses[code] = id
      }
      const body = idOf(route.schema.body)
      named.set(operationId, { ...(body !== undefined ? { body } : {}), responses })
    }
    const isApi = route.url.startsWith('/api/v1/')
    const mode = route.config?.auth ?? (isApi ? 'required' : 'none')
    const response = { ...(route.schema.response as Record<string, unknown> | undefined ?? {}) }
    for (const code of ERROR_STATUSES) {
      if (!isApi && !['400', '404', '500', '503'].includes(code)) continue
      if (mode === 'none' && ['401', '403'].includes(code)) continue
      response[code] ??= ERROR_RESPONSE
    }
    const permission = declaredPermission(route.onRequest)
    const policy = declaredPolicy(route.onRequest)
    route.schema = {
      ...route.schema,
      response,
      // the permission the route requires (route matrix, clients): `x-permission: contacts:write`
      ...(permission !== undefined ? { 'x-permission': permission } : {}),
      // the row of the authorization policy it enforces (docs/authorization.md): `x-policy: event:edit`
      ...(policy !== undefined ? { 'x-policy': policy } : {}),
      // said in the description, then dropped (`declaredFacts`)
      ...(route.config?.idempotency === 'transaction' ? { [IDEMPOTENT_WRITE]: true } : {}),
      // `[]`: no token (health, the IdP webhook); `{}` among the options: a token is optional
      security: mode === 'none' ? [] : mode === 'optional' ? [{ bearerAuth: [] }, {}] : [{ bearerAuth: [] }]
    }
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Collaboration Service API',
        version: '1.0.0',
        description: DESCRIPTION,
        contact: { name: 'Collaboration service maintainers' },
        // an SPDX expression: `LicenseRef-` names a license that is not on the SPDX list (OpenAPI 3.1, `identifier`)
        license: {
          name: 'Proprietary (UNLICENSED): not licensed for use outside its owners',
          identifier: 'LicenseRef-Proprietary'
        }
      },
      // relative: Swagger UI's "Try it out" calls the address it was loaded from, whatever HOST,
      // PORT or proxy in front; a client generated from the file sets its own base URL
      servers: [{ url: '/', description: 'This service (the address the document was fetched from)' }],
      tags: TAGS,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'A JWT of the identity provider (`OIDC_ISSUER`); in dev mode, `npm run token`.'
          }
        }
      }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`)
    },
    transformObject: documentObject =>
      'openapiObject' in documentObject
        ? completeDocument(documentObject.openapiObject as Json, named)
        : documentObject.swaggerObject
  })
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } })

  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'none' } }, async () => app.swagger())
}

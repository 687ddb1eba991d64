/**
 * The catalogue of problem types (docs/errors.md): every problem body names one by a stable snake_case `code` and
 * the absolute URI `type` = `<BASE_URL>/problems/<code>`, a page that says when it happens and what a client should
 * do. A client branches on `code` (two 409s: `already_attending`, `event_full`), never on `detail`'s English.
 *
 * - Each status has a **generic** code (`DEFAULT_CODES`), answered by a throw site that names none; an operation may
 *   answer a generic code whenever it may answer the status, so the document does not repeat them per operation.
 * - Every other code is **specific**: its `on` names the operations that may answer it (by tag, method or
 *   operationId). The OpenAPI document lists them per operation (`x-problem-codes`, openapi.ts) and the error
 *   handler records an answer whose code its operation does not list (`undeclaredProblemCodes`), which
 *   test/problem-types.test.ts asserts never happens.
 * - A code is never renamed or reused for another meaning; a new kind of problem gets a new code (additive).
 */
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyInstance } from 'fastify'

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete'

/** Where a specific code may be answered: every field given must match (tags: any of them). */
interface Scope {
  tags?: readonly string[]
  methods?: readonly Method[]
  operations?: readonly string[]
}

export interface ProblemType {
  /** the status it is answered with (a code keeps its status; two only where an older route answered another) */
  statuses: readonly number[]
  title: string
  /** when it happens, and what the client should do */
  description: string
  /** specific codes: the operations that may answer it (any scope); generic codes have none */
  on?: readonly Scope[]
}

const WRITES: readonly Method[] = ['post', 'put', 'patch', 'delete']
const writesOf = (...tags: string[]): Scope => ({ tags, methods: WRITES })
const ops = (...operations: string[]): Scope => ({ operations })
/** The tags whose writes lock an event (`lockEventForWrite`) or its series. */
const EVENT_TAGS = [
  'Events', 'Series', 'Event attendees', 'Event registration', 'Guests', 'Event managers', 'Event milestones',
  'Event references', 'Event cover', 'Automation', 'Spaces', 'Calendar import'
]
const ATTENDEE_TAGS = ['Event attendees', 'Event registration', 'Guests']
const SYNC_LISTS = ops('list-events', 'list-contacts', 'list-event-attendees')

export const PROBLEM_TYPES = {
  // generic: one per status
  validation_failed: {
    statuses: [400],
    title: 'Validation failed',
    description: 'The request is malformed or a value breaks a rule: `errors[]` names each field (`location`) ' +
      'and what is expected. Correct the request; sending it again unchanged fails again.'
  },
  unauthenticated: {
    statuses: [401],
    title: 'Unauthenticated',
    description: 'No bearer token, or one that is malformed, expired, revoked or not trusted. Get a new token ' +
      '(or API key) and send it in `Authorization: Bearer …`.'
  },
  forbidden: {
    statuses: [403],
    title: 'Forbidden',
    description: 'The caller sees the resource but lacks the permission or grant the operation needs ' +
      '(`detail` names it). Ask someone who holds it; retrying does not help.'
  },
  not_found: {
    statuses: [404],
    title: 'Not found',
    description: 'No such route, or the resource does not exist or is not visible to the caller (another ' +
      "tenant's, or hidden): the API does not tell these apart."
  },
  method_not_allowed: {
    statuses: [405],
    title: 'Method not allowed',
    description: 'The path exists but not with this method; `Allow` lists the methods it serves.'
  },
  conflict: {
    statuses: [409],
    title: 'Conflict',
    description: 'The request conflicts with the current state of the resource and no more specific code ' +
      'applies. Read the resource again and decide.'
  },
  gone: {
    statuses: [410],
    title: 'Gone',
    description: 'What the request names existed but cannot be used any more, and no more specific code applies.'
  },
  precondition_failed: {
    statuses: [412],
    title: 'Precondition failed',
    description: '`If-Match` names a revision other than the current one: the resource changed since it was read. ' +
      'Nothing was changed. Read it again (a new `ETag`), merge, and send the write with that tag.'
  },
  payload_too_large: {
    statuses: [413],
    title: 'Payload too large',
    description: 'The body is over the limit of the route (`BODY_LIMIT_BYTES`, or the stated limit of an import). ' +
      'Nothing was written; send less, or split it.'
  },
  uri_too_long: {
    statuses: [414],
    title: 'URI too long',
    description: 'A path parameter is longer than any identifier of the API.'
  },
  unsupported_media_type: {
    statuses: [415],
    title: 'Unsupported media type',
    description: 'The `Content-Type` (or the encoding of an uploaded file) is not one the operation reads.'
  },
  unprocessable: {
    statuses: [422],
    title: 'Unprocessable',
    description: 'The request is well-formed but cannot be carried out as it stands, and no more specific code ' +
      'applies: `detail` says why.'
  },
  rate_limited: {
    statuses: [429],
    title: 'Rate limited',
    description: "The caller's bucket (or the client address's, for anonymous pages) is empty. Wait `Retry-After` " +
      'seconds and send the request again.'
  },
  client_error: {
    statuses: [],
    title: 'Client error',
    description: 'Another 4xx status the framework answers (for example 406): see the status.'
  },
  internal_error: {
    statuses: [500],
    title: 'Internal error',
    description: 'A fault of the service; the details are in its log under the id in `instance`. A retry may ' +
      'succeed; report it with the `instance` if it persists.'
  },
  upstream_failed: {
    statuses: [502],
    title: 'Upstream failed',
    description: 'A resource the service fetched for the request (a calendar URL) did not answer usably. ' +
      'Nothing was changed; check the address, or retry later.',
    on: [ops('import-space-calendar')]
  },
  unavailable: {
    statuses: [503],
    title: 'Unavailable',
    description: 'The database or another dependency is unreachable, or the request took too long. Retry after ' +
      '`Retry-After` seconds.'
  },

  // 409: states and duplicates a client acts on
  already_attending: {
    statuses: [409],
    title: 'Already attending',
    description: 'The contact already attends the event (any status): nothing was added. Read the attendee ' +
      '(`GET /events/{id}/attendees/{contact_id}`) or change its status with `PATCH` instead.',
    on: [writesOf(...ATTENDEE_TAGS)]
  },
  event_full: {
    statuses: [409],
    title: 'Event full',
    description: 'The event is at its capacity and has no waitlist: nobody else can be confirmed. Raise the ' +
      'capacity or enable the waitlist (`PATCH /events/{id}/registration`), or free a seat first.',
    on: [writesOf(...ATTENDEE_TAGS)]
  },
  event_cancelled: {
    statuses: [409],
    title: 'Event cancelled',
    description: 'The event is cancelled: it takes no new attendee, confirmation or check-in.',
    on: [writesOf(...ATTENDEE_TAGS)]
  },
  already_cancelled: {
    statuses: [409],
    title: 'Already cancelled',
    description: 'The event was cancelled already: the cancellation took effect earlier; nothing to do.',
    on: [ops('cancel-event')]
  },
  attendee_state_conflict: {
    statuses: [409],
    title: 'Attendee state conflict',
    description: "The attendee's status does not allow the move (waitlisted or pending attendees do not check " +
      'in; only a confirmed attendee is a no-show; a check-in that did not happen cannot be undone; an approval ' +
      'of someone not pending). `errors[]` names the attendee; read it and pick a move its status allows.',
    on: [writesOf(...ATTENDEE_TAGS)]
  },
  event_not_ended: {
    statuses: [409],
    title: 'Event not ended',
    description: 'No-shows are marked once the event has ended. Send the request after its end.',
    on: [writesOf('Event registration', 'Event attendees')]
  },
  not_attending: {
    statuses: [409],
    title: 'Not attending',
    description: 'The contact does not attend the event: add it first.',
    on: [writesOf('Event registration', 'Event attendees')]
  },
  event_archived: {
    statuses: [409],
    title: 'Event archived',
    description: 'The event (or its series) is archived and read-only: nothing of it changes any more. Clone it to ' +
      'work on a copy.',
    on: [writesOf(...EVENT_TAGS)]
  },
  space_archived: {
    statuses: [409],
    title: 'Space archived',
    description: 'The space is archived and read-only: it takes no events, edits or publishing.',
    on: [writesOf('Spaces', 'Events', 'Calendar import')]
  },
  event_state_conflict: {
    statuses: [409],
    title: 'Event state conflict',
    description: 'The event is not in a state that allows the operation (a draft archived or unpublished, an ' +
      'unpublished event cancelled or invited to, a published event edited directly where a draft is needed). ' +
      '`detail` names the state it needs; read the event and do that first.',
    on: [writesOf(...EVENT_TAGS)]
  },
  space_state_conflict: {
    statuses: [409],
    title: 'Space state conflict',
    description: 'The space is not in a state that allows the operation (a draft discarded that was never ' +
      'published, an unpublished space unpublished).',
    on: [writesOf('Spaces')]
  },
  transition_not_allowed: {
    statuses: [409],
    title: 'Transition not allowed',
    description: "The event's template has no state machine, or it does not allow the move from the current state; " +
      '`errors[]` lists the states it allows.',
    on: [ops('transition-event')]
  },
  transition_refused: {
    statuses: [422],
    title: 'Transition refused',
    description: "A guard of the template's state machine refused the move: `errors[]` names the payload fields it " +
      'needs. Send them.',
    on: [ops('transition-event')]
  },
  template_immutable: {
    statuses: [409],
    title: 'Template immutable',
    description: 'The template of an event or series is set when it is created and never changes.',
    on: [writesOf('Events', 'Series')]
  },
  already_in_series: {
    statuses: [409],
    title: 'Already in a series',
    description: 'The event already belongs to a series: edit that series instead of making another.',
    on: [writesOf('Series')]
  },
  occurrence_not_in_rule: {
    statuses: [409],
    title: 'Occurrence not in the rule',
    description: "The occurrence is no longer part of the series' rule (the rule changed): read the occurrences again.",
    on: [writesOf('Series', 'Events')]
  },
  series_archived: {
    statuses: [409],
    title: 'Series archived',
    description: 'The series is archived and read-only: its rule, occurrences and settings no longer change.',
    on: [writesOf('Series', 'Events')]
  },
  already_linked: {
    statuses: [409],
    title: 'Already linked',
    description: 'The link exists already (a document, an event, a milestone, a contact or an event in a space): ' +
      'nothing was added.',
    on: [writesOf('Event references', 'Event milestones', 'Events', 'Spaces')]
  },
  milestone_cycle: {
    statuses: [409],
    title: 'Milestone cycle',
    description: 'The milestone would make the events milestones of each other (a cycle): choose another event.',
    on: [writesOf('Event milestones')]
  },
  already_manager: {
    statuses: [409],
    title: 'Already a manager',
    description: 'The user (or the address invited) already manages the event, series or space: change their ' +
      'permissions with `PUT` instead.',
    on: [writesOf('Event managers', 'Series', 'Spaces')]
  },
  creator_grant_fixed: {
    statuses: [409],
    title: "Creator's grant fixed",
    description: 'The creator of an event holds every permission on it; their grant cannot be added or changed.',
    on: [writesOf('Event managers')]
  },
  last_manager: {
    statuses: [409],
    title: 'Last manager',
    description: 'The last manager of a space cannot be removed: add another one first.',
    on: [writesOf('Spaces')]
  },
  invite_pending: {
    statuses: [409],
    title: 'Invite pending',
    description: 'An invite to this address is already pending: wait for it, or revoke it and invite again.',
    on: [writesOf('Spaces', 'Event managers', 'Series')]
  },
  invite_revoked: {
    statuses: [409],
    title: 'Invite revoked',
    description: 'The invite was revoked by a manager: ask for a new one.',
    on: [writesOf('Event managers', 'Spaces')]
  },
  invite_already_accepted: {
    statuses: [409],
    title: 'Invite already accepted',
    description: 'The invite was accepted already (by the caller or another user): nothing to do.',
    on: [writesOf('Event managers', 'Spaces')]
  },
  invite_expired: {
    statuses: [410, 409],
    title: 'Invite expired',
    description: 'The invite is past its lifetime: ask a manager for a new one. (410 for event and series ' +
      'invites; a space invite answers 409, as it always has.)',
    on: [writesOf('Event managers', 'Spaces')]
  },
  contact_redirect: {
    statuses: [308],
    title: 'Contact moved',
    description: 'The contact was merged into another one, which the caller sees: `Location` (and `errors[].value`) ' +
      'names it. Follow it, and use that id from now on.',
    on: [{ tags: ['Contacts'] }]
  },
  contact_merged: {
    statuses: [409],
    title: 'Contact merged',
    description: 'A contact named was merged into another already: `detail` names it; send the request with that ' +
      'contact.',
    on: [writesOf('Contacts')]
  },
  merge_limit: {
    statuses: [409],
    title: 'Merge over a limit',
    description: 'The merged contact would break a limit (its tags): remove some first.',
    on: [writesOf('Contacts')]
  },
  import_rows_invalid: {
    statuses: [422],
    title: 'Import rows invalid',
    description: 'Some rows of an import have errors: `errors[]` names them (`line`), and nothing was imported. ' +
      'Correct those rows and import again.',
    on: [writesOf('Contacts')]
  },
  tree_too_large: {
    statuses: [422],
    title: 'Tree too large',
    description: 'The space tree has more nodes than one answer holds: read it level by level.',
    on: [ops('get-space-tree')]
  },
  execution_not_retryable: {
    statuses: [409],
    title: 'Execution not retryable',
    description: 'Only a failed execution whose rule version still exists can be retried: run the rule instead.',
    on: [writesOf('Automation')]
  },
  credential_limit: {
    statuses: [409],
    title: 'Credential limit',
    description: 'The caller (or service account) holds the most live feed tokens or API keys allowed: revoke one ' +
      'first.',
    on: [writesOf('Calendar feeds', 'Service accounts')]
  },
  api_key_not_live: {
    statuses: [409],
    title: 'API key not live',
    description: 'The API key is revoked or expired: make a new key instead.',
    on: [writesOf('Service accounts')]
  },
  audit_chain_broken: {
    statuses: [409],
    title: 'Audit chain broken',
    description: "The tenant audit log's hash chain does not verify at the position named: report it to the " +
      'operators (docs/audit.md).',
    on: [{ tags: ['Audit'] }]
  },
  idempotency_key_reused: {
    statuses: [409],
    title: 'Idempotency-Key reused',
    description: 'The `Idempotency-Key` was used with another method, path or body: choose a new key for a new ' +
      'request. Sending the same request again does not help.',
    on: [{ methods: ['post'] }]
  },
  idempotency_in_progress: {
    statuses: [409],
    title: 'Idempotency-Key in progress',
    description: 'A request with the same `Idempotency-Key` is still running (or was answered meanwhile): send the ' +
      'same request again shortly to get its answer.',
    on: [{ methods: ['post'] }]
  },
  concurrent_update: {
    statuses: [409],
    title: 'Concurrent update',
    description: 'Another request changed the same rows at the same time (a deadlock or serialization failure the ' +
      'service could not retry): nothing was changed. Send the request again.',
    on: [{ methods: WRITES }]
  },
  resource_locked: {
    statuses: [409],
    title: 'Resource locked',
    description: 'Another request holds a lock on the resource: nothing was changed. Send the request again shortly.',
    on: [{ methods: WRITES }]
  },
  unique_violation: {
    statuses: [409],
    title: 'Duplicate',
    description: 'A resource with the same unique value (a name, an address, a key) exists already: nothing was ' +
      'written. Choose another value, or use the existing resource.',
    on: [{ methods: WRITES }]
  },
  reference_conflict: {
    statuses: [409],
    title: 'Reference conflict',
    description: 'A resource the request names does not exist any more, or one it removes is still referenced.',
    on: [{ methods: WRITES }]
  },

  // 410: what cannot be used any more
  checkin_token_revoked: {
    statuses: [410],
    title: 'Check-in token revoked',
    description: 'The check-in token was revoked (or replaced by a new one): ask the organizer for the new one.',
    on: [ops('check-in-event-attendee-by-token')]
  },
  sync_token_invalid: {
    statuses: [410],
    title: 'Sync token invalid',
    description: 'The `sync_token` is not one this service issued (or sealed with a secret since retired). Read the ' +
      'full list again with `sync=true`.',
    on: [SYNC_LISTS]
  },
  sync_token_mismatch: {
    statuses: [410],
    title: 'Sync token of another list',
    description: 'The `sync_token` was issued for another list, other filters or another caller. Send it with the ' +
      'list and filters it came from, or read the full list again with `sync=true`.',
    on: [SYNC_LISTS]
  },
  sync_access_changed: {
    statuses: [410],
    title: 'Access changed since the sync token',
    description: 'What the caller may see of the list changed since the token (their role, organization, space ' +
      'memberships or manager grants): a delta cannot say what left or entered their sight. Read the full list ' +
      'again with `sync=true`.',
    on: [SYNC_LISTS]
  },
  sync_token_expired: {
    statuses: [410],
    title: 'Sync token expired',
    description: 'The `sync_token` is older than the sync window (the log of changes it needs was pruned), or was ' +
      'issued by an earlier version of the service. Read the full list again with `sync=true`.',
    on: [SYNC_LISTS]
  },

  // 403: refusals a client can act on differently from a missing permission
  grant_exceeds_own: {
    statuses: [403],
    title: 'Grant exceeds your own',
    description: 'A manager grants or invites with permissions they do not hold themselves (`errors[]` lists ' +
      'them): grant only those you hold, or ask someone who holds them.',
    on: [writesOf('Event managers', 'Spaces', 'Series')]
  },
  self_grant: {
    statuses: [403],
    title: 'Own grant',
    description: 'Nobody adds or changes their own manager grant: ask another manager.',
    on: [writesOf('Event managers', 'Spaces', 'Series')]
  },
  invite_for_another_address: {
    statuses: [403],
    title: 'Invite for another address',
    description: "The invite was sent to an e-mail address other than the caller's (or names none): accept it as " +
      'the user it was sent to.',
    on: [writesOf('Event managers', 'Spaces')]
  }
} as const satisfies Record<string, ProblemType>

/** Every code of the catalogue: a typo at a throw site fails typechecking. */
export type ProblemCode = keyof typeof PROBLEM_TYPES

export const PROBLEM_CODES = Object.keys(PROBLEM_TYPES) as ProblemCode[]

/** The generic code of each status, answered where a throw site names none. */
export const DEFAULT_CODES: Readonly<Record<number, ProblemCode>> = {
  400: 'validation_failed',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  412: 'precondition_failed',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'upstream_failed',
  503: 'unavailable'
}

/** The codes any operation may answer with their status: those without a scope. */
const GENERIC: ReadonlySet<ProblemCode> = new Set(PROBLEM_CODES.filter(c => !('on' in PROBLEM_TYPES[c])))

export const defaultCode = (status: number): ProblemCode =>
  DEFAULT_CODES[status] ?? (status >= 500 ? 'internal_error' : 'client_error')

export const isProblemCode = (code: string): code is ProblemCode => Object.hasOwn(PROBLEM_TYPES, code)

/** A code's `type` URI. */
export const problemTypeUri = (baseUrl: string, code: ProblemCode): string => `${baseUrl}/problems/${code}`

/** What the codes of an operation depend on: its method, tags and id. */
export interface OperationFacts { method: string, tags?: readonly string[] | undefined, operationId?: string }

const matches = (scope: Scope, op: OperationFacts): boolean =>
  (scope.tags === undefined || scope.tags.some(tag => op.tags?.includes(tag) === true)) &&
  (scope.methods === undefined || scope.methods.includes(op.method.toLowerCase() as Method)) &&
  (scope.operations === undefined || (op.operationId !== undefined && scope.operations.includes(op.operationId)))

/** Whether a specific code is scoped by method alone (every write may answer it): listed once, not per operation. */
const methodWide = (code: ProblemCode): boolean =>
  (PROBLEM_TYPES[code] as ProblemType).on?.every(s => s.tags === undefined && s.operations === undefined) === true

/** The codes scoped by method alone, and the methods: "every POST may answer …" (once in the document). */
export function methodWideCodes (): Array<{ code: ProblemCode, methods: readonly string[] }> {
  return PROBLEM_CODES.filter(methodWide).map(code => ({
    code, methods: ((PROBLEM_TYPES[code] as ProblemType).on ?? []).flatMap(s => s.methods ?? [])
  }))
}

/**
 * The specific codes an operation may answer that depend on what it does, in catalogue order: neither the generic
 * ones nor those every write (or POST) may answer (`methodWideCodes`) go without saying.
 */
export function specificCodesOf (op: OperationFacts): ProblemCode[] {
  return PROBLEM_CODES.filter(code => {
    const on = (PROBLEM_TYPES[code] as ProblemType).on
    return on !== undefined && !methodWide(code) && on.some(scope => matches(scope, op))
  })
}

/** Whether an operation may answer `code`: a generic code always, a specific one when its scope names it. */
export function mayAnswer (op: OperationFacts, code: ProblemCode): boolean {
  const on = (PROBLEM_TYPES[code] as ProblemType).on
  return GENERIC.has(code) || on?.some(scope => matches(scope, op)) === true
}

/** docs/errors.md's catalogue table, generated from PROBLEM_TYPES (test/problem-types.test.ts keeps them equal). */
export function problemTypesMarkdown (): string {
  const lines = ['| code | status | title | when, and what to do |', '|---|---|---|---|']
  for (const code of PROBLEM_CODES) {
    const t: ProblemType = PROBLEM_TYPES[code]
    const statuses = t.statuses.length > 0 ? t.statuses.join(', ') : 'other 4xx'
    lines.push(`| \`${code}\` | ${statuses} | ${t.title} | ${t.description.replaceAll('|', '\\|')} |`)
  }
  return lines.join('\n')
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, c => '&#' + String(c.charCodeAt(0)) + ';')
const inlineCode = (s: string): string => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>')

function problemPage (code: ProblemCode, baseUrl: string): string {
  const t: ProblemType = PROBLEM_TYPES[code]
  return '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    `<title>${escapeHtml(t.title)} (${code})</title></head><body><main>` +
    `<h1>${escapeHtml(t.title)}</h1><p><code>${code}</code>, HTTP ${t.statuses.join(' or ') || '4xx'}</p>` +
    `<p>${inlineCode(t.description)}</p><p><a href="${escapeHtml(baseUrl)}/problems">Every problem type</a></p>` +
    '</main></body></html>'
}

function listPage (baseUrl: string): string {
  const items = PROBLEM_CODES.map(code =>
    `<li><a href="${escapeHtml(problemTypeUri(baseUrl, code))}"><code>${code}</code></a>: ` +
    `${escapeHtml(PROBLEM_TYPES[code].title)}</li>`).join('')
  return '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Problem types</title></head>' +
    `<body><main><h1>Problem types</h1><ul>${items}</ul></main></body></html>`
}

const asJson = (code: ProblemCode, baseUrl: string): Record<string, unknown> => {
  const t: ProblemType = PROBLEM_TYPES[code]
  return { code, type: problemTypeUri(baseUrl, code), statuses: t.statuses, title: t.title, description: t.description }
}

/**
 * `GET /problems` and `GET /problems/{code}`: the catalogue a problem's `type` points at, anonymous like the other
 * public documents. HTML for a person; JSON when `Accept` prefers `application/json`; an unknown code is a 404.
 */
export function registerProblemTypes (app: FastifyInstance, baseUrl: string, notFound: (code: string) => Error): void {
  const wantsJson = (accept: string | undefined): boolean =>
    negotiate(accept ?? 'text/html', ['text/html', 'application/json']) === 'application/json'
  const config = { auth: 'none' as const }
  app.get('/problems', { schema: { hide: true }, config }, async (request, reply) =>
    wantsJson(request.headers.accept)
      ? await reply.type('application/json').send(JSON.stringify(PROBLEM_CODES.map(c => asJson(c, baseUrl))))
      : await reply.type('text/html; charset=utf-8').send(listPage(baseUrl)))
  app.get('/problems/:code', { schema: { hide: true }, config }, async (request, reply) => {
    const { code } = request.params as { code: string }
    if (!isProblemCode(code)) throw notFound(code)
    return wantsJson(request.headers.accept)
      ? await reply.type('application/json').send(JSON.stringify(asJson(code, baseUrl)))
      : await reply.type('text/html; charset=utf-8').send(problemPage(code, baseUrl))
  })
}

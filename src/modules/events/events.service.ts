/**
 * Event use cases that span statements or tables: the lifecycle (create, replace, patch, delete,
 * archive), drafts and publishing, template transitions, activity rows and space membership.
 * Every state change writes an activity row and a domain event in the caller's transaction.
 */

import { tellPublishedChanges, updateEvent } from './events.changes.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Counting } from '../../platform/db/kept-counts.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import {
  ApiError, error404NotFound, error409Conflict, error422UnprocessableEntity, fieldError, invalidField
} from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { checkTimezone } from '../../platform/http/validation.ts'
import { notifyOnPublish } from '../../platform/notifications/notifications.ts'
import { eventPublished } from '../../platform/notifications/templates.ts'
import { decideTransition } from './events.state.ts'
import { findEventForRead, hasEventPermission, lockEventForWrite, rootEventId } from './events.access.repository.ts'
import * as repo from './events.repository.ts'
import { joinedOf } from './events.bodies.repository.ts'
import {
  METADATA_MAX_BYTES, type CloneEventBody, type CreateEventBody, type PatchEventBody, type PublishEventBody,
  type ReplaceEventBody, type UnpublishEventBody
} from './events.schemas.ts'
import type { CloneParts, EventFigures, SpaceForEventLink } from './events.needs.ts'
import type { EventRow } from './events.table.ts'
import {
  DEFAULT_TEMPLATE, findTemplate, latestTemplate, SYSTEM_ACTIVITY_KINDS, templateAllows, TEMPLATE_IDS
} from './events.templates.ts'
import { eventEvent } from './events.events.ts'

/**
 * Who acts on an event: always a subject whose rights are checked (docs/authorization.md). An
 * automation acts as its rule's creator, with the chain `depth` of the domain events it writes.
 */
export type EventActor = AuthContext & { readonly depth?: number }
/** Who a change is recorded as: a caller, or (automation) nobody, with the chain depth. */
interface AutomationRecorder { readonly kind: 'automation', readonly tenantId: string, readonly depth: number }
type Recorder = EventActor | AutomationRecorder
const isAutomation = (a: Recorder): a is AutomationRecorder => 'kind' in a && a.kind === 'automation'
const actorIdOf = (a: Recorder): string | null => isAutomation(a) ? null : a.userId

type Json = Record<string, unknown>

/** The event as the API shows it: its spaces, and the master title of its series (null outside a series). */
/**
 * The row as the API shows it. The row itself is completed (rows are fresh from the driver): copying 400 calendar rows
 * cost more than serializing them.
 */
export function toEvent (
  row: EventRow,
  spaces: repo.SpaceRef[],
  seriesTitle: string | null = null
): EventRow & { series_title: string | null; spaces: repo.SpaceRef[] } {
  // the registration fields are GET /events/{id}'s alone, in force rather than stored (EVENT_DETAIL_FIELDS)
  return Object.assign(row, {
    series_title: row.series_id === null ? null : seriesTitle,
    spaces,
    capacity: undefined,
    waitlist_enabled: undefined,
    requires_approval: undefined,
    registration_inherited: undefined
  }) as EventRow & { series_title: string | null; spaces: repo.SpaceRef[] }
}

/**
 * One event as GET shows it (a draft clone too), with its spaces, series title and registration figures (`figures`,
 * read by the attendees module's column): one statement; 404 when hidden or gone.
 */
export async function getEvent (trx: Tx, auth: AuthContext, id: number, figures: EventFigures, counting: Counting) {
  const found = await repo.findEventJoined(trx, auth, id, root => figures.column(auth.tenantId, root, counting))
  if (found === undefined) throw error404NotFound('event not found')
  const { spaces, series_title: seriesTitle, extra, ...row } = found
  return Object.assign(toEvent(row, spaces, seriesTitle), figures.read(extra))
}

export async function withSpaces (trx: Tx, tenantId: string, row: EventRow) {
  return (await withSpacesAll(trx, tenantId, [row]))[0] ?? toEvent(row, [])
}

/** Events with their spaces and series titles: two queries whatever the number of rows. */
export async function withSpacesAll (trx: Tx, tenantId: string, rows: EventRow[]) {
  const joined = await joinedOf(trx, tenantId, rows)
  return rows.map(r => toEvent(r, joined.spaces(r), joined.seriesTitle(r)))
}

function eventPayload (row: EventRow, extra: Json = {}): Json {
  return {
    event_id: rootEventId(row),
    template: row.template,
    template_version: row.template_version,
    state: row.state,
    title: row.title,
    status: row.status,
    ...extra
  }
}

/** One activity row (on the published row of a draft clone) and one domain event. */
async function record (
  trx: Tx,
  actor: Recorder,
  row: EventRow,
  topic: string,
  kind: string,
  extra: Json = {}
): Promise<void> {
  const actorId = actorIdOf(actor)
  await repo.insertActivity(trx, {
    tenantId: actor.tenantId,
    eventId: rootEventId(row),
    orgId: row.org_id,
    actorId,
    kind,
    payload: extra
  })
  await emit(trx, {
    tenantId: actor.tenantId,
    topic,
    aggregateType: 'event',
    aggregateId: rootEventId(row),
    actorId,
    payload: eventPayload(row, extra),
    ...(isAutomation(actor) ? { depth: actor.depth } : {})
  })
}

// ---- validation of values a schema cannot check

function checkMetadata (m: Json | null | undefined, location: string): void {
  if (m === undefined || m === null) return
  if (Buffer.byteLength(JSON.stringify(m)) > METADATA_MAX_BYTES) {
    throw invalidField(location, `expected at most ${METADATA_MAX_BYTES} bytes of JSON`)
  }
}

const time = (v: Date | string | null | undefined): number | null =>
  v === null || v === undefined ? null : new Date(v).getTime()

function checkRange (
  start: Date | string | null | undefined,
  end: Date | string | null | undefined,
  endInBody: boolean
): void {
  const s = time(start)
  const e = time(end)
  if (s !== null && e !== null && e < s) {
    throw invalidField(
      endInBody ? 'body.end_dt' : 'body.start_dt',
      endInBody ? 'expected end_dt >= start_dt' : 'expected start_dt <= end_dt',
      endInBody ? end : start
    )
  }
}

/** RFC 7396 merge of a patch object into a target. */
export function mergePatch (target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const out: Json =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Json) } : {}
  for (const [k, v] of Object.entries(patch as Json)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

// ---- lifecycle

export async function createEvent (trx: Tx, auth: AuthContext, input: CreateEventBody): Promise<EventRow> {
  const templateId = input.template ?? DEFAULT_TEMPLATE
  if (!TEMPLATE_IDS.includes(templateId)) {
    throw invalidField('body.template', `unknown template; expected one of ${TEMPLATE_IDS.join(', ')}`, input.template)
  }
  const template =
    input.template_version === undefined ? latestTemplate(templateId) : findTemplate(templateId, input.template_version)
  if (template === undefined && input.template_version !== 0) {
    throw invalidField('body.template_version', `unknown version of template ${templateId}`, input.template_version)
  }
  checkTimezone(input.timezone, 'body.timezone')
  checkMetadata(input.metadata, 'body.metadata')
  checkRange(input.start_dt, input.end_dt, true)
  if (
    input.parent_event_id !== undefined &&
    input.parent_event_id !== null &&
    !(await repo.visibleEventExists(trx, auth, input.parent_event_id))
  ) {
    throw invalidField('body.parent_event_id', 'no such event', input.parent_event_id)
  }
  const row = await repo.insertEvent(trx, auth.tenantId, {
    org_id: auth.orgId,
    creator_id: auth.userId,
    title: input.title,
    description: input.description ?? null,
    address: input.address ?? null,
    latitude: input.latitude ?? null,
    longitude: input.longitude ?? null,
    start_dt: input.start_dt ?? null,
    end_dt: input.end_dt ?? null,
    ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
    keywords: input.keywords ?? [],
    metadata: JSON.stringify(input.metadata ?? {}),
    ...(input.visibility !== undefined ? { visibility: input.visibility } : {}),
    ...(input.priority !== undefined ? { priority: input.priority } : {}),
    parent_event_id: input.parent_event_id ?? null,
    template: templateId,
    template_version: template?.version ?? 0,
    state: template?.state_machine?.initial ?? null
  })
  await record(trx, auth, row, 'event.created', 'created')
  return row
}

/**
 * The metadata keys that hold a storage object of one event (its cover, set by `PUT /events/{id}/cover`): a clone or
 * a series never takes them, so no object is shared by two events (docs/series.md, "Storage keys").
 */
export const STORAGE_METADATA_KEYS = ['cover_image'] as const

/** The parts of a source a clone copies besides what it always copies (`CloneEventBody`; each true unless false). */
const CLONE_PARTS = ['description', 'place', 'registration', 'questions', 'managers'] as const

/**
 * `POST /events/{id}/clone` (docs/events.md, "Clone"): a new draft of the caller's, from an event they see (a draft
 * clone's id copies the draft's content), starting at `start_dt` and lasting as long as the source unless `end_dt`
 * says otherwise. Always copied: keywords, metadata (without its storage keys), visibility, priority, time zone and
 * template (its machine at its initial state); as asked: description, place, registration settings (their window
 * moved with the start), questions and managers (which need `managers:manage` on the source: 403 naming
 * `body.managers`). Never: attendees, check-ins, the series, spaces, links, the cover. One `event.created` (with
 * `cloned_from` and `copied`), and one `event.manager_added` per manager copied.
 */
export async function cloneEvent (
  trx: Tx,
  auth: AuthContext,
  id: number,
  input: CloneEventBody,
  parts: CloneParts
): Promise<EventRow> {
  if (input.end_dt !== undefined) checkRange(input.start_dt, input.end_dt, true)
  const source = await findEventForRead(trx, auth, id, { includeDraftClones: true })
  const copy = Object.fromEntries(CLONE_PARTS.map(p => [p, input[p] ?? true])) as Record<typeof CLONE_PARTS[number],
    boolean>
  if (copy.managers && !(await hasEventPermission(trx, auth, source, 'managers:manage'))) {
    throw new ApiError(403, 'copying the managers needs the event permission managers:manage on the source ' +
      '(send managers: false to clone without them)', [
      fieldError('body.managers', 'missing event permission managers:manage on the source', true)
    ])
  }
  const start = new Date(input.start_dt)
  // how far the clone moves from the source: its registration window moves as far (none without a source start)
  const shift = source.start_dt === null ? null : start.getTime() - new Date(source.start_dt).getTime()
  const moved = (d: Date | null): Date | null => d === null || shift === null ? d : new Date(d.getTime() + shift)
  // the source's duration, unless `end_dt` is given (a source with an end but no start has no duration to keep)
  const end = input.end_dt !== undefined
    ? (input.end_dt === null ? null : new Date(input.end_dt))
    : source.end_dt === null || shift === null ? null : new Date(new Date(source.end_dt).getTime() + shift)
  const template = findTemplate(source.template, source.template_version)
  const registration = copy.registration ? await parts.registration(trx, source) : undefined
  const metadata = Object.fromEntries(
    Object.entries(source.metadata).filter(([k]) => !(STORAGE_METADATA_KEYS as readonly string[]).includes(k)))
  const row = await repo.insertEvent(trx, auth.tenantId, {
    org_id: auth.orgId,
    creator_id: auth.userId,
    title: input.title ?? source.title,
    description: copy.description ? source.description : null,
    address: copy.place ? source.address : null,
    latitude: copy.place ? source.latitude : null,
    longitude: copy.place ? source.longitude : null,
    start_dt: start,
    end_dt: end,
    timezone: source.timezone,
    keywords: source.keywords,
    metadata: JSON.stringify(metadata),
    visibility: source.visibility,
    priority: source.priority,
    template: source.template,
    template_version: source.template_version,
    state: template?.state_machine?.initial ?? null,
    ...(registration === undefined
      ? {}
      : {
          ...registration,
          registration_opens_at: moved(registration.registration_opens_at),
          registration_closes_at: moved(registration.registration_closes_at)
        })
  })
  const copied = CLONE_PARTS.filter(p => copy[p])
  await record(trx, auth, row, 'event.created', 'created', { cloned_from: rootEventId(source), copied })
  if (copy.questions) await parts.questions(trx, auth, source, row)
  if (copy.managers) await parts.managers(trx, auth, source, row)
  return row
}

/**
 * The row a content write goes to: the draft clone when the published row has one (readers keep
 * the published version until the draft is published), else the row itself.
 */
async function lockEditTarget (trx: Tx, auth: AuthContext, id: number, ifMatch: string | undefined): Promise<EventRow> {
  const row = await lockEventForWrite(trx, auth, id, 'event:edit')
  const target =
    row.published_id === null && row.status === 'published'
      ? ((await repo.lockDraftClone(trx, auth.tenantId, row.id)) ?? row)
      : row
  checkIfMatch(ifMatch, target.revision)
  return target
}

export async function replaceEvent (
  trx: Tx,
  auth: AuthContext,
  id: number,
  input: ReplaceEventBody,
  ifMatch: string | undefined
): Promise<EventRow> {
  checkTimezone(input.timezone, 'body.timezone')
  checkMetadata(input.metadata, 'body.metadata')
  checkRange(input.start_dt, input.end_dt, true)
  const target = await lockEditTarget(trx, auth, id, ifMatch)
  const values: repo.EventUpdate = {
    title: input.title,
    description: input.description ?? null,
    address: input.address ?? null,
    start_dt: input.start_dt ?? null,
    end_dt: input.end_dt ?? null,
    timezone: input.timezone ?? 'UTC',
    keywords: input.keywords ?? [],
    latitude: input.latitude ?? null,
    longitude: input.longitude ?? null,
    metadata: JSON.stringify(input.metadata ?? {}),
    visibility: input.visibility ?? 20
  }
  const updated = await updateEvent(trx, auth.tenantId, target.id, values)
  await record(trx, auth, updated, 'event.updated', 'edited', {
    fields: Object.keys(values),
    draft: updated.published_id !== null
  })
  return updated
}

const PATCHABLE = [
  'title',
  'description',
  'address',
  'start_dt',
  'end_dt',
  'timezone',
  'keywords',
  'latitude',
  'longitude',
  'visibility',
  'priority'
] as const

export async function patchEvent (
  trx: Tx,
  auth: AuthContext,
  id: number,
  input: PatchEventBody,
  ifMatch: string | undefined
): Promise<EventRow> {
  if ('template' in input) {
    await lockEventForWrite(trx, auth, id, 'event:edit') // 404/403 before revealing the rule
    throw error409Conflict('the template of an event is immutable', [
      fieldError('body.template', 'must be omitted', input.template)
    ], 'template_immutable')
  }
  checkTimezone(input.timezone, 'body.timezone')
  const target = await lockEditTarget(trx, auth, id, ifMatch)
  const values: repo.EventUpdate = {}
  const v = values as Record<string, unknown>
  for (const f of PATCHABLE) {
    if (f in input) v[f] = f === 'keywords' ? (input.keywords ?? []) : input[f]
  }
  if ('metadata' in input) {
    const merged = input.metadata === null ? {} : (mergePatch(target.metadata, input.metadata) as Json)
    checkMetadata(merged, 'body.metadata')
    values.metadata = JSON.stringify(merged)
  }
  checkRange(
    'start_dt' in input ? input.start_dt : target.start_dt,
    'end_dt' in input ? input.end_dt : target.end_dt,
    'end_dt' in input
  )
  if (Object.keys(values).length === 0) return target
  const updated = await updateEvent(trx, auth.tenantId, target.id, values)
  await record(trx, auth, updated, 'event.updated', 'edited', {
    fields: Object.keys(values),
    draft: updated.published_id !== null
  })
  return updated
}

export async function deleteEvent (trx: Tx, auth: AuthContext, id: number, ifMatch: string | undefined): Promise<void> {
  const row = await lockEventForWrite(trx, auth, id, 'event:delete', { ifMatch, allowArchived: true })
  if (row.published_id !== null) {
    await repo.deleteRow(trx, auth.tenantId, row.id)
    await record(trx, auth, row, 'event.draft_discarded', 'draft_discarded', { draft_id: row.id })
    return
  }
  const clone = await repo.lockDraftClone(trx, auth.tenantId, row.id)
  if (clone !== undefined) await repo.deleteRow(trx, auth.tenantId, clone.id)
  const deleted = await repo.updateEvent(trx, auth.tenantId, row.id, { is_deleted: true })
  await record(trx, auth, deleted, 'event.deleted', 'deleted')
}

export async function archiveEvent (
  trx: Tx, auth: AuthContext, id: number, ifMatch: string | undefined
): Promise<void> {
  const row = await lockEventForWrite(trx, auth, id, 'event:publish', { ifMatch })
  if (row.published_id !== null) {
    throw error409Conflict(
      'a draft cannot be archived: archive the published event or discard the draft', [], 'event_state_conflict'
    )
  }
  const clone = await repo.lockDraftClone(trx, auth.tenantId, row.id)
  if (clone !== undefined) await repo.deleteRow(trx, auth.tenantId, clone.id)
  const archived = await repo.updateEvent(trx, auth.tenantId, row.id, { status: 'archived' })
  await record(trx, auth, archived, 'event.archived', 'archived')
}

// ---- drafts and publishing

/** Publishes a standalone draft, or promotes the draft clone of a published event onto it (same id, version + 1). */
export async function publishEvent (
  trx: Tx,
  auth: AuthContext,
  id: number,
  input: PublishEventBody,
  ifMatch: string | undefined
): Promise<EventRow> {
  const row = await lockEventForWrite(trx, auth, id, 'event:publish', { ifMatch })
  let published: EventRow
  let draft: EventRow | undefined
  if (row.published_id !== null) {
    published = await repo.lockById(trx, auth.tenantId, row.published_id)
    draft = row
  } else {
    published = row
    draft = row.status === 'published' ? await repo.lockDraftClone(trx, auth.tenantId, row.id) : undefined
  }
  if (draft !== undefined) await repo.deleteRow(trx, auth.tenantId, draft.id)
  const result = await updateEvent(trx, auth.tenantId, published.id, {
    ...(draft !== undefined ? repo.contentOf(draft) : {}),
    status: 'published',
    published_at: new Date(),
    version: published.version + 1,
    cancel_in_feeds: false
  })
  // published again after an unpublish: the guests whose calendar holds it are told of what changed meanwhile
  if (published.status === 'draft' && published.published_at !== null) await tellPublishedChanges(trx, [result])
  await record(trx, auth, result, 'event.published', 'published', {
    version: result.version,
    from_draft: draft !== undefined,
    notify: input.notify ?? false
  })
  await notifyOnPublish(trx, {
    tenantId: auth.tenantId,
    actor: auth,
    creatorId: result.creator_id,
    request: input,
    template: eventPublished({
      eventId: result.id, version: result.version, title: result.title, message: input.message
    })
  })
  return result
}

/**
 * `POST /events/{id}/unpublish` (docs/events.md, "Unpublish"): a published event goes back to draft, off the public
 * pages, public registration and calendar feeds (kept there as cancelled with `cancel_in_feeds`), keeping its
 * attendees, managers, spaces, registration and version; `POST …/publish` publishes it again. An open draft clone is
 * kept as the event's content: a draft is edited in place, so its changes are moved onto the row and the clone goes.
 * 409 when the event is not published (a draft, an archived event, a draft clone's own id).
 */
export async function unpublishEvent (
  trx: Tx,
  auth: AuthContext,
  id: number,
  input: UnpublishEventBody,
  ifMatch: string | undefined
): Promise<EventRow> {
  const row = await lockEventForWrite(trx, auth, id, 'event:publish', { ifMatch })
  if (row.published_id !== null) {
    throw error409Conflict('a draft clone is not published: unpublish the published event', [
      fieldError('path.id', `the draft of event ${row.published_id}`, id)
    ], 'event_state_conflict')
  }
  if (row.status !== 'published') {
    throw error409Conflict('only a published event can be unpublished', [
      fieldError('path.id', `status ${row.status}`, id)
    ], 'event_state_conflict')
  }
  const draft = await repo.lockDraftClone(trx, auth.tenantId, row.id)
  if (draft !== undefined) await repo.deleteRow(trx, auth.tenantId, draft.id)
  const cancelInFeeds = input.cancel_in_feeds ?? false
  const result = await updateEvent(trx, auth.tenantId, row.id, {
    ...(draft !== undefined ? repo.contentOf(draft) : {}),
    status: 'draft',
    cancel_in_feeds: cancelInFeeds
  })
  await record(trx, auth, result, 'event.unpublished', 'unpublished', {
    version: result.version,
    cancel_in_feeds: cancelInFeeds,
    from_draft: draft !== undefined
  })
  return result
}

/** Returns the draft clone of a published event, creating it on first call. */
export async function startEdit (trx: Tx, auth: AuthContext, id: number, ifMatch?: string): Promise<EventRow> {
  const row = await lockEventForWrite(trx, auth, id, 'event:edit', { includeDraftClones: false, ifMatch })
  if (row.status !== 'published') {
    throw error409Conflict(
      'only a published event is edited through a draft; edit this draft directly', [], 'event_state_conflict'
    )
  }
  const existing = await repo.lockDraftClone(trx, auth.tenantId, row.id)
  if (existing !== undefined) return existing
  const content = repo.contentOf(row)
  const clone = await repo.insertEvent(trx, auth.tenantId, {
    ...content,
    start_dt: row.start_dt,
    end_dt: row.end_dt,
    metadata: content.metadata as string,
    metadata_override: content.metadata_override as string | null,
    title: row.title,
    org_id: row.org_id,
    creator_id: row.creator_id,
    template: row.template,
    template_version: row.template_version,
    state: row.state,
    series_id: row.series_id,
    series_index: row.series_index,
    created_dt: row.created_dt,
    is_locked: row.is_locked,
    version: row.version,
    status: 'draft',
    published_id: row.id,
    published_at: row.published_at
  })
  await record(trx, auth, clone, 'event.draft_started', 'draft_started', { draft_id: clone.id })
  return clone
}

export async function findDraft (trx: Tx, auth: AuthContext, id: number): Promise<EventRow> {
  const row = await findEventForRead(trx, auth, id)
  const draft = await repo.findDraftClone(trx, auth.tenantId, row.id)
  if (draft === undefined) throw error404NotFound('the event has no draft')
  return draft
}

export async function discardDraft (trx: Tx, auth: AuthContext, id: number, ifMatch?: string): Promise<void> {
  const row = await lockEventForWrite(trx, auth, id, 'event:edit', { ifMatch })
  const draft = row.published_id !== null ? row : await repo.lockDraftClone(trx, auth.tenantId, row.id)
  if (draft === undefined) throw error404NotFound('the event has no draft')
  await repo.deleteRow(trx, auth.tenantId, draft.id)
  await record(trx, auth, draft, 'event.draft_discarded', 'draft_discarded', { draft_id: draft.id })
}

// ---- template state machine

/**
 * Moves an event to `toState` if its template version allows the move from its current state
 * and the move's guard accepts `payload`: 409 (allowed moves in the detail) or 422 otherwise.
 * Writes the state, an activity row with the reason and an `event.transitioned` domain event.
 * `actor` is always checked (visibility and `event:edit`); with `depth`, it is an automation acting
 * as its rule's creator, and the change is recorded with no actor and that chain depth.
 *
 * @example
 *   await transitionEvent(trx, { ...creator, depth: depth + 1 }, eventId, 'delivered', { proof_of_delivery: 'sig-1' },
 * 'courier scan')
 */
export async function transitionEvent (
  trx: Tx,
  actor: EventActor,
  eventId: number,
  toState: string,
  payload: Json = {},
  reason: string | null = null,
  options: { ifMatch?: string | undefined } = {}
): Promise<EventRow> {
  const row = await lockEventForWrite(trx, actor, eventId, 'event:edit', { ifMatch: options.ifMatch })
  if (row.published_id !== null) {
    throw error409Conflict(
      'a draft clone has no state of its own: transition the published event', [], 'event_state_conflict'
    )
  }
  const template = findTemplate(row.template, row.template_version) ?? latestTemplate(row.template)
  const verdict = decideTransition(template?.state_machine ?? null, row.state, toState, payload)
  if (!verdict.ok) {
    switch (verdict.reason) {
      case 'no_state_machine':
        throw error409Conflict(`template ${row.template} has no state machine`, [], 'transition_not_allowed')
      case 'not_allowed':
        throw error409Conflict(
          `cannot move from ${row.state ?? 'none'} to ${toState}; allowed: ` +
          `${verdict.allowed.length > 0 ? verdict.allowed.join(', ') : 'none'}`,
          [fieldError('body.to_state', `expected one of: ${verdict.allowed.join(', ')}`, toState)],
          'transition_not_allowed'
        )
      case 'guard_failed':
        throw error422UnprocessableEntity(
          `the move to ${toState} was refused: ${verdict.message}`,
          verdict.missing.map(f => fieldError(`body.payload.${f}`, 'expected a non-empty value')), 'transition_refused')
    }
  }
  const from = row.state
  const updated = await repo.updateEvent(trx, actor.tenantId, row.id, { state: toState })
  // an automation acting as a caller (checked above with the caller's rights) records like the service, with its chain
  // depth
  const recorder: Recorder =
    actor.depth !== undefined ? { kind: 'automation', tenantId: actor.tenantId, depth: actor.depth } : actor
  await record(trx, recorder, updated, 'event.transitioned', 'state_changed', {
    from_state: from,
    to_state: toState,
    reason,
    payload
  })
  return updated
}

// ---- activity

export async function listActivity (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  kind: string | undefined,
  limit: number,
  cursor?: string
) {
  const row = await findEventForRead(trx, auth, eventId)
  return await repo.listActivity(trx, auth.tenantId, row.id, kind, limit, cursor)
}

export async function appendActivity (trx: Tx, auth: AuthContext, eventId: number, kind: string, payload: Json) {
  if ((SYSTEM_ACTIVITY_KINDS as readonly string[]).includes(kind)) {
    throw invalidField('body.kind', 'this kind is written by the service only', kind)
  }
  if (Buffer.byteLength(JSON.stringify(payload)) > METADATA_MAX_BYTES) {
    throw invalidField('body.payload', `expected at most ${METADATA_MAX_BYTES} bytes of JSON`)
  }
  const row = await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: false })
  if (!templateAllows(row.template, row.template_version, 'activity', kind)) {
    throw invalidField(
      'body.kind',
      `template ${row.template} v${row.template_version} does not declare this activity kind`,
      kind
    )
  }
  const created = await repo.insertActivity(trx, {
    tenantId: auth.tenantId,
    eventId: row.id,
    orgId: row.org_id,
    actorId: auth.userId,
    kind,
    payload
  })
  await emit(trx, eventEvent(auth, row.id, 'event.activity_added', eventPayload(row, {
    activity_id: created.id, kind
  })))
  return created
}

// ---- spaces

export async function listSpaces (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  q: { page: number; size: number; cursor?: string | undefined }
) {
  const row = await findEventForRead(trx, auth, eventId)
  return await repo.listEventSpaces(trx, auth.tenantId, row.id, q)
}

/** Links the event to a space; `spaceForEventLink` (the spaces module's, events.needs.ts) checks the space. */
export async function addSpace (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  spaceId: number,
  spaceForEventLink: SpaceForEventLink,
  ifMatch?: string
) {
  const row = await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: false, ifMatch })
  // writing the event is not enough: the space must be visible (404) and take events from the caller (403)
  await spaceForEventLink(trx, auth, spaceId, true)
  const created = await repo.insertEventSpace(trx, auth.tenantId, row.id, spaceId, row.org_id)
  if (created === undefined) {
    throw error409Conflict('the event already belongs to this space', [
      fieldError('body.space_id', 'duplicate', spaceId)
    ], 'already_linked')
  }
  await repo.updateEvent(trx, auth.tenantId, row.id, {})
  await record(trx, auth, row, 'event.space_added', 'space_added', { space_id: spaceId })
  return created
}

export async function removeSpace (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  spaceId: number,
  spaceForEventLink: SpaceForEventLink,
  ifMatch?: string
): Promise<void> {
  const row = await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: false, ifMatch })
  await spaceForEventLink(trx, auth, spaceId, false)
  if (!(await repo.deleteEventSpace(trx, auth.tenantId, row.id, spaceId))) {
    throw error404NotFound('the event does not belong to this space')
  }
  await repo.updateEvent(trx, auth.tenantId, row.id, {})
  await record(trx, auth, row, 'event.space_removed', 'space_removed', { space_id: spaceId })
}

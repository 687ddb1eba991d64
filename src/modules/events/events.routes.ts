/**
 * Events: create, clone, read, replace, merge-patch, delete, archive; drafts (edit, draft, discard),
 * publishing and unpublishing; template transitions; list and calendar; activity rows; membership in spaces; the
 * template registry and the event-manager permission catalogue. Owns the tables `events`,
 * `event_activity`, `event_spaces` and `event_managers` (the managers routes, attendees,
 * milestones, series and automations live in their own modules and build on events.access.repository.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { DateTime } from 'luxon'
import { defineModule } from '../../platform/app-context.ts'
import { ifMatchOf } from '../../platform/http/conditional.ts'
import { error404NotFound, invalidField } from '../../platform/http/errors.ts'
import { KeysetPageQuery, searchedPageOf } from '../../platform/http/schema.ts'
import { sendJsonFields } from '../../platform/http/schema-links.ts'
import {
  answerPage, answerWithEtag, createdRoute, noContentRoute, operationsTagged
} from '../../platform/http/routes.ts'
import { countingOf } from '../../platform/db/kept-counts.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { EventRow } from './events.table.ts'
import { EVENT_MANAGER_ROLES, EVENT_PERMISSIONS } from './events.permissions.ts'
import * as lists from './events.list.repository.ts'
import { listEventChanges, reachDigest } from './events.sync.repository.ts'
import { isSyncRead, sealKeys, syncedRead, syncScope } from '../../platform/sync/sync.ts'
import { renderEvents } from './events.bodies.repository.ts'
import {
  ActivityListBody, ActivityQuery, ActivityRow, AddEventSpaceBody, CALENDAR_MAX_DAYS, CALENDAR_MAX_ITEMS, CalendarBody,
  CalendarQuery, CloneEventBody, CreateActivityBody, CreateEventBody, Event, EventIdParams, EventParams, EventSpace,
  EventSpaceParams, EventTemplate, EventTemplateList, ListEventsQuery, ManagerPermissionsBody, PagedBodyEvent,
  PagedBodyEventSpace, PatchEventBody, PatchEventQuery, PublishEventBody, ReplaceEventBody, TemplateParams,
  TemplateQuery, TransitionBody, UnpublishEventBody
} from './events.schemas.ts'
import * as service from './events.service.ts'
import type { EventsNeeds } from './events.needs.ts'
import {
  findTemplate, latestTemplate, TEMPLATE_IDS, templateVersions, type TemplateVersion
} from './events.templates.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Events')
const templateOperation = operationsTagged('Event templates')

function templateView (t: TemplateVersion) {
  const m = t.state_machine
  return {
    id: t.id,
    version: t.version,
    versions: templateVersions(t.id).map(v => v.version),
    name: t.name,
    description: t.description,
    states: m === null ? null : [...m.states],
    initial_state: m?.initial ?? null,
    final_states: m === null ? null : [...m.final],
    transitions: (m?.transitions ?? []).map(tr => ({
      from: tr.from,
      to: tr.to,
      guard:
        tr.guard === undefined
          ? null
          : { required_payload: [...tr.guard.required_payload], description: tr.guard.description }
    })),
    allowed_attachment_kinds: [...t.allowed_attachment_kinds],
    participant_roles: [...t.participant_roles],
    activity_kinds: [...t.activity_kinds],
    priority_semantics: t.priority_semantics
  }
}

/** Start (inclusive) and end (exclusive) instants of a day range in a time zone; 400 on bad input. */
function calendarRange (q: { start_date: string; end_date: string; timezone?: string | undefined }): {
  from: Date
  to: Date
} {
  const zone = q.timezone ?? 'UTC'
  const start = DateTime.fromISO(q.start_date, { zone })
  if (!start.isValid) {
    if (start.invalidReason === 'unsupported zone') {
      throw invalidField('query.timezone', 'expected an IANA time zone name', q.timezone)
    }
    throw invalidField('query.start_date', 'expected a date YYYY-MM-DD', q.start_date)
  }
  const end = DateTime.fromISO(q.end_date, { zone })
  if (!end.isValid) throw invalidField('query.end_date', 'expected a date YYYY-MM-DD', q.end_date)
  const days = end.diff(start, 'days').days
  if (days < 0) throw invalidField('query.end_date', 'expected end_date >= start_date', q.end_date)
  if (days + 1 > CALENDAR_MAX_DAYS) {
    throw invalidField('query.end_date', `expected a range of at most ${CALENDAR_MAX_DAYS} days`, q.end_date)
  }
  return { from: start.toJSDate(), to: end.plus({ days: 1 }).toJSDate() }
}

/** The events module; `needs` are what the modules built on it give it (events.needs.ts, wired by src/app.ts). */
export const eventsModule = (needs: EventsNeeds) => defineModule(async (app, ctx) => {
  const { db } = ctx
  const { applyScopedEdit, cloneParts, eventFigures, spaceForEventLink } = needs

  /** The event `write` returns, with its spaces and series title, as the answer: ETag set. */
  async function answerEvent (
    request: FastifyRequest,
    reply: FastifyReply,
    write: (trx: Tx, auth: AuthContext) => Promise<EventRow>
  ) {
    return await answerWithEtag(db, request, reply, async (trx, auth) =>
      await service.withSpaces(trx, auth.tenantId, await write(trx, auth))
    )
  }

  app.get('/api/v1/event-templates', templateOperation('list-event-templates',
    'List registered event templates (latest versions)', {
      description: 'The registered event templates at their latest versions: their fields, states and the ' +
        'attachments they allow. Pick one when creating an event.',
      response: { 200: EventTemplateList }
    }, requirePolicy('event', 'list')), async () => ({
    items: TEMPLATE_IDS.map(id => latestTemplate(id))
      .filter(t => t !== undefined)
      .map(templateView)
  }))

  app.get('/api/v1/event-templates/:id', templateOperation('get-event-template',
    'Latest version of one template (or the version asked for)', {
      description: 'One template at its latest version, or at the version asked for. Events keep the version they ' +
        'were created with.',
      params: TemplateParams,
      querystring: TemplateQuery,
      response: { 200: EventTemplate }
    }, requirePolicy('event', 'list')), async request => {
    const { id } = request.params
    const t = request.query.version === undefined ? latestTemplate(id) : findTemplate(id, request.query.version)
    if (t === undefined) throw error404NotFound('template not found')
    return templateView(t)
  })

  app.get('/api/v1/events/manager-permissions', operation('list-event-manager-permissions',
    'Assignable event manager permissions and role bundles', {
      description: 'The permissions and role bundles an event manager can be granted. Use it to build the form of ' +
        '`add-event-manager`.',
      response: { 200: ManagerPermissionsBody }
    }, requirePolicy('manager', 'catalogue')), async () => ({
    permissions: [...EVENT_PERMISSIONS],
    roles: Object.fromEntries(Object.entries(EVENT_MANAGER_ROLES).map(([k, v]) => [k, [...v]]))
  }))

  app.post('/api/v1/events', operation('create-event', 'Create an event (a draft)', {
    description: 'Creates an event as a draft of the caller, who becomes its manager. Publish it to show it to ' +
      'attendees, on public pages and in feeds.',
    body: CreateEventBody,
    response: { 201: Event }
  }, requirePolicy('event', 'create')), async (request, reply) => {
    const event = await answerEvent(request, reply, (trx, auth) => service.createEvent(trx, auth, request.body))
    return await reply.code(201).header('location', `/api/v1/events/${event.id}`).send(event)
  })

  app.get('/api/v1/events', operation('list-events', 'List events', {
    description: 'Pages through the events the caller can see, filtered by status, visibility, time and space, ' +
      'searched and sorted. With `sync=true` the last page carries a `sync_token` for later changes.',
    querystring: ListEventsQuery,
    response: { 200: PagedBodyEvent }
  }, requirePolicy('event', 'list')), async (request, reply) => {
    const { auth, query: q } = request
    const templates = [...(q.template !== undefined ? [q.template] : []), ...(q.template_in ?? [])]
    // before the transaction: PGlite has one connection, which the transaction holds
    const counting = await countingOf(db, lists.LIST_COUNTS_TRIGGER)
    const paged = searchedPageOf(q)
    const filters: lists.ListFilters = {
      search: paged.search === '' ? undefined : paged.search,
      status: q.status,
      visibility: q.visibility,
      startAfter: q.start_dt_after,
      startBefore: q.start_dt_before,
      spaceIds: q.space_ids,
      templates
    }
    // the rows, then their bodies from the row cache or rendered by PostgreSQL (events.bodies.repository.ts)
    const found = await withTenant(db, auth, async trx => {
      const full = async (cursor: string | undefined) =>
        await lists.listEvents(trx, auth, { ...paged, ...filters, cursor, counting })
      // incremental sync (docs/integrations.md): the token binds the filters, the caller and the caller's reach
      const found = !isSyncRead(q)
        ? await full(q.cursor)
        : await syncedRead(trx, {
          query: q,
          scope: syncScope('events', auth, filters, { '@reach': await reachDigest(trx, auth) }),
          tenantId: auth.tenantId,
          now: new Date(),
          windowMs: ctx.config.syncWindowMs,
          keys: sealKeys(ctx.config),
          full,
          changes: async window => await listEventChanges(trx, auth, { ...filters, ...window })
        })
      return { ...found, items: await renderEvents(trx, ctx.eventBodies, auth.tenantId, found.items) }
    })
    return await sendJsonFields(request, reply, {
      items: found.items,
      page: String(found.page),
      size: String(q.size),
      total: String(found.total),
      next_cursor: JSON.stringify(found.next_cursor),
      ...('deleted' in found && found.deleted !== undefined ? { deleted: JSON.stringify(found.deleted) } : {}),
      ...('sync_token' in found && found.sync_token !== undefined
        ? { sync_token: JSON.stringify(found.sync_token) }
        : {})
    })
  })

  app.get('/api/v1/events/calendar', operation('get-events-calendar',
    `Events overlapping a date range (at most ${CALENDAR_MAX_DAYS} days)`, {
      description: 'The visible events that overlap a date range of at most 366 days, series occurrences included. ' +
        'Use it to fill a calendar view.',
      querystring: CalendarQuery,
      response: { 200: CalendarBody }
    }, requirePolicy('event', 'list')), async (request, reply) => {
    const { auth, query: q } = request
    const { from, to } = calendarRange(q)
    // rendered JSON (events.bodies.repository.ts): a month is some 400 events
    const items = await withTenant(
      db,
      auth,
      async trx =>
        await renderEvents(
          trx,
          ctx.eventBodies,
          auth.tenantId,
          await lists.calendarEvents(
            trx,
            auth,
            from,
            to,
            q.sort_by ?? 'start_dt',
            q.sort_order ?? 'asc',
            CALENDAR_MAX_ITEMS
          )
        )
    )
    return await sendJsonFields(request, reply, { items, next_cursor: 'null' })
  })

  app.get('/api/v1/events/:id', operation('get-event', 'Get an event', {
    description: 'One event the caller can see, with its attendee figures and ETag. A published event under edit ' +
      'shows its published form; the draft is read with `get-event-draft`.',
    params: EventParams,
    response: { 200: Event }
  }, requirePolicy('event', 'read')), async (request, reply) => {
    // asked outside the transaction (kept-counts.ts): kept by triggers, or counted on Citus
    const counting = await countingOf(db, eventFigures.keptBy)
    return await answerWithEtag(db, request, reply, async (trx, auth) =>
      await service.getEvent(trx, auth, request.params.id, eventFigures, counting))
  })

  app.put('/api/v1/events/:id', operation('replace-event',
    'Replace the writable fields of an event (its draft when one is open)', {
      description: 'Replaces every writable field of an event, or of its open draft. A field left out is cleared.',
      params: EventParams,
      body: ReplaceEventBody,
      response: { 200: Event }
    }, requirePolicy('event', 'edit')), async (request, reply) =>
    await answerEvent(request, reply, (trx, auth) =>
      service.replaceEvent(trx, auth, request.params.id, request.body, ifMatchOf(request))
    )
  )

  app.patch('/api/v1/events/:id', operation('patch-event',
    'Merge-patch an event (RFC 7396; its draft when one is open)', {
      description: 'Changes the fields the body names, in the event or in its open draft; `null` clears a field. On ' +
        'an occurrence, `scope` says whether the change applies to the following occurrences too.',
      params: EventParams,
      querystring: PatchEventQuery,
      body: PatchEventBody,
      response: { 200: Event }
    }, requirePolicy('event', 'edit')), async (request, reply) =>
    await answerEvent(request, reply, (trx, auth) =>
      request.query.scope !== undefined // series edit scope (this/future/all): src/modules/series
        ? applyScopedEdit(trx, auth, request.params.id, request.query.scope, request.body, ifMatchOf(request))
        : service.patchEvent(trx, auth, request.params.id, request.body, ifMatchOf(request))
    )
  )

  noContentRoute(app, db, 'delete', '/api/v1/events/:id', operation('delete-event', 'Delete an event (soft delete)', {
    description: 'Deletes an event (softly: it disappears from every list). Cancel a published event instead when ' +
      'its attendees should be told.',
    params: EventParams
  }, requirePolicy('event', 'delete')), (trx, request) =>
    service.deleteEvent(trx, request.auth, request.params.id, ifMatchOf(request)))

  noContentRoute(app, db, 'post', '/api/v1/events/:id/archive', operation('archive-event',
    'Archive an event (read-only afterwards)', {
      description: 'Makes an event read-only, keeping it readable with its attendees. Use it for events that are over.',
      params: EventParams
    }, requirePolicy('event', 'archive')), (trx, request) =>
    service.archiveEvent(trx, request.auth, request.params.id, ifMatchOf(request)))

  noContentRoute(app, db, 'post', '/api/v1/events/:id/publish', operation('publish-event',
    'Publish an event, or promote its draft', {
      description: 'Publishes a draft event, or applies the open draft of a published one; attendees can be told by ' +
        'notification.',
      params: EventParams,
      body: PublishEventBody
    }, requirePolicy('event', 'publish'), { optionalBody: true }), (trx, request) =>
    service.publishEvent(trx, request.auth, request.params.id, request.body, ifMatchOf(request)))

  noContentRoute(app, db, 'post', '/api/v1/events/:id/unpublish', operation('unpublish-event',
    'Take a published event back to draft (off public pages and feeds; attendees kept)', {
      description: 'Takes a published event back to draft: it leaves public pages and feeds while its attendees stay.',
      params: EventParams,
      body: UnpublishEventBody
    }, requirePolicy('event', 'unpublish'), { optionalBody: true }), (trx, request) =>
    service.unpublishEvent(trx, request.auth, request.params.id, request.body, ifMatchOf(request)))

  app.post('/api/v1/events/:id/clone', operation('clone-event',
    'Clone an event as a new draft of the caller (never its attendees or series)', {
      description: 'Copies an event as a new draft of the caller, without its attendees or series. Use it to repeat ' +
        'an event by hand.',
      params: EventParams,
      body: CloneEventBody,
      response: { 201: Event }
    }, requirePolicy('event', 'clone')), async (request, reply) => {
    const event = await answerEvent(request, reply, (trx, auth) =>
      service.cloneEvent(trx, auth, request.params.id, request.body, cloneParts))
    return await reply.code(201).header('location', `/api/v1/events/${event.id}`).send(event)
  })

  app.post('/api/v1/events/:id/edit', operation('edit-event',
    'Start editing a published event: returns its draft clone', {
      description: 'Opens the draft clone of a published event (or returns the open one) so that changes can be ' +
        'prepared without showing them. Publish to apply it, discard to drop it.',
      params: EventParams,
      response: { 200: Event }
    }, requirePolicy('event', 'edit')), async (request, reply) =>
    await answerEvent(request, reply, (trx, auth) =>
      service.startEdit(trx, auth, request.params.id, ifMatchOf(request))
    )
  )

  app.get('/api/v1/events/:id/draft', operation('get-event-draft', 'Get the draft clone of a published event', {
    description: 'The draft clone of a published event, as it will be once published. Answers 404 when no draft is ' +
      'open.',
    params: EventParams,
    response: { 200: Event }
  }, requirePolicy('draft', 'read')), async (request, reply) =>
    await answerEvent(request, reply, (trx, auth) => service.findDraft(trx, auth, request.params.id))
  )

  noContentRoute(app, db, 'post', '/api/v1/events/:id/discard', operation('discard-event-draft',
    'Discard the draft, keep the published version', {
      description: 'Drops the draft of a published event; the published version stays as it is.',
      params: EventParams
    }, requirePolicy('draft', 'edit')), (trx, request) =>
    service.discardDraft(trx, request.auth, request.params.id, ifMatchOf(request)))

  app.post('/api/v1/events/:id/transition', operation('transition-event',
    'Move an event along its template state machine', {
      description: 'Moves the event to another state its template allows from the current one, checking the ' +
        'transition\'s guards. The states and transitions are the template\'s.',
      params: EventParams,
      body: TransitionBody,
      response: { 200: Event }
    }, requirePolicy('event', 'edit')), async (request, reply) => {
    const b = request.body
    return await answerEvent(request, reply, (trx, auth) =>
      service.transitionEvent(trx, auth, request.params.id, b.to_state, b.payload ?? {}, b.reason ?? null, {
        ifMatch: ifMatchOf(request)
      })
    )
  })

  app.get('/api/v1/events/:event_id/activity', operation('list-event-activity',
    'Activity rows of an event, newest first', {
      description: 'The activity rows of an event, newest first: changes, notes, comments and automation runs.',
      params: EventIdParams,
      querystring: ActivityQuery,
      response: { 200: ActivityListBody }
    }, requirePolicy('link', 'read')), async request => {
    return await withTenant(db, request.auth, trx =>
      service.listActivity(
        trx,
        request.auth,
        request.params.event_id,
        request.query.kind,
        request.query.limit,
        request.query.cursor
      )
    )
  })

  createdRoute(app, db, 'post', '/api/v1/events/:event_id/activity', operation('create-event-activity',
    'Append an activity row', {
      description: 'Appends a note or comment to the event\'s activity. Rows are never edited afterwards.',
      params: EventIdParams,
      body: CreateActivityBody,
      response: { 201: ActivityRow }
    }, requirePolicy('event', 'edit')), async (trx, { auth, params, body }) =>
    await service.appendActivity(trx, auth, params.event_id, body.kind, body.payload ?? {}))

  app.get('/api/v1/events/:id/spaces', operation('list-event-spaces', 'Spaces the event belongs to', {
    description: 'The spaces the event is linked to that the caller can see.',
    params: EventParams,
    querystring: KeysetPageQuery,
    response: { 200: PagedBodyEventSpace }
  }, requirePolicy('event', 'read')), async request =>
    await answerPage(db, request, trx => service.listSpaces(trx, request.auth, request.params.id, request.query))
  )

  createdRoute(app, db, 'post', '/api/v1/events/:id/spaces', operation('add-event-space', 'Add the event to a space', {
    description: 'Links the event to a space the caller may add events to. The event appears in the space\'s lists ' +
      'and feeds.',
    params: EventParams,
    body: AddEventSpaceBody,
    response: { 201: EventSpace }
  }, requirePolicy('event', 'link_space')), async (trx, request) => await service.addSpace(
    trx, request.auth, request.params.id, request.body.space_id, spaceForEventLink, ifMatchOf(request)))

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/spaces/:space_id', operation('remove-event-space',
    'Remove the event from a space', {
      description: 'Unlinks the event from a space; neither is otherwise changed.',
      params: EventSpaceParams
    }, requirePolicy('event', 'link_space')), (trx, request) => service.removeSpace(
    trx, request.auth, request.params.id, request.params.space_id, spaceForEventLink, ifMatchOf(request)))
})

/**
 * Attendees of an event: list, add, status, remove, bulk add/remove/status (up to BULK_MAX contact
 * ids, one transaction, all or nothing). Reading needs the event permission `attendees:read`,
 * writes `attendees:write`. Statuses asked for pass through the transition table
 * (attendees.transitions.ts) and registration (capacity, waitlist, approval:
 * attendees.registration.ts). An attendee's ETag is a digest of its row
 * (`attendeeEtag`), sent by add and PATCH; PATCH and DELETE of one attendee honour If-Match (412,
 * nothing changed). Check-in: attendees.checkin.routes.ts.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import {
  error400BadRequest, error404NotFound, fieldError, invalidField
} from '../../platform/http/errors.ts'
import { checkIfMatchTag, ifMatchOf } from '../../platform/http/conditional.ts'
import { idempotentWrite } from '../../platform/http/idempotency.ts'
import { answerPage, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { emit, emitMany, type DomainEvent } from '../../platform/outbox.ts'
import {
  eventDomainEvent, EventParams, type EventRow, lockEventForWrite, readEventWith, rootEventId
} from '../events/index.ts'
import * as repo from './attendees.repository.ts'
import { isSyncRead, sealKeys, syncedRead, syncScope } from '../../platform/sync/sync.ts'
import {
  AddAttendeeBody, Attendee, AttendeeParams, BULK_MAX, BulkAddBody, BulkRemoveBody, BulkStatusBody, ListAttendeesQuery,
  PagedBodyAttendee, UpdateAttendeeBody
} from './attendees.schemas.ts'
import type { AttendeeStatus } from './attendees.table.ts'
import { addAttendees, changeStatuses, settleWaitlist, type Changed } from './attendees.registration.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Event attendees')
const MAX_ERRORS = 100

type Topic =
  | 'attendee.added'
  | 'attendee.status_changed'
  | 'attendee.removed'
  | 'attendee.checked_in'
  | 'attendee.check_in_undone'
  | 'attendee.checked_out'

export function attendeeEvent (
  auth: AuthContext,
  event: EventRow,
  topic: Topic,
  contactId: string,
  status: AttendeeStatus,
  extra: Record<string, unknown> = {}
): DomainEvent {
  return eventDomainEvent(auth, event, topic, { contact_id: contactId, status, template: event.template, ...extra })
}

/** The waitlist position of a waitlisted attendee, for its domain event. */
const positionOf = (row: { waitlist_position: number | null }): Record<string, unknown> =>
  row.waitlist_position === null ? {} : { waitlist_position: row.waitlist_position }

/** `attendee.status_changed` for every attendee whose status a change moved. */
export async function emitChanges (
  trx: Tx,
  auth: AuthContext,
  event: EventRow,
  changed: readonly Changed[]
): Promise<void> {
  await emitMany(trx, changed.flatMap(c =>
    c.previous === c.row.status
      ? []
      : [attendeeEvent(auth, event, 'attendee.status_changed', c.row.contact_id, c.row.status, {
          previous_status: c.previous,
          ...positionOf(c.row)
        })]))
}

/**
 * What a bulk request acts on: the event, locked for `attendees:write`, and the distinct contact ids; 400 naming every
 * contact id the caller cannot see (`body.contact_ids[i]`), and nothing is applied.
 */
async function bulkTargets (trx: Tx, auth: AuthContext, eventId: number, ids: string[]) {
  const event = await lockEventForWrite(trx, auth, eventId, 'attendees:write')
  const visible = await repo.visibleContactIds(trx, auth, ids)
  const errors = ids.flatMap((id, i) =>
    visible.has(id) ? [] : [fieldError(`body.contact_ids[${i}]`, 'unknown contact', id)]
  )
  if (errors.length > 0) {
    throw error400BadRequest(`${errors.length} unknown contact(s); nothing was applied`, errors.slice(0, MAX_ERRORS))
  }
  return { event, ids: [...new Set(ids)] }
}

/** Locks an attendee for a write to it: 404 when the contact does not attend, 412 when If-Match names another state. */
async function lockForWrite (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  contactId: string,
  ifMatch: string | undefined
) {
  const current = await repo.lockAttendee(trx, auth.tenantId, eventId, contactId)
  if (current === undefined) throw error404NotFound('attendee not found')
  checkIfMatchTag(ifMatch, repo.attendeeEtag(current))
  return current
}

export async function attendeesRoutes (app: App, { db, config }: AppContext): Promise<void> {
  app.get('/api/v1/events/:id/attendees', operation('list-event-attendees',
    'List attendees (event permission attendees:read)', {
      description: 'Pages through the attendees of an event with their status, filtered and sorted. With `sync=true` ' +
        'the last page carries a `sync_token` for later changes.',
      params: EventParams,
      querystring: ListAttendeesQuery,
      response: { 200: PagedBodyAttendee }
    }, requirePolicy('attendee', 'read')), async request => {
    return await answerPage(db, request, async (trx, q, auth) => {
      const event = await readEventWith(trx, auth, request.params.id, 'attendees:read')
      const of = { id: rootEventId(event), seriesId: event.series_id }
      const full = async (cursor: string | undefined) =>
        await repo.listAttendees(trx, auth.tenantId, of, { page: q.page, size: q.size, cursor, status: q.status })
      if (!isSyncRead(q)) return await full(q.cursor)
      // incremental sync (docs/integrations.md): the token binds the event, its series, the filter and the caller
      return await syncedRead(trx, {
        query: q,
        scope: syncScope('attendees', auth, { event: of.id, series: of.seriesId, status: q.status }),
        tenantId: auth.tenantId,
        now: new Date(),
        windowMs: config.syncWindowMs,
        keys: sealKeys(config),
        full,
        changes: async window => await repo.listAttendeeChanges(trx, auth.tenantId, of, { ...window, status: q.status })
      })
    })
  })

  app.post('/api/v1/events/:id/attendees', operation('add-event-attendee',
    'Add a contact as an attendee (409 when already attending)', {
      description: 'Adds a contact the caller can see as an attendee, with capacity, waitlist and approval applied. ' +
        'A contact already attending answers 409.',
      params: EventParams,
      body: AddAttendeeBody,
      response: { 201: Attendee }
    }, requirePolicy('attendee', 'write'), { config: { idempotency: 'transaction' } }), async (request, reply) => {
    const { auth, body: b } = request
    const row = await idempotentWrite(db, request, async trx => {
      const event = await lockEventForWrite(trx, auth, request.params.id, 'attendees:write')
      if ((await repo.visibleContactIds(trx, auth, [b.contact_id])).size === 0) {
        throw invalidField('body.contact_id', 'unknown contact', b.contact_id)
      }
      // already attending: 409 naming body.contact_id (addAttendees says so, the one place that checks)
      const [created] = await addAttendees(trx, event, [{ contactId: b.contact_id, status: b.status ?? 'invited' }], {
        at: () => 'body.status',
        who: () => 'body.contact_id',
        attending: 'refuse',
        notes: b.notes ?? null
      })
      if (created === undefined) throw new Error('an add that refused nothing created no attendee')
      await emit(trx,
        attendeeEvent(auth, event, 'attendee.added', created.contact_id, created.status, positionOf(created)))
      return created
    })
    void reply.header('etag', repo.attendeeEtag(row))
    return await reply.code(201).send(row)
  })

  noContentRoute(app, db, 'post', '/api/v1/events/:id/attendees/bulk', operation('bulk-add-event-attendees',
    `Add up to ${BULK_MAX} contacts; those already attending are left as they are`, {
      description: 'Adds up to 1000 contacts in one call; contacts already attending are left as they are and ' +
        'reported. Use it to invite a list.',
      params: EventParams,
      body: BulkAddBody
    }, requirePolicy('attendee', 'write'), {
      config: { idempotency: 'transaction' }
    }), async (trx, { auth, params, body }) => {
    const { event, ids } = await bulkTargets(trx, auth, params.id, body.contact_ids)
    const status = body.status ?? 'invited'
    const firstIndex = new Map(body.contact_ids.map((id, i) => [id, i] as const).reverse())
    const created = await addAttendees(trx, event, ids.map(contactId => ({ contactId, status })), {
      at: i => `body.contact_ids[${firstIndex.get(ids[i] ?? '') ?? i}]`
    })
    await emitMany(trx, created.map(c =>
      attendeeEvent(auth, event, 'attendee.added', c.contact_id, c.status, positionOf(c))))
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/attendees/bulk', operation('bulk-remove-event-attendees',
    'Remove attendees by contact id (optionally only those in a status)', {
      description: 'Removes attendees by contact id, optionally only those in a given status. Seats freed go to the ' +
        'waitlist.',
      params: EventParams,
      body: BulkRemoveBody
    }, requirePolicy('attendee', 'write')), async (trx, { auth, params, body }) => {
    const { event, ids } = await bulkTargets(trx, auth, params.id, body.contact_ids)
    const removed = await repo.deleteAttendees(trx, auth.tenantId, rootEventId(event), ids, body.status)
    await emitMany(trx, removed.map(r => attendeeEvent(auth, event, 'attendee.removed', r.contact_id, r.status)))
    await settleWaitlist(trx, event)
  })

  noContentRoute(app, db, 'patch', '/api/v1/events/:id/attendees/bulk/status', operation(
    'bulk-update-event-attendee-status',
    'Set the status of attendees (every contact must attend; else 400 and nothing changes)', {
      description: 'Sets the status of many attendees at once, all or nothing. A contact who does not attend makes ' +
        'it a 400.',
      params: EventParams,
      body: BulkStatusBody
    }, requirePolicy('attendee', 'write')), async (trx, { auth, params, body: b }) => {
    const { event } = await bulkTargets(trx, auth, params.id, b.contact_ids)
    const requests = b.contact_ids.map(contactId => ({ contactId, status: b.status }))
    const { changed } = await changeStatuses(trx, event, requests, {
      at: i => `body.contact_ids[${i}]`
    })
    await emitChanges(trx, auth, event, changed)
  })

  app.patch('/api/v1/events/:id/attendees/:contact_id', operation('update-event-attendee',
    'Set the status of an attendee (sets responded_at)', {
      description: 'Sets the status of one attendee and records when they answered. Capacity, waitlist and approval ' +
        'apply.',
      params: AttendeeParams,
      body: UpdateAttendeeBody,
      response: { 200: Attendee }
    }, requirePolicy('attendee', 'write')), async (request, reply) => {
    const { auth, params: { id, contact_id: contactId } } = request
    const row = await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, id, 'attendees:write')
      await lockForWrite(trx, auth, rootEventId(event), contactId, ifMatchOf(request))
      // a refusal of the transition table answers the problem check-in answers for the same move
      const { changed } = await changeStatuses(trx, event, [{ contactId, status: request.body.status }], {
        at: () => 'body.status',
        who: () => 'path.contact_id',
        notes: request.body.notes
      })
      const [one] = changed
      if (one === undefined) throw error404NotFound('attendee not found')
      await emitChanges(trx, auth, event, changed)
      return one.row
    })
    void reply.header('etag', repo.attendeeEtag(row))
    return row
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/attendees/:contact_id', operation('remove-event-attendee',
    'Remove an attendee', {
      description: 'Removes an attendee from the event; a seat freed goes to the waitlist.',
      params: AttendeeParams
    }, requirePolicy('attendee', 'write')), async (trx, request) => {
    const { auth, params: { id, contact_id: contactId } } = request
    const event = await lockEventForWrite(trx, auth, id, 'attendees:write')
    await lockForWrite(trx, auth, rootEventId(event), contactId, ifMatchOf(request))
    const [removed] = await repo.deleteAttendees(trx, auth.tenantId, rootEventId(event), [contactId])
    if (removed === undefined) throw error404NotFound('attendee not found')
    await emit(trx, attendeeEvent(auth, event, 'attendee.removed', contactId, removed.status))
    await settleWaitlist(trx, event)
  })
}

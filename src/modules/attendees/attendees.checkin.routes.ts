/**
 * Check-in as a door uses it: check an attendee in (by contact id, or by the token of their badge's QR code), undo a
 * check-in, check out and back in, and issue or revoke check-in tokens. Each write is one transaction that locks the
 * event (`writeEvent`), then the attendee row. A real change appends an event activity row and a domain event; a
 * repeat changes nothing and says so. A check-in takes a seat even past capacity (what happened at the door, as
 * registration has it); an undo that frees a seat settles the waitlist. Check-in, undo, check-out and by-token need
 * the event permission `attendees:checkin`, tokens `attendees:write`. Which moves check-in and undo take is the
 * transition table's (attendees.transitions.ts), which a check-in by status (PATCH, bulk status, add) asks too:
 * the two cannot differ. Rules and decisions: docs/check-in.md.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { checkIfMatchTag, ifMatchOf } from '../../platform/http/conditional.ts'
import { ApiError, error404NotFound, fieldError } from '../../platform/http/errors.ts'
import { idempotentWrite } from '../../platform/http/idempotency.ts'
import { createdRoute, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { emit } from '../../platform/outbox.ts'
import { EventParams, type EventRow, insertActivity, lockEventForWrite, rootEventId } from '../events/index.ts'
import { requirePolicy } from '../policy/index.ts'
import { ATTENDEE_COLUMNS, attendeeEtag } from './attendees.repository.ts'
import { attendeeEvent } from './attendees.routes.ts'
import * as repo from './attendees.checkin.repository.ts'
import { CheckInBody, CheckInByTokenBody, CheckInResult, CheckInToken, QR_PREFIX } from './attendees.checkin.schemas.ts'
import { settleWaitlist } from './attendees.registration.ts'
import { AttendeeParams } from './attendees.schemas.ts'
import type { CheckInMethod } from './attendees.table.ts'
import {
  eventState, NOT_CHECKED_IN, refusalProblem, restoredStatus, transition, UNDO_CHECK_IN
} from './attendees.transitions.ts'

const operation = operationsTagged('Event attendees')

type Topic = 'attendee.checked_in' | 'attendee.check_in_undone' | 'attendee.checked_out'

/** One row of the event's activity, by the caller; the activity kind is the domain event's topic. */
async function recordActivity (
  trx: Tx,
  auth: AuthContext,
  event: EventRow,
  kind: Topic,
  payload: Record<string, unknown>
): Promise<void> {
  await insertActivity(trx, {
    tenantId: auth.tenantId, eventId: rootEventId(event), orgId: event.org_id, actorId: auth.userId, kind, payload
  })
}

/** The attendee as the API shows it (the locked row also holds the token's hash and the status to restore). */
type ShownAttendee = { [K in (typeof ATTENDEE_COLUMNS)[number]]: repo.LockedAttendee[K] }
const shown = (row: repo.LockedAttendee): ShownAttendee =>
  Object.fromEntries(ATTENDEE_COLUMNS.map(c => [c, row[c]])) as ShownAttendee

interface CheckInOutcome {
  already_checked_in: boolean
  attendee: ShownAttendee
}

/** Where a refusal points: the contact id of the path, or the token of the body (never echoed: it is a secret). */
interface Target { location: string, value?: string }

/**
 * Checks in a locked attendee of a locked event. Inside already: nothing changes (`already_checked_in`). Checked out:
 * back in (re-entry), the first check-in kept. 409 when the transition table refuses the move to `checked_in`: on a
 * cancelled event (naming `path.id`) and for an attendee who holds no seat (waitlisted) or awaits approval (pending),
 * naming the target.
 */
async function checkIn (
  trx: Tx,
  auth: AuthContext,
  event: EventRow,
  current: repo.LockedAttendee,
  method: CheckInMethod,
  target: Target
): Promise<CheckInOutcome> {
  const refused = transition(eventState(event), current.status, 'checked_in')
  if (refused !== undefined) {
    throw refusalProblem(refused, refused.on === 'event' ? { location: 'path.id', value: event.id } : target)
  }
  if (current.is_checked_in && current.checked_out_at === null) {
    return { already_checked_in: true, attendee: shown(current) }
  }
  const reEntry = current.is_checked_in
  const row = reEntry
    ? await repo.markReEntered(trx, auth.tenantId, current.id)
    : await repo.markCheckedIn(trx, auth.tenantId, current.id, { by: auth.userId, method, previous: current.status })
  const again = reEntry ? { re_entry: true } : {}
  await recordActivity(trx, auth, event, 'attendee.checked_in', {
    contact_id: row.contact_id, method, previous_status: current.status, ...again
  })
  await emit(trx, attendeeEvent(auth, event, 'attendee.checked_in', row.contact_id, row.status, {
    previous_status: current.status, checked_in_at: row.checked_in_at, method, checked_in_by: auth.userId, ...again
  }))
  return { already_checked_in: false, attendee: row }
}

/** The attendee of the path, locked: 404 when the contact does not attend the event. */
async function lockAttendee (trx: Tx, auth: AuthContext, event: EventRow, contactId: string) {
  const current = await repo.lockAttendee(trx, auth.tenantId, rootEventId(event), contactId)
  if (current === undefined) throw error404NotFound('attendee not found')
  return current
}

const notCheckedIn = (contactId: string) =>
  refusalProblem(NOT_CHECKED_IN, { location: 'path.contact_id', value: contactId })

/** 404 naming the token: unknown, of another event or of another tenant alike, never saying which. */
const unknownToken = () =>
  new ApiError(404, 'no attendee of this event holds this token', [fieldError('body.token', 'unknown token')])

/**
 * The token in what was scanned: the token itself, or a QR payload `collab-checkin:v1:<event id>:<token>`; undefined
 * when the payload is malformed or names another event than `eventId`.
 */
function scannedToken (scanned: string, eventId: number): string | undefined {
  const text = scanned.trim()
  if (!text.startsWith(QR_PREFIX)) return text
  const m = /^(\d+):(.+)$/.exec(text.slice(QR_PREFIX.length))
  return m !== null && Number(m[1]) === eventId ? m[2] : undefined
}

/** `Prefer: return=representation` (RFC 7240), among any other preferences. */
function prefersRepresentation (request: FastifyRequest): boolean {
  const h = request.headers.prefer
  const text = Array.isArray(h) ? h.join(',') : h ?? ''
  return text.split(',').some(p => p.split(';')[0]?.trim().toLowerCase() === 'return=representation')
}

const checkInResult = (o: CheckInOutcome) => (o.already_checked_in ? 'already-checked-in' : 'checked-in')

export async function checkInRoutes (app: App, { db }: AppContext): Promise<void> {
  app.post('/api/v1/events/:id/attendees/:contact_id/check-in', {
    ...operation('check-in-event-attendee',
      'Check an attendee in (a repeat changes nothing; Prefer: return=representation answers 200 CheckInResult)', {
        description: 'Marks an attendee as arrived; a repeat changes nothing. `Prefer: return=representation` ' +
          'answers the outcome.',
        params: AttendeeParams,
        body: CheckInBody,
        response: { 200: CheckInResult, 204: NoContent }
      }, requirePolicy('attendee', 'checkin'), { optionalBody: true })
  }, async (request, reply: FastifyReply) => {
    const { auth, params: { id, contact_id: contactId } } = request
    const ifMatch = ifMatchOf(request)
    const outcome = await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, id, 'attendees:checkin')
      const current = await lockAttendee(trx, auth, event, contactId)
      checkIfMatchTag(ifMatch, attendeeEtag(current))
      return await checkIn(trx, auth, event, current, request.body.method ?? 'manual', {
        location: 'path.contact_id', value: contactId
      })
    })
    void reply.header('check-in-result', checkInResult(outcome))
    if (!prefersRepresentation(request)) return await reply.code(204).send(null)
    void reply.header('preference-applied', 'return=representation')
    return await reply.code(200).send(outcome)
  })

  app.post('/api/v1/events/:id/check-in/token', operation('check-in-event-attendee-by-token',
    'Check in the attendee of this event holding a check-in token (the token or the QR payload)', {
      description: 'Checks in the attendee holding a check-in token, given as the token or the scanned QR payload. ' +
        'Use it at the door with a scanner.',
      params: EventParams,
      body: CheckInByTokenBody,
      response: { 200: CheckInResult }
    }, requirePolicy('attendee', 'checkin'), { config: { idempotency: 'transaction' } }), async (request, reply) => {
    const { auth, body } = request
    const outcome = await idempotentWrite(db, request, async trx => {
      const event = await lockEventForWrite(trx, auth, request.params.id, 'attendees:checkin')
      const token = scannedToken(body.token, rootEventId(event))
      const current = token === undefined
        ? undefined
        : await repo.lockByTokenHash(trx, auth.tenantId, rootEventId(event), repo.hashCheckInToken(token))
      if (current === undefined) throw unknownToken()
      if (current.check_in_token_revoked_at !== null) {
        const errors = [fieldError('body.token', 'revoked token')]
        throw new ApiError(410, 'this check-in token was revoked', errors, {}, 'checkin_token_revoked')
      }
      return await checkIn(trx, auth, event, current, body.method ?? 'scan', { location: 'body.token' })
    })
    void reply.header('check-in-result', checkInResult(outcome))
    return outcome
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/attendees/:contact_id/check-in', operation(
    'undo-event-attendee-check-in',
    'Undo a check-in: the attendee returns to the status they had (409 when not checked in)', {
      description: 'Takes back a check-in made by mistake: the attendee returns to the status they had. Answers 409 ' +
        'when they are not checked in.',
      params: AttendeeParams
    }, requirePolicy('attendee', 'checkin')), async (trx, { auth, params: { id, contact_id: contactId } }) => {
    const event = await lockEventForWrite(trx, auth, id, 'attendees:checkin')
    const current = await lockAttendee(trx, auth, event, contactId)
    // inside is what counts (`is_checked_in`): the table takes an undo of a checked-in attendee only
    const refused = transition(eventState(event), current.is_checked_in ? 'checked_in' : current.status, UNDO_CHECK_IN)
    if (refused !== undefined) throw refusalProblem(refused, { location: 'path.contact_id', value: contactId })
    const restored = restoredStatus(current.status_before_check_in)
    const row = await repo.undoCheckIn(trx, auth.tenantId, current.id, restored)
    await recordActivity(trx, auth, event, 'attendee.check_in_undone', {
      contact_id: contactId, restored_status: restored, checked_in_at: current.checked_in_at
    })
    await emit(trx, attendeeEvent(auth, event, 'attendee.check_in_undone', contactId, row.status, {
      previous_status: current.status, checked_in_at: current.checked_in_at
    }))
    // back to a status without a seat: the seat goes to the waitlist
    if (restored !== 'confirmed') await settleWaitlist(trx, event)
  })

  app.post('/api/v1/events/:id/attendees/:contact_id/check-out', operation('check-out-event-attendee',
    'Check an attendee out (409 when not checked in; a repeat changes nothing)', {
      description: 'Records that a checked-in attendee left; a repeat changes nothing. Answers 409 when they are not ' +
        'checked in.',
      params: AttendeeParams,
      response: { 204: NoContent }
    }, requirePolicy('attendee', 'checkin'), { config: { idempotency: 'transaction' } }), async (request, reply) => {
    const { auth, params: { id, contact_id: contactId } } = request
    const already = await idempotentWrite(db, request, async trx => {
      const event = await lockEventForWrite(trx, auth, id, 'attendees:checkin')
      const current = await lockAttendee(trx, auth, event, contactId)
      if (!current.is_checked_in) throw notCheckedIn(contactId)
      if (current.checked_out_at !== null) return true
      const row = await repo.markCheckedOut(trx, auth.tenantId, current.id, auth.userId)
      await recordActivity(trx, auth, event, 'attendee.checked_out', {
        contact_id: contactId, checked_in_at: row.checked_in_at
      })
      await emit(trx, attendeeEvent(auth, event, 'attendee.checked_out', contactId, row.status, {
        checked_in_at: row.checked_in_at, checked_out_at: row.checked_out_at, checked_out_by: auth.userId
      }))
      return false
    })
    void reply.header('check-out-result', already ? 'already-checked-out' : 'checked-out')
    return await reply.code(204).send(null)
  })

  createdRoute(app, db, 'post', '/api/v1/events/:id/attendees/:contact_id/check-in-token', operation(
    'issue-event-attendee-check-in-token',
    'Issue a check-in token for an attendee (replaces any earlier one; shown once)', {
      description: 'Makes a check-in token for an attendee, replacing any earlier one; the token is shown only in ' +
        'this answer. Give it to the attendee as a QR code.',
      params: AttendeeParams,
      response: { 201: CheckInToken }
    }, requirePolicy('attendee', 'write'), {
      config: { idempotency: 'transaction' }
    }), async (trx, { auth, params }) => {
    const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write')
    const current = await lockAttendee(trx, auth, event, params.contact_id)
    const { token, hash } = repo.newCheckInToken()
    const issuedAt = await repo.issueToken(trx, auth.tenantId, current.id, hash)
    return { token, qr_payload: `${QR_PREFIX}${rootEventId(event)}:${token}`, issued_at: issuedAt }
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/attendees/:contact_id/check-in-token', operation(
    'revoke-event-attendee-check-in-token', 'Revoke the check-in token of an attendee (404 when none was issued)', {
      description: 'Revokes the attendee\'s check-in token so that it no longer checks them in. Answers 404 when ' +
        'none was issued.',
      params: AttendeeParams
    }, requirePolicy('attendee', 'write')), async (trx, { auth, params }) => {
    const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write')
    const current = await lockAttendee(trx, auth, event, params.contact_id)
    if (current.check_in_token_hash === null) throw error404NotFound('no check-in token was issued to this attendee')
    if (current.check_in_token_revoked_at === null) await repo.revokeToken(trx, auth.tenantId, current.id)
  })
}

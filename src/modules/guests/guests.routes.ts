/**
 * A guest's own link (docs/guests.md, "The manage link"), without an account: what the link shows (the guest's
 * registration and the event, nothing else), the guest's answer (confirm, maybe, decline), cancelling their place
 * (the seat goes to the next on the waitlist at once), the calendar file of their event, update mails on or off, and
 * a new link by mail (every old one stops). The token travels in the query of a GET (kept out of the logs: request
 * logs redact `token`) and in the body of a POST, never in a path.
 *
 * Every change goes through the attendee state machine as a manager's would (attendees/attendees.guest.ts); the
 * link's holder acts on their own attendee only.
 */
import type { FastifyReply, FastifySchema } from 'fastify'
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { ApiError } from '../../platform/http/errors.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { formatWhen, type Locale } from '../../platform/i18n/i18n.ts'
import {
  answerAsGuest, answersFor, changeAnswersAsGuest, endOf, eventState, formOf, GUEST_ANSWERS, guestAttendee,
  guestCalendarText, guestLocale, guestSettings, mailGuests, MANAGE_AFTER_EVENT_MS, type Question, revokeGuestTokens,
  setUpdates, tenantLocale, touchGuestToken, type GuestAttendee
} from '../attendees/index.ts'
import { lockById, type EventRow } from '../events/index.ts'
import {
  deadLink, guestProblem, requestLocale, resolveLink, takeOrRefuse, type GuestLimits
} from './guests.access.ts'
import {
  GuestAnswerBody, GuestAnswersBody, GuestOutcome, GuestRegistration, GuestTokenBody, GuestTokenQuery, GuestUpdatesBody
} from './guests.schemas.ts'

/** The options of a route a guest's link opens: no token read (the link is the credential), tag Guests. */
function linkOperation<S extends Omit<FastifySchema, 'tags' | 'summary' | 'operationId'> & { description: string }> (
  operationId: string,
  summary: string,
  schema: S
) {
  return {
    schema: { operationId, summary, tags: ['Guests'], ...schema },
    config: { auth: 'none' as const, auditActor: 'guest' as const }
  }
}
/** Nothing a guest's link shows is kept by a cache or leaks the link through a Referer. */
const PRIVATE = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }

/** The statuses a guest gives up by cancelling (a check-in already happened; a decline is given up already). */
const CANCELLABLE = new Set(['invited', 'confirmed', 'tentative', 'pending', 'waitlisted'])

interface Opened {
  attendee: GuestAttendee
  event: EventRow
  locale: Locale
  /** the registration questions in force, and whether answers may still change */
  questions: Question[]
  formId: number | null
  answersOpen: boolean
}

/**
 * The attendee and the locked event of a live manage link, in the link's tenant; a link whose event is gone or ended
 * more than a week ago is dead like an unknown one.
 */
async function open (trx: Tx, link: { tenantId: string, attendeeId: number, tokenId: number }, fallback: Locale,
  location: string): Promise<Opened> {
  const attendee = await guestAttendee(trx, link.tenantId, link.attendeeId)
  if (attendee === undefined || attendee.event_id === null) throw deadLink(fallback, location)
  const event = await lockById(trx, link.tenantId, attendee.event_id)
  const locale = guestLocale(attendee, await tenantLocale(trx, link.tenantId))
  const end = endOf(event)
  if (event.is_deleted || (end !== null && end.getTime() + MANAGE_AFTER_EVENT_MS < Date.now())) {
    throw deadLink(locale, location)
  }
  await touchGuestToken(trx, link.tenantId, link.tokenId)
  const form = await formOf(trx, event)
  const settings = await guestSettings(trx, link.tenantId, event.id)
  const closes = settings?.registration_closes_at ?? event.start_dt
  const state = eventState(event)
  const answersOpen = !state.cancelled && !state.ended && (closes === null || closes > new Date())
  return { attendee, event, locale, questions: form?.questions ?? [], formId: form?.id ?? null, answersOpen }
}

/** The guest's registration as their link shows it. */
function view (o: Opened): GuestRegistration {
  const { attendee: a, event: e, locale } = o
  const state = eventState(e)
  const live = !state.cancelled && !state.ended
  const name = [a.first_name, a.last_name].filter(p => p !== null && p.trim() !== '').join(' ')
  return {
    event: {
      id: e.id,
      title: e.title,
      description: e.description,
      start_dt: e.start_dt,
      end_dt: e.end_dt,
      timezone: e.timezone,
      address: e.address,
      cancelled: state.cancelled,
      when: formatWhen(locale, e.start_dt, e.end_dt, e.timezone)
    },
    guest: { name: name === '' ? null : name, email: a.email },
    status: a.status,
    waitlist_position: a.waitlist_position,
    responded_at: a.guest_responded_at,
    updates: a.updates_unsubscribed_at === null,
    locale,
    answers: live && a.status !== 'awaiting_confirmation' && a.status !== 'checked_in' ? [...GUEST_ANSWERS] : [],
    can_cancel: live && CANCELLABLE.has(a.status),
    questions: o.questions,
    given: a.answers,
    can_change_answers: o.answersOpen && o.questions.length > 0 && a.status !== 'declined'
  }
}
type GuestRegistration = import('@sinclair/typebox').Static<typeof GuestRegistration>

/** The guest's registration as it is after a change made through the link. */
async function viewNow (trx: Tx, o: Opened): Promise<GuestRegistration> {
  return view({ ...o, attendee: await guestAttendee(trx, o.event.tenant_id, o.attendee.id) ?? o.attendee })
}

/** A guest's answer is refused, in their language, when the event no longer takes one. */
function checkAnswerable (o: Opened, answer: string): void {
  const state = eventState(o.event)
  if (state.ended) throw guestProblem(409, o.locale, 'error.event_over', 'body.status')
  if (state.cancelled && answer !== 'declined') {
    throw guestProblem(409, o.locale, 'error.event_cancelled', 'body.status')
  }
  if (o.attendee.status === 'awaiting_confirmation' || o.attendee.status === 'checked_in') {
    throw guestProblem(409, o.locale, 'error.link_invalid', 'body.token')
  }
}

/** A refusal of the state machine (a full event without a waitlist), in the guest's language. */
function inGuestLanguage (err: unknown, locale: Locale): unknown {
  if (err instanceof ApiError && err.status === 409 && /full/.test(err.detail)) {
    return guestProblem(409, locale, 'error.event_full', 'body.status')
  }
  return err
}

export function guestLinkRoutes (app: App, { db, config }: AppContext, limits: GuestLimits): void {
  const fallback = config.defaultLocale

  /** The work of a request with a manage link, in the link's tenant, after the address's limit. */
  async function withLink<T> (request: { ip: string, headers: Record<string, unknown> }, token: string,
    location: string, work: (trx: Tx, o: Opened) => Promise<T>): Promise<T> {
    const locale = requestLocale(request as never, fallback)
    const link = await resolveLink(db, token, 'manage', locale, location)
    return await withTenant(db, { tenantId: link.tenantId }, async trx => await work(trx, await open(trx, link,
      locale, location)))
  }

  /**
   * A change through the link in the body: an answer no cache keeps, the address's limit taken first, then the work in
   * the link's tenant.
   */
  async function linkedWrite<T> (
    request: { ip: string, headers: Record<string, unknown>, body: { token: string } },
    reply: FastifyReply,
    work: (trx: Tx, o: Opened) => Promise<T>
  ): Promise<T> {
    void reply.headers(PRIVATE)
    await takeOrRefuse(limits.address, `ip:${request.ip}`, requestLocale(request as never, fallback))
    return await withLink(request, request.body.token, 'body.token', work)
  }

  app.get('/api/v1/guest/registration', linkOperation(
    'get-guest-registration',
    "A guest's registration and its event, through the guest's own link (no account)", {
      description: 'The guest\'s registration and its event, read through the guest\'s own link (no account).',
      querystring: GuestTokenQuery,
      response: { 200: GuestRegistration }
    }), async (request, reply) => {
    void reply.headers(PRIVATE)
    return await withLink(request, request.query.token, 'query.token', async (_trx, o) => view(o))
  })

  app.post('/api/v1/guest/registration/answer', linkOperation(
    'answer-guest-registration',
    'The guest answers: confirmed, tentative or declined (capacity, waitlist and approval apply)', {
      description: 'The guest answers the invitation: confirmed, tentative or declined. Capacity, waitlist and ' +
        'approval apply.',
      body: GuestAnswerBody,
      response: { 200: GuestOutcome }
    }), async (request, reply) => {
    const { status } = request.body
    return await linkedWrite(request, reply, async (trx, o) => {
      checkAnswerable(o, status)
      const outcome = await answerAsGuest(trx, o.event, o.attendee, status).catch((err: unknown) => {
        throw inGuestLanguage(err, o.locale)
      })
      return { event_id: o.event.id, ...outcome }
    })
  })

  app.post('/api/v1/guest/registration/cancel', linkOperation(
    'cancel-guest-registration',
    'The guest gives up their place (declined): the seat goes to the next on the waitlist at once', {
      description: 'The guest gives up their place; it goes to the next on the waitlist at once.',
      body: GuestTokenBody,
      response: { 200: GuestOutcome }
    }), async (request, reply) => {
    return await linkedWrite(request, reply, async (trx, o) => {
      if (eventState(o.event).ended) throw guestProblem(409, o.locale, 'error.event_over', 'body.token')
      if (!CANCELLABLE.has(o.attendee.status)) {
        return { event_id: o.event.id, status: o.attendee.status, waitlist_position: null, changed: false }
      }
      const outcome = await answerAsGuest(trx, o.event, o.attendee, 'declined', { cancel: true })
      return { event_id: o.event.id, ...outcome }
    })
  })

  app.put('/api/v1/guest/registration/answers', linkOperation(
    'set-guest-answers',
    'The guest changes their answers to the registration questions (until registrations close)', {
      description: 'The guest changes their answers to the registration questions, until registrations close.',
      body: GuestAnswersBody,
      response: { 200: GuestRegistration }
    }), async (request, reply) => {
    return await linkedWrite(request, reply, async (trx, o) => {
      if (!o.answersOpen || o.attendee.status === 'declined') {
        throw guestProblem(409, o.locale, 'error.registration_closed', 'body.answers')
      }
      const answers = await answersFor(trx, o.event, request.body.answers, o.locale)
      if (answers === undefined) throw guestProblem(409, o.locale, 'error.unknown_question', 'body.answers')
      await changeAnswersAsGuest(trx, o.event, o.attendee, answers)
      return await viewNow(trx, o)
    })
  })

  app.put('/api/v1/guest/registration/updates', linkOperation(
    'set-guest-updates',
    'The guest turns mails about changes of the event off or on again', {
      description: 'The guest turns mails about changes of the event off, or on again.',
      body: GuestUpdatesBody,
      response: { 200: GuestRegistration }
    }), async (request, reply) => {
    return await linkedWrite(request, reply, async (trx, o) => {
      await setUpdates(trx, o.event.tenant_id, o.attendee.id, request.body.subscribed)
      return await viewNow(trx, o)
    })
  })

  app.post('/api/v1/guest/registration/new-link', linkOperation(
    'renew-guest-link',
    "Every link of the guest stops; a new one is mailed to the guest's address", {
      description: 'Stops every link of the guest and mails a new one to their address. Use it when a link was ' +
        'forwarded.',
      body: GuestTokenBody,
      response: { 204: NoContent }
    }), async (request, reply) => {
    await linkedWrite(request, reply, async (trx, o) => {
      await revokeGuestTokens(trx, o.event.tenant_id, [o.attendee.id], 'manage')
      await mailGuests(trx, o.event, [o.attendee.id], 'new_link')
    })
    return await reply.code(204).send(null)
  })

  app.get('/api/v1/guest/registration/event.ics', linkOperation(
    'get-guest-calendar',
    "The guest's event as an iCalendar file (the same entry the mails add and update)", {
      description: 'The guest\'s event as an iCalendar file, the same entry the mails add and update.',
      querystring: GuestTokenQuery,
      produces: ['text/calendar'],
      response: {
        200: {
          type: 'string',
          description: 'The guest\'s calendar entry (RFC 5545, `text/calendar; charset=utf-8`): METHOD REQUEST, or ' +
          'CANCEL when the event is cancelled or the guest declined',
          examples: ['BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n' +
          'UID:event-42-guest-7@collab.example.org\r\nSEQUENCE:2\r\n…\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n']
        }
      }
    }), async (request, reply) => {
    const ics = await withLink(request, request.query.token, 'query.token', async (trx, o) => {
      const text = await guestCalendarText(trx, o.event, o.attendee.id)
      if (text === undefined) throw guestProblem(404, o.locale, 'when.unscheduled', 'query.token')
      return text
    })
    return await reply.headers(PRIVATE)
      .header('content-type', 'text/calendar; charset=utf-8')
      .header('content-disposition', 'attachment; filename="event.ics"')
      .send(ics)
  })
}

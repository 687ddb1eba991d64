/**
 * Public registration (docs/guests.md, "Public registration"): anyone registers for a published public event whose
 * registration is open, with a name and an address, and (double opt-in, on by default) counts once they follow the
 * link mailed to that address. The answer is the same whether the address is new, already registered, or past its
 * limit: only the mail tells, so nobody learns who registered. A filled honeypot field (`website`) is answered the
 * same and stores nothing.
 *
 * Bounded before any work: per client address and per event (GUEST_LIMIT_PER_ADDRESS, GUEST_LIMIT_PER_EVENT), bodies
 * by their schema. Refusals (closed, not open yet, full, cancelled, over, a missing name, an address that is none)
 * are problems in the guest's language naming the field.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withSystem, withTenant } from '../../platform/db/tenant.ts'
import { ApiError } from '../../platform/http/errors.ts'
import { message } from '../../platform/i18n/i18n.ts'
import {
  answersFor, confirmRegistration, endOf, eventState, guestAttendee, guestLocale, registerGuest, tenantLocale
} from '../attendees/index.ts'
import { lockById } from '../events/index.ts'
import { publicEventTenant } from './guests.repository.ts'
import {
  deadLink, guestProblem, requestLocale, resolveLink, takeOrRefuse, type GuestLimits
} from './guests.access.ts'
import { checkFields, checkOpen, splitName } from './guests.registration.ts'
import {
  GuestOutcome, GuestTokenBody, PublicRegistrationBody, PublicRegistrationParams, RegistrationAccepted
} from './guests.schemas.ts'

const TAGS = ['Guests']

export function guestRegistrationRoutes (app: App, ctx: AppContext, limits: GuestLimits): void {
  const { db, config } = ctx
  const fallback = config.defaultLocale

  app.post('/api/v1/public/events/:id/registrations', {
    schema: {
      description: 'Registers someone without an account for a public event. The mail sent to the address says what ' +
        'happens next (confirm, wait or attend).',
      operationId: 'register-for-public-event',
      summary: 'Register for a public event (no account): the mail sent to the address says what happens next',
      tags: TAGS,
      params: PublicRegistrationParams,
      body: PublicRegistrationBody,
      response: { 202: RegistrationAccepted }
    },
    config: { auth: 'none', auditActor: 'guest' }
  }, async (request, reply) => {
    const b = request.body
    const asked = b.locale ?? requestLocale(request, fallback)
    await takeOrRefuse(limits.address, `ip:${request.ip}`, asked)
    await takeOrRefuse(limits.event, `event:${request.params.id}`, asked)
    const tenantId = await withSystem(db, trx => publicEventTenant(trx, request.params.id))
    if (tenantId === undefined) throw guestProblem(404, asked, 'error.event_not_found', 'path.id')
    const locale = b.locale ?? requestLocale(request, await withTenant(db, { tenantId }, trx => tenantLocale(trx,
      tenantId)))
    const fields = checkFields(b, locale)
    // the honeypot: answered as any registration, nothing stored, nothing mailed
    if (b.website !== undefined && b.website.trim() !== '') {
      return await reply.code(202).send({ status: 'accepted', message: message(locale, 'registration.accepted') })
    }
    await withTenant(db, { tenantId }, async trx => {
      const event = await lockById(trx, tenantId, request.params.id)
      const settings = await checkOpen(trx, event, locale)
      const answers = await answersFor(trx, event, b.answers, locale)
      await registerGuest(trx, event, { ...splitName(fields.name), email: fields.email, locale }, {
        doubleOptIn: settings.double_opt_in,
        limitPerEmail: settings.registration_limit_per_email
      }, answers)
    })
    return await reply.code(202).header('cache-control', 'no-store')
      .send({ status: 'accepted', message: message(locale, 'registration.accepted') })
  })

  app.post('/api/v1/public/registrations/confirm', {
    schema: {
      description: 'Confirms a public registration with the token of the mailed link (double opt-in).',
      operationId: 'confirm-public-registration',
      summary: 'Confirm a public registration with the link mailed to the guest (double opt-in)',
      tags: TAGS,
      body: GuestTokenBody,
      response: { 200: GuestOutcome }
    },
    config: { auth: 'none', auditActor: 'guest' }
  }, async (request, reply) => {
    const asked = requestLocale(request, fallback)
    await takeOrRefuse(limits.address, `ip:${request.ip}`, asked)
    const link = await resolveLink(db, request.body.token, 'confirm', asked)
    const outcome = await withTenant(db, { tenantId: link.tenantId }, async trx => {
      const attendee = await guestAttendee(trx, link.tenantId, link.attendeeId)
      if (attendee === undefined || attendee.event_id === null) throw deadLink(asked)
      const event = await lockById(trx, link.tenantId, attendee.event_id)
      const locale = guestLocale(attendee, await tenantLocale(trx, link.tenantId))
      if (event.is_deleted) throw deadLink(locale)
      const state = eventState(event)
      if (state.cancelled) throw guestProblem(409, locale, 'error.event_cancelled', 'body.token')
      if (state.ended || (endOf(event) ?? new Date(8.64e15)) <= new Date()) {
        throw guestProblem(409, locale, 'error.event_over', 'body.token')
      }
      const done = await confirmRegistration(trx, event, attendee).catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 409 && /full/.test(err.detail)) {
          throw guestProblem(409, locale, 'error.event_full', 'body.token')
        }
        throw err
      })
      return { event_id: event.id, ...done }
    })
    return await reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').send(outcome)
  })
}

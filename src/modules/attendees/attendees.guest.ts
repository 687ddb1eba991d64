/**
 * What guests do themselves (docs/guests.md), on the one attendee state machine: a public registration (with double
 * opt-in, or placed at once), its confirmation from the mailed link, and a guest's own answer or cancellation through
 * their link. Every status a guest asks for goes through `changeStatuses` (the transition table, then capacity,
 * waitlist and approval), exactly as a manager's change; the seat a guest gives up goes to the next on the waitlist
 * in the same transaction (`settleWaitlist`, which mails them).
 *
 * Each act is recorded as the organiser sees every other: the attendee's `guest_responded_at`, a domain event
 * (`attendee.added`, `attendee.status_changed`) with no actor and `by: "guest"` for automation and webhooks, and a
 * line of the event's activity feed. The guest gets a mail about their place (attendees.guest-mail.ts).
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { error409Conflict, fieldError } from '../../platform/http/errors.ts'
import type { Locale } from '../../platform/i18n/i18n.ts'
import { emit, type DomainEvent } from '../../platform/outbox.ts'
import { contactForRegistration } from '../contacts/index.ts'
import { type EventRow, insertActivity, rootEventId } from '../events/index.ts'
import type { StoredAnswer } from './attendees.forms.ts'
import { writeAnswers } from './attendees.forms.repository.ts'
import { mailGuests, type GuestMailKind } from './attendees.guest-mail.ts'
import { revokeGuestTokens } from './attendees.guest-tokens.repository.ts'
import * as guestRepo from './attendees.guest.repository.ts'
import {
  changeStatuses, isRefusal, notifyManagersPending, registrationOf, seatCounts, SeatPlan, type Changed
} from './attendees.registration.ts'
import * as repo from './attendees.repository.ts'
import type { AttendeeStatus } from './attendees.table.ts'
import { eventState, refusalProblem, transition } from './attendees.transitions.ts'

/** The answers a guest may give. */
export const GUEST_ANSWERS = ['confirmed', 'tentative', 'declined'] as const
export type GuestAnswer = typeof GUEST_ANSWERS[number]

/** What a guest's act left: the attendee's status and place in line, and whether anything changed. */
export interface GuestOutcome { status: AttendeeStatus, waitlist_position: number | null, changed: boolean }

/** A domain event of a guest's act: no actor, `by: "guest"`. */
function guestEvent (event: EventRow, topic: 'attendee.added' | 'attendee.status_changed' | 'attendee.answers_changed',
  payload: Record<string, unknown>): DomainEvent {
  const eventId = rootEventId(event)
  return {
    tenantId: event.tenant_id,
    topic,
    aggregateType: 'event',
    aggregateId: eventId,
    actorId: null,
    payload: { event_id: eventId, template: event.template, by: 'guest', ...payload }
  }
}

const positionOf = (row: { waitlist_position: number | null }) =>
  row.waitlist_position === null ? {} : { waitlist_position: row.waitlist_position }

/** The mail that tells a guest where their own act left them. */
function mailOf (status: AttendeeStatus, cancelled: boolean): GuestMailKind | undefined {
  switch (status) {
    case 'confirmed': return 'confirmed'
    case 'waitlisted': return 'waitlisted'
    case 'pending': return 'pending'
    case 'tentative': return 'tentative'
    case 'declined': return cancelled ? 'cancelled_by_guest' : 'declined'
    case 'awaiting_confirmation': case 'checked_in': case 'invited': case 'no_show': return undefined
  }
}

/** Records a status change a guest made: domain event, activity line, the guest's answer time, the mail. */
async function record (trx: Tx, event: EventRow, attendeeId: number, c: Changed, o: { cancelled: boolean }) {
  await guestRepo.markGuestResponded(trx, event.tenant_id, attendeeId)
  if (c.previous === c.row.status) return
  await emit(trx, guestEvent(event, 'attendee.status_changed', {
    contact_id: c.row.contact_id, status: c.row.status, previous_status: c.previous, ...positionOf(c.row)
  }))
  await insertActivity(trx, {
    tenantId: event.tenant_id,
    eventId: rootEventId(event),
    orgId: event.org_id,
    actorId: null,
    kind: 'attendee.guest_answered',
    payload: { contact_id: c.row.contact_id, status: c.row.status, previous_status: c.previous, by: 'guest' }
  })
  const kind = mailOf(c.row.status, o.cancelled)
  if (kind !== undefined) await mailGuests(trx, event, [attendeeId], kind)
}

/**
 * A guest's answer through their link (`cancel`: the guest gives up their place, a decline): the status placed as a
 * manager's change would place it, on the locked event. A refusal throws its problem; nothing is applied.
 */
export async function answerAsGuest (
  trx: Tx,
  event: EventRow,
  attendee: { id: number, contact_id: string },
  answer: GuestAnswer,
  o: { cancel?: boolean } = {}
): Promise<GuestOutcome> {
  const { changed } = await changeStatuses(trx, event, [{ contactId: attendee.contact_id, status: answer }], {
    at: () => 'body.status'
  })
  const [c] = changed
  if (c === undefined) throw new Error('a guest answer changed no attendee')
  await record(trx, event, attendee.id, c, { cancelled: o.cancel === true })
  return { status: c.row.status, waitlist_position: c.row.waitlist_position, changed: c.previous !== c.row.status }
}

/**
 * The double opt-in of a public registration, from its mailed link: an attendee `awaiting_confirmation` is placed
 * as a confirmation (seat, waitlist, approval); its confirmation links die. Following the link again changes
 * nothing.
 */
export async function confirmRegistration (
  trx: Tx,
  event: EventRow,
  attendee: { id: number, contact_id: string, status: AttendeeStatus, waitlist_position: number | null }
): Promise<GuestOutcome> {
  if (attendee.status !== 'awaiting_confirmation') {
    return { status: attendee.status, waitlist_position: attendee.waitlist_position, changed: false }
  }
  const { changed } = await changeStatuses(trx, event, [{ contactId: attendee.contact_id, status: 'confirmed' }], {
    at: () => 'body.token'
  })
  const [c] = changed
  if (c === undefined) throw new Error('a confirmation changed no attendee')
  await revokeGuestTokens(trx, event.tenant_id, [attendee.id], 'confirm')
  await record(trx, event, attendee.id, c, { cancelled: false })
  return { status: c.row.status, waitlist_position: c.row.waitlist_position, changed: true }
}

/** A public registration as the guest typed it. */
export interface RegistrationInput {
  firstName: string
  lastName: string | null
  email: string
  locale: Locale
}

/**
 * A public registration for the locked event (its settings checked by the caller): the contact matched or made, and
 * then, for a new attendee, `awaiting_confirmation` and the confirmation mail (double opt-in), or the attendee placed
 * at once and told where. For an address that is already an attendee, within the limit per address: the confirmation
 * mailed again while it is awaited, else a mail with the guest's link ("already registered"). Past the limit nothing
 * happens. The caller answers the same whatever happened: only the mail tells.
 */
export async function registerGuest (
  trx: Tx,
  event: EventRow,
  input: RegistrationInput,
  settings: { doubleOptIn: boolean, limitPerEmail: number },
  answers?: { formId: number, values: Record<string, StoredAnswer> }
): Promise<'registered' | 'mailed again' | 'limit reached'> {
  const eventId = rootEventId(event)
  const contact = await contactForRegistration(trx, {
    tenantId: event.tenant_id,
    creatorId: event.creator_id,
    orgId: event.org_id,
    firstName: input.firstName,
    lastName: input.lastName,
    email: input.email,
    locale: input.locale
  })
  const existing = await guestRepo.registrationAttendee(trx, event.tenant_id, eventId, contact.id)
  if (existing !== undefined) {
    if (existing.registrations >= settings.limitPerEmail) return 'limit reached'
    await guestRepo.countRegistration(trx, event.tenant_id, existing.id)
    await mailGuests(trx, event, [existing.id], existing.status === 'awaiting_confirmation' ? 'optin' : 'already')
    return 'mailed again'
  }
  let placed: { status: AttendeeStatus, position: number | null } = { status: 'awaiting_confirmation', position: null }
  if (settings.doubleOptIn) {
    const refused = transition(eventState(event), undefined, 'confirmed')
    if (refused !== undefined) throw refusalProblem(refused, { location: 'path.id', value: eventId })
  } else {
    const plan = new SeatPlan(await registrationOf(trx, event), await seatCounts(trx, event.tenant_id, eventId), event)
    const p = plan.place(undefined, 'confirmed', false)
    if (isRefusal(p)) throw refusalProblem(p, { location: 'path.id', value: eventId })
    placed = p
  }
  const [row] = await repo.insertAttendees(trx, {
    tenantId: event.tenant_id,
    eventId,
    orgId: event.org_id,
    attendees: [{ contactId: contact.id, ...placed }],
    registration: { locale: input.locale }
  })
  if (row === undefined) throw new Error('a registration added no attendee')
  if (answers !== undefined) await writeAnswers(trx, event.tenant_id, row.id, answers.values, answers.formId)
  await emit(trx, guestEvent(event, 'attendee.added', {
    contact_id: row.contact_id,
    status: row.status,
    source: 'registration',
    ...positionOf(row),
    ...(answers !== undefined ? { answers: answers.values } : {})
  }))
  await insertActivity(trx, {
    tenantId: event.tenant_id,
    eventId,
    orgId: event.org_id,
    actorId: null,
    kind: 'attendee.registered',
    payload: { contact_id: row.contact_id, status: row.status, by: 'guest' }
  })
  if (row.status === 'pending') await notifyManagersPending(trx, event, 1)
  await mailGuests(trx, event, [row.id], settings.doubleOptIn ? 'optin' : mailOf(row.status, false) ?? 'confirmed')
  return 'registered'
}

/**
 * A guest changes their answers through their link (until registrations close): stored with the form version they
 * answered, told as `attendee.answers_changed` (by the guest) and a line of the activity feed.
 */
export async function changeAnswersAsGuest (
  trx: Tx,
  event: EventRow,
  attendee: { id: number, contact_id: string, status: AttendeeStatus },
  answers: { formId: number, values: Record<string, StoredAnswer> }
): Promise<void> {
  await writeAnswers(trx, event.tenant_id, attendee.id, answers.values, answers.formId)
  await emit(trx, guestEvent(event, 'attendee.answers_changed', {
    contact_id: attendee.contact_id, status: attendee.status, answers: answers.values
  }))
  await insertActivity(trx, {
    tenantId: event.tenant_id,
    eventId: rootEventId(event),
    orgId: event.org_id,
    actorId: null,
    kind: 'attendee.answers_changed',
    payload: { contact_id: attendee.contact_id, by: 'guest' }
  })
}

/** Invited attendees one request or action mails at most (the rest: another one). */
export const INVITATIONS_MAX = 5000

/**
 * Mails the invitations of the locked event (docs/guests.md, "Invitations"): to the attendees among `contactIds`
 * (every attendee of the event when null) in status `invited`, each with the guest's own link; `invitation_sent_at`
 * set. 409 unless the event is published and not cancelled. How many were invited, and how many mailed (those with
 * an address).
 */
export async function sendInvitations (
  trx: Tx,
  event: EventRow,
  contactIds: readonly string[] | null
): Promise<{ invited: number, mailed: number }> {
  if (event.status !== 'published' || event.cancelled_at !== null) {
    throw error409Conflict('invitations go out for a published event that is not cancelled', [
      fieldError('path.id', event.cancelled_at !== null ? 'event cancelled' : `status ${event.status}`, event.id)
    ], 'event_state_conflict')
  }
  const invited = await guestRepo.invitedAttendees(trx, event.tenant_id, rootEventId(event), contactIds,
    INVITATIONS_MAX)
  const ids = invited.map(a => a.id)
  const mailed = await mailGuests(trx, event, ids, 'invitation')
  await guestRepo.markInvited(trx, event.tenant_id, ids)
  return { invited: ids.length, mailed }
}

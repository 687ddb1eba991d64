/**
 * Registration: the one place that decides an attendee's status when something asks for one (add, PATCH, bulk
 * status, approval, automation actions), and what happens to the waitlist after any change (removals, declines,
 * capacity changes). Which moves are taken at all is the transition table's (attendees.transitions.ts), asked
 * first for every request (`SeatPlan.place`, `markNoShows`). Every caller holds the event's row lock
 * (`lockEventForWrite`), so the seat count read here cannot change before the transaction commits: confirmations of
 * one event are serialized, on every database and on every instance. State model: docs/event-collaboration.md,
 * "Attendee states".
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { error400BadRequest, error409Conflict, fieldError, type ErrorDetail } from '../../platform/http/errors.ts'
import { queueNotification, recipientFor } from '../../platform/notifications/notifications.ts'
import { registrationsPending } from '../../platform/notifications/templates.ts'
import { emitMany, type DomainEvent } from '../../platform/outbox.ts'
import { type EventRow, type RegistrationCopy, rootEventId } from '../events/index.ts'
import { mailGuests, type GuestMailKind } from './attendees.guest-mail.ts'
import { attendeeIdsOf } from './attendees.guest.repository.ts'
import * as repo from './attendees.repository.ts'
import * as regRepo from './attendees.registration.repository.ts'
import type { AttendeeRow, AttendeeStatus } from './attendees.table.ts'
import {
  endOf, eventState, refusalError, refusalProblem, transition, type EventState, type Place, type Refusal
} from './attendees.transitions.ts'

export { endOf, type Refusal }

/** The registration settings in force for an event: its own, or its series' while it follows them. */
export interface Registration {
  capacity: number | null
  waitlist_enabled: boolean
  requires_approval: boolean
  /** true while an occurrence follows its series' settings; false for an event without a series */
  inherited: boolean
}

export async function registrationOf (
  trx: Tx,
  event: Pick<EventRow, 'tenant_id' | 'series_id' | 'registration_inherited' | 'capacity' | 'waitlist_enabled' |
  'requires_approval'>
): Promise<Registration> {
  if (event.series_id !== null && event.registration_inherited) {
    const s = await regRepo.seriesRegistration(trx, event.tenant_id, event.series_id)
    if (s !== undefined) return { ...s, inherited: true }
  }
  return {
    capacity: event.capacity,
    waitlist_enabled: event.waitlist_enabled,
    requires_approval: event.requires_approval,
    inherited: false
  }
}

/**
 * The registration settings in force for an event (its published row; its series' while it follows them), as a clone
 * copies them (`POST /events/{id}/clone`: `CloneParts.registration`, given to the events module by src/app.ts).
 */
export async function registrationToCopy (
  trx: Tx,
  event: Pick<EventRow, 'tenant_id' | 'id' | 'published_id'>
): Promise<RegistrationCopy> {
  const root = rootEventId(event)
  const stored = await regRepo.eventRegistration(trx, event.tenant_id, root)
  const guests = await regRepo.guestSettings(trx, event.tenant_id, root)
  if (stored === undefined || guests === undefined) throw new Error(`event ${root} vanished while read`)
  const { inherited: _inherited, ...reg } = await registrationOf(trx, { ...stored, tenant_id: event.tenant_id })
  return { ...reg, ...guests }
}

export type SeatCounts = regRepo.SeatCounts
export const seatCounts = regRepo.seatCounts

/** Seats still free (null: unlimited); never negative, even when capacity was lowered below the confirmed count. */
export const seatsLeft = (reg: Registration, counts: SeatCounts): number | null =>
  reg.capacity === null ? null : Math.max(0, reg.capacity - counts.confirmed)

/** The settings in force and the counts GET /events/{id} and the registration routes report (of the published row). */
export async function registrationFigures (trx: Tx, event: Pick<EventRow, 'tenant_id' | 'id' | 'published_id'>) {
  const root = rootEventId(event)
  const stored = await regRepo.eventRegistration(trx, event.tenant_id, root)
  if (stored === undefined) throw new Error(`event ${root} vanished while locked or read`)
  const reg = await registrationOf(trx, { ...stored, tenant_id: event.tenant_id })
  return figuresOf(reg, await seatCounts(trx, event.tenant_id, root))
}

/**
 * The figures of `registrationFigures` from the value of `figuresColumn` (attendees.registration.repository.ts), read
 * in GET /events/{id}'s own statement: the same settings in force (a series' while the event follows it) and counts.
 */
export function storedFigures (stored: regRepo.StoredFigures | null) {
  if (stored === null) throw new Error('the event vanished while read')
  const s = stored.series
  const reg: Registration = stored.series_id !== null && stored.registration_inherited && s !== null
    ? { ...s, inherited: true }
    : {
        capacity: stored.capacity,
        waitlist_enabled: stored.waitlist_enabled,
        requires_approval: stored.requires_approval,
        inherited: false
      }
  const c = stored.counts
  return figuresOf(reg, {
    confirmed: Number(c.confirmed),
    waitlisted: Number(c.waitlisted),
    pending: Number(c.pending),
    no_show: Number(c.no_show),
    last_position: 0
  })
}

/** What the events module reads of registration in GET /events/{id}'s one statement (its `EventFigures` need). */
export const eventFigures = {
  keptBy: regRepo.ATTENDEE_COUNTS_TRIGGER,
  column: regRepo.figuresColumn,
  read: (value: unknown) => storedFigures(value as regRepo.StoredFigures | null)
}

function figuresOf (reg: Registration, counts: SeatCounts) {
  return {
    capacity: reg.capacity,
    waitlist_enabled: reg.waitlist_enabled,
    requires_approval: reg.requires_approval,
    registration_inherited: reg.inherited,
    confirmed_count: counts.confirmed,
    waitlist_count: counts.waitlisted,
    pending_count: counts.pending,
    no_show_count: counts.no_show,
    seats_left: seatsLeft(reg, counts),
    over_capacity: reg.capacity === null ? 0 : Math.max(0, counts.confirmed - reg.capacity)
  }
}

/** What a planned change gives one attendee. */
export interface Placement { status: AttendeeStatus, position: number | null }

/**
 * Decides, request by request in order, the status each attendee gets: holds the seat count and the last waitlist
 * position of the locked event, as the earlier requests of the same batch changed them.
 */
export class SeatPlan {
  private confirmed: number
  private lastPosition: number
  /** attendees on the waitlist: while anyone waits, a seat that frees is theirs, not a newcomer's */
  private waiting: number
  private readonly state: EventState

  constructor (
    readonly reg: Registration,
    counts: SeatCounts,
    readonly event: EventRow,
    private readonly now: Date = new Date()
  ) {
    this.confirmed = counts.confirmed
    this.lastPosition = counts.last_position
    this.waiting = counts.waitlisted
    this.state = eventState(event, now)
  }

  /**
   * The status an attendee gets when `requested` is asked for: `current` is its status (undefined: not an attendee
   * yet), `approved` whether a manager approved it before (or approves it now). A move the transition table refuses
   * is refused before anything is counted.
   */
  place (
    current: AttendeeStatus | undefined,
    requested: AttendeeStatus,
    approved: boolean,
    currentPosition: number | null = null
  ): Placement | Refusal {
    const refused = transition(this.state, current, requested)
    if (refused !== undefined) return refused
    // the table takes these only as they are (a PATCH of the notes names the status the attendee has)
    if (requested === 'waitlisted' || requested === 'pending' || requested === 'awaiting_confirmation') {
      return { status: requested, position: currentPosition }
    }
    const seated = current === 'confirmed' || current === 'checked_in'
    if (requested === 'no_show') {
      // the table took it: from confirmed after the end, or no_show kept
      return current === 'no_show' ? { status: 'no_show', position: null } : this.leave(current, 'no_show')
    }
    if (requested === 'confirmed') {
      // a checked-in attendee set back to confirmed keeps the seat
      if (seated) return { status: 'confirmed', position: null }
      if (current === 'waitlisted') return { status: 'waitlisted', position: currentPosition }
      if (this.reg.requires_approval && !approved) return { status: 'pending', position: null }
      if (this.reg.capacity !== null && (this.confirmed >= this.reg.capacity || this.waiting > 0)) {
        if (!this.reg.waitlist_enabled) {
          const detail = `the event is full (capacity ${this.reg.capacity}) and has no waitlist`
          return { status: 409, detail, problem: 'event_full' }
        }
        this.lastPosition += 1
        this.waiting += 1
        return { status: 'waitlisted', position: this.lastPosition }
      }
      this.confirmed += 1
      return { status: 'confirmed', position: null }
    }
    if (requested === 'checked_in') {
      // a check-in by status is what happened at the door: it takes a seat even past capacity (never from the
      // waitlist or a pending registration: the table refuses those)
      if (!seated) this.confirmed += 1
      return { status: 'checked_in', position: null }
    }
    return this.leave(current, requested)
  }

  private leave (current: AttendeeStatus | undefined, to: AttendeeStatus): Placement {
    // the seat freed goes to the waitlist after the whole batch (`settleWaitlist`)
    if (current === 'confirmed' || current === 'checked_in') this.confirmed -= 1
    if (current === 'waitlisted') this.waiting -= 1
    return { status: to, position: null }
  }
}

export const isRefusal = (p: Placement | Refusal): p is Refusal => typeof p.status === 'number'

/** A refused request of a call: its index, why, the contact it names and the status it asks for. */
export interface Refused { index: number, refusal: Refusal, contactId: string, requested: string }

/**
 * Where the refusals of a call point: `at(i)` is the field of the i-th request's status, `who(i)` where it names its
 * attendee (default `at`); a refusal by the event's state names `path.id`.
 */
export interface RefusalPlaces { at: (i: number) => string, who?: ((i: number) => string) | undefined }

/**
 * Throws the refusals of a call of `of` requests as one problem; nothing is applied. A call of one request answers
 * its refusal as it is (for a check-in by status, the very problem check-in answers). A batch answers 409 when any
 * refusal is about the state of the event or of an attendee (full, cancelled, not ended, waitlisted…), else 400,
 * with one `errors` entry per refused request (first 100; a refusal by the event once).
 */
export function throwRefusals (
  refused: readonly Refused[],
  of: number,
  event: Pick<EventRow, 'id'>,
  o: RefusalPlaces
): void {
  const [first] = refused
  if (first === undefined) return
  const placeOf = (r: Refused): Place => {
    switch (r.refusal.on ?? 'request') {
      case 'event': return { location: 'path.id', value: event.id }
      case 'attendee': return { location: (o.who ?? o.at)(r.index), value: r.contactId }
      case 'request': return { location: o.at(r.index), value: r.requested }
    }
  }
  if (of === 1) throw refusalProblem(first.refusal, placeOf(first))
  const seen = new Set<string>()
  const errors: ErrorDetail[] = refused.map(r => refusalError(r.refusal, placeOf(r))).filter(e => {
    const key = JSON.stringify([e.location, e.message, e.value])
    return seen.has(key) ? false : Boolean(seen.add(key))
  }).slice(0, 100)
  const detail = refused.length === 1
    ? `${first.refusal.detail}; nothing was applied`
    : `${refused.length} request(s) refused (${first.refusal.detail}…); nothing was applied`
  // the code of the first refusal answered with the batch's status (each entry of `errors` says its own)
  const status = refused.some(r => r.refusal.status === 409) ? 409 : 400
  const problem = refused.find(r => r.refusal.status === status)?.refusal.problem
  if (status === 409) throw error409Conflict(detail, errors, problem)
  throw error400BadRequest(detail, errors, problem)
}

/** One attendee the waitlist settlement confirmed. */
export interface Promoted { contact_id: string, previous_position: number }

/**
 * After any change of an event's attendees or settings: closes the waitlist's gaps (positions 1..n, in their order)
 * and gives every free seat to the first waitlisted attendees, in order. Returns the attendees promoted.
 */
export async function settleWaitlist (trx: Tx, event: EventRow): Promise<Promoted[]> {
  const tenantId = event.tenant_id
  const eventId = rootEventId(event)
  const reg = await registrationOf(trx, event)
  const counts = await seatCounts(trx, tenantId, eventId)
  let promoted: Promoted[] = []
  const free = reg.capacity === null ? counts.waitlisted : Math.max(0, reg.capacity - counts.confirmed)
  // nobody is promoted into an event that is cancelled or over
  const state = eventState(event)
  const open = !state.cancelled && !state.ended
  if (free > 0 && counts.waitlisted > 0 && open) {
    const rows = await regRepo.promoteWaitlisted(trx, tenantId, eventId, free)
    promoted = rows.sort((x, y) => x.previous_position - y.previous_position)
  }
  if (counts.waitlisted > 0) await regRepo.renumberWaitlist(trx, tenantId, eventId)
  if (promoted.length > 0) {
    await emitMany(trx, promoted.map(p => ({
      tenantId,
      topic: 'attendee.promoted',
      aggregateType: 'event',
      aggregateId: eventId,
      actorId: null,
      payload: {
        event_id: eventId,
        contact_id: p.contact_id,
        status: 'confirmed',
        previous_status: 'waitlisted',
        previous_position: p.previous_position,
        template: event.template
      }
    } satisfies DomainEvent)))
    await notifyContacts(trx, event, promoted.map(p => p.contact_id), { kind: 'attendee.promoted' })
  }
  return promoted
}

/** The guest mail of each registration notice to an attendee (attendees.guest-mail.ts). */
/** What an attendee is told about their place or the event; the kind stays the mail's `payload.kind`. */
export type RegistrationNoticeKind =
  | 'attendee.promoted' | 'attendee.approved' | 'attendee.waitlisted' | 'attendee.declined' | 'event.cancelled'

const GUEST_MAIL_OF: Record<RegistrationNoticeKind, GuestMailKind> = {
  'attendee.promoted': 'promoted',
  'attendee.approved': 'confirmed',
  'attendee.waitlisted': 'waitlisted',
  'attendee.declined': 'rejected',
  'event.cancelled': 'event_cancelled'
}

/**
 * Tells attendees of the event (by contact) what happened to their place or to the event: one mail each, in the
 * guest's language, with a link of their own and the calendar invitation the notice carries (`mailGuests`); the
 * notice's kind stays the mail's `payload.kind`. Bounded statements whatever the number of contacts: the
 * cancellation of a large event tells every attendee.
 */
export async function notifyContacts (
  trx: Tx,
  event: EventRow,
  contactIds: readonly string[],
  notice: { kind: RegistrationNoticeKind, reason?: string | null }
): Promise<number> {
  if (contactIds.length === 0) return 0
  const ids = await attendeeIdsOf(trx, event.tenant_id, rootEventId(event), contactIds)
  return await mailGuests(trx, event, ids, GUEST_MAIL_OF[notice.kind], {
    reason: notice.reason,
    payloadKind: notice.kind
  })
}

/** Tells the event's creator and active managers that `count` registrations await their approval. */
export async function notifyManagersPending (trx: Tx, event: EventRow, count: number): Promise<void> {
  if (count === 0) return
  const eventId = rootEventId(event)
  const users = new Set([event.creator_id, ...await regRepo.activeManagerIds(trx, event.tenant_id, eventId)])
  const t = registrationsPending({ eventId, title: event.title, count })
  for (const user of users) {
    const to = await recipientFor(trx, event.tenant_id, 'email', user)
    await queueNotification(trx, { tenantId: event.tenant_id, channel: 'email', ...to, ...t })
  }
}

/** One status asked for, by contact. */
export interface StatusRequest { contactId: string, status: AttendeeStatus }

/** An attendee a change wrote: its row and the status it had before. */
export interface Changed { row: AttendeeRow, previous: AttendeeStatus }

/**
 * Sets the statuses asked for on attendees of the locked event, in request order, as the transition table takes them
 * and registration places them (pending, waitlisted, refused); then settles the waitlist. Every contact must attend
 * (400 at `at(i)` otherwise); any refusal throws and nothing is applied (`throwRefusals`: `who(i)` names the
 * attendee of a refusal about it). `approvedBy` approves the requests (approval routes). Managers are told about
 * registrations that now await approval.
 */
export async function changeStatuses (
  trx: Tx,
  event: EventRow,
  requests: readonly StatusRequest[],
  o: RefusalPlaces & { notes?: string | null | undefined, approvedBy?: string | undefined }
): Promise<{ changed: Changed[], promoted: Promoted[] }> {
  const eventId = rootEventId(event)
  const locked = await repo.lockAttendees(trx, event.tenant_id, eventId, requests.map(r => r.contactId))
  const missing = requests.flatMap((r, i) => locked.has(r.contactId) ? [] : [i])
  if (missing.length > 0) {
    throw error400BadRequest(
      `${missing.length} contact(s) do not attend this event; nothing was applied`,
      missing.slice(0, 100).map(i => fieldError(o.at(i), 'not an attendee of this event', requests[i]?.contactId))
    )
  }
  const plan = new SeatPlan(await registrationOf(trx, event), await seatCounts(trx, event.tenant_id, eventId), event)
  const writes = new Map<string, repo.StatusWrite>()
  const refused: Refused[] = []
  requests.forEach((r, index) => {
    const before = locked.get(r.contactId)
    if (before === undefined) return
    const current = writes.get(r.contactId)
    const p = plan.place(
      current?.status ?? before.status,
      r.status,
      o.approvedBy !== undefined || before.approved_at !== null,
      current?.position ?? before.waitlist_position
    )
    if (isRefusal(p)) refused.push({ index, refusal: p, contactId: r.contactId, requested: r.status })
    else writes.set(r.contactId, { contactId: r.contactId, status: p.status, position: p.position })
  })
  throwRefusals(refused, requests.length, event, o)
  const rows = await repo.writeStatuses(trx, event.tenant_id, eventId, [...writes.values()], {
    notes: o.notes,
    approvedBy: o.approvedBy
  })
  const changed = rows.map(row => ({ row, previous: locked.get(row.contact_id)?.status ?? row.status }))
  const promoted = await settleWaitlist(trx, event)
  const pending = changed.filter(c => c.row.status === 'pending' && c.previous !== 'pending')
  await notifyManagersPending(trx, event, pending.length)
  return { changed: await rereadPromoted(trx, event, changed, promoted), promoted }
}

/** The rows of `changed` as they are after the waitlist settled (a promotion or a new position changes them). */
async function rereadPromoted (trx: Tx, event: EventRow, changed: Changed[], promoted: Promoted[]): Promise<Changed[]> {
  if (!changed.some(c => c.row.status === 'waitlisted') && promoted.length === 0) return changed
  const now = await repo.attendeesOf(trx, event.tenant_id, rootEventId(event), changed.map(c => c.row.contact_id))
  const byContact = new Map(now.map(r => [r.contact_id, r]))
  return changed.map(c => ({ ...c, row: { ...c.row, ...byContact.get(c.row.contact_id) } }))
}

/** A contact added who attends the event already: the one place that says so (`addAttendees`). */
export const ALREADY_ATTENDS: Refusal = {
  status: 409,
  detail: 'the contact already attends this event',
  problem: 'already_attending',
  on: 'attendee',
  message: 'already an attendee'
}

/**
 * Adds contacts as attendees of the locked event in request order, each with the status registration places it in
 * (the move from no status to the one asked for, through the transition table). A contact named twice is added once;
 * one already attending is left as it is (`attending: 'skip'`, bulk add) or refused (`'refuse'`, the add of one
 * contact: 409 `ALREADY_ATTENDS` at `who(i)`). Any refusal throws, nothing applied.
 */
export async function addAttendees (
  trx: Tx,
  event: EventRow,
  requests: readonly StatusRequest[],
  o: RefusalPlaces & { notes?: string | null, attending?: 'skip' | 'refuse' }
): Promise<repo.AttendeeRowCreated[]> {
  const eventId = rootEventId(event)
  const attending = await repo.lockAttendees(trx, event.tenant_id, eventId, requests.map(r => r.contactId))
  const plan = new SeatPlan(await registrationOf(trx, event), await seatCounts(trx, event.tenant_id, eventId), event)
  const seen = new Set<string>()
  const placed: Array<{ index: number, contactId: string, status: AttendeeStatus, position: number | null }> = []
  const refused: Refused[] = []
  const refuse = (index: number, refusal: Refusal, r: StatusRequest) =>
    refused.push({ index, refusal, contactId: r.contactId, requested: r.status })
  requests.forEach((r, index) => {
    if (seen.has(r.contactId)) return
    seen.add(r.contactId)
    if (attending.has(r.contactId)) {
      if (o.attending === 'refuse') refuse(index, ALREADY_ATTENDS, r)
      return
    }
    const p = plan.place(undefined, r.status, false)
    if (isRefusal(p)) refuse(index, p, r)
    else placed.push({ index, contactId: r.contactId, status: p.status, position: p.position })
  })
  throwRefusals(refused, requests.length, event, o)
  const created = await repo.insertAttendees(trx, {
    tenantId: event.tenant_id,
    eventId,
    orgId: event.org_id,
    attendees: placed,
    notes: o.notes ?? null
  })
  if (o.attending === 'refuse' && created.length < placed.length) {
    // a row that came meanwhile (ON CONFLICT DO NOTHING left it): it attends already
    const made = new Set(created.map(c => c.contact_id))
    for (const p of placed) if (!made.has(p.contactId)) refuse(p.index, ALREADY_ATTENDS, p)
    throwRefusals(refused, requests.length, event, o)
  }
  await notifyManagersPending(trx, event, created.filter(c => c.status === 'pending').length)
  return created
}

/**
 * Approves or declines pending registrations of the locked event, in request order: every contact must be pending
 * (409 otherwise, naming each: a declined registration cannot be approved); approval places the attendee as a
 * confirmation (a seat, else the waitlist, else 409 when full without one). Each attendee is told by e-mail.
 */
export async function decide (
  trx: Tx,
  event: EventRow,
  contactIds: readonly string[],
  decision: 'approve' | 'decline',
  o: { by: string, at: (i: number) => string }
): Promise<Changed[]> {
  const locked = await repo.lockAttendees(trx, event.tenant_id, rootEventId(event), contactIds)
  const refused = contactIds.flatMap((id, index) => {
    const status = locked.get(id)?.status
    if (status === undefined || status === 'pending') return []
    const detail = status === 'declined' && decision === 'approve'
      ? 'a declined registration cannot be approved (add the contact again or set a status)'
      : `not awaiting approval (status ${status})`
    const refusal: Refusal = { status: 409, detail, on: 'attendee', problem: 'attendee_state_conflict' }
    return [{ index, refusal, contactId: id, requested: decision === 'approve' ? 'confirmed' : 'declined' }]
  })
  throwRefusals(refused, contactIds.length, event, o)
  const { changed } = await changeStatuses(
    trx,
    event,
    contactIds.map(contactId => ({ contactId, status: decision === 'approve' ? 'confirmed' : 'declined' })),
    { at: o.at, ...(decision === 'approve' ? { approvedBy: o.by } : {}) }
  )
  for (const c of changed) {
    const kind = c.row.status === 'waitlisted'
      ? 'attendee.waitlisted'
      : decision === 'approve' ? 'attendee.approved' : 'attendee.declined'
    await notifyContacts(trx, event, [c.row.contact_id], { kind })
  }
  return changed
}

/**
 * Marks every confirmed attendee of the locked event who never checked in as `no_show`: the move `confirmed` →
 * `no_show` of the transition table, for all of them at once; 409 before the event has ended (its end, else its
 * start; an event without dates never ends). The contacts marked.
 */
export async function markNoShows (trx: Tx, event: EventRow, now: Date = new Date()): Promise<string[]> {
  const refused = transition(eventState(event, now), 'confirmed', 'no_show')
  if (refused !== undefined) {
    const end = endOf(event)
    const why = refused.code !== 'E'
      ? refused.message
      : end === null ? 'the event has no start or end' : `the event ends ${end.toISOString()}`
    throw refusalProblem(why === undefined ? refused : { ...refused, message: why }, { location: 'path.id' })
  }
  return await regRepo.markNoShows(trx, event.tenant_id, rootEventId(event))
}

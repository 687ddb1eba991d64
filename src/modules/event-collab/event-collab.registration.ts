/**
 * Registration: the one place that decides an attendee's status when something asks for one (add, PATCH, bulk
 * status, approval, automation actions), and what happens to the waitlist after any change (removals, declines,
 * capacity changes). Every caller holds the event's row lock (`writeEvent` / `lockEventForWrite`), so the seat count
 * read here cannot change before the transaction commits: confirmations of one event are serialized, on every
 * database and on every instance. State model: docs/event-collaboration.md, "Attendee states".
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { error400BadRequest, error409Conflict, fieldError, type ErrorDetail } from '../../platform/http/errors.ts'
import { queueNotification, recipientFor } from '../../platform/notifications/notifications.ts'
import { registrationNotice, type RegistrationNoticeKind } from '../../platform/notifications/templates.ts'
import { emitMany, type DomainEvent } from '../../platform/outbox.ts'
import type { EventRow } from '../events/events.table.ts'
import { rootEventId } from '../events/events.access.repository.ts'
import * as repo from './event-collab.attendees.repository.ts'
import * as regRepo from './event-collab.registration.repository.ts'
import type { AttendeeRow, AttendeeStatus } from './event-collab.table.ts'

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
  const counts = await seatCounts(trx, event.tenant_id, root)
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

/** When an event is over: its end, else its start; null when it has neither. */
export const endOf = (event: EventRow): Date | null => event.end_dt ?? event.start_dt

/** A refusal of one request of a batch: where it points and why (409: the event's state; 400: the request). */
export interface Refusal { status: 400 | 409, detail: string }

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

  constructor (
    readonly reg: Registration,
    counts: SeatCounts,
    readonly event: EventRow,
    private readonly now: Date = new Date()
  ) {
    this.confirmed = counts.confirmed
    this.lastPosition = counts.last_position
    this.waiting = counts.waitlisted
  }

  /**
   * The status an attendee gets when `requested` is asked for: `current` is its status (undefined: not an attendee
   * yet), `approved` whether a manager approved it before (or approves it now).
   */
  place (
    current: AttendeeStatus | undefined,
    requested: AttendeeStatus,
    approved: boolean,
    currentPosition: number | null = null
  ): Placement | Refusal {
    if (requested === 'waitlisted' || requested === 'pending') {
      // kept as it is (a PATCH of the notes names the status the attendee has), never asked for
      if (current === requested) return { status: requested, position: currentPosition }
      return { status: 400, detail: `${requested} is given by the service (capacity, approval), not asked for` }
    }
    const seated = current === 'confirmed' || current === 'checked_in'
    if (this.event.cancelled_at !== null && (current === undefined || requested === 'confirmed') && !seated) {
      return { status: 409, detail: 'the event is cancelled and takes no registrations' }
    }
    if (requested === 'no_show') {
      if (current === 'no_show') return { status: 'no_show', position: null }
      if (current !== 'confirmed') {
        return { status: 409, detail: `only a confirmed attendee who did not check in can be a no-show (status ${current ?? 'none'})` }
      }
      const end = endOf(this.event)
      if (end === null || end.getTime() > this.now.getTime()) {
        return { status: 409, detail: 'no-shows can be marked once the event has ended' }
      }
      return this.leave(current, 'no_show')
    }
    if (requested === 'confirmed') {
      // a checked-in attendee set back to confirmed keeps the seat
      if (seated) return { status: 'confirmed', position: null }
      if (current === 'waitlisted') return { status: 'waitlisted', position: currentPosition }
      if (this.reg.requires_approval && !approved) return { status: 'pending', position: null }
      if (this.reg.capacity !== null && (this.confirmed >= this.reg.capacity || this.waiting > 0)) {
        if (!this.reg.waitlist_enabled) {
          return { status: 409, detail: `the event is full (capacity ${this.reg.capacity}) and has no waitlist` }
        }
        this.lastPosition += 1
        this.waiting += 1
        return { status: 'waitlisted', position: this.lastPosition }
      }
      this.confirmed += 1
      return { status: 'confirmed', position: null }
    }
    if (requested === 'checked_in') {
      // a check-in by status is what happened at the door: it takes a seat even past capacity
      if (!seated) this.confirmed += 1
      if (current === 'waitlisted') this.waiting -= 1
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

/**
 * Throws the refusals of a batch as one problem, nothing applied: 409 when any is about the event's state (full,
 * cancelled, not ended), else 400. `at(i)` names the field of the i-th request.
 */
export function throwRefusals (
  refused: Array<{ index: number, refusal: Refusal, value: string }>,
  at: (i: number) => string
): void {
  if (refused.length === 0) return
  const errors: ErrorDetail[] = refused.slice(0, 100).map(r => fieldError(at(r.index), r.refusal.detail, r.value))
  const first = refused[0]?.refusal.detail ?? ''
  const detail = refused.length === 1 ? `${first}; nothing was applied` : `${refused.length} request(s) refused (${first}…); nothing was applied`
  if (refused.some(r => r.refusal.status === 409)) throw error409Conflict(detail, errors)
  throw error400BadRequest(detail, errors)
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
  const end = endOf(event)
  // nobody is promoted into an event that is cancelled or over
  const open = event.cancelled_at === null && (end === null || end.getTime() > Date.now())
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

/**
 * Queues one e-mail per contact (to its address, or stored undeliverable when it has none), in a bounded number of
 * statements whatever the number of contacts: the cancellation of a large event notifies every attendee.
 */
export async function notifyContacts (
  trx: Tx,
  event: EventRow,
  contactIds: readonly string[],
  notice: { kind: RegistrationNoticeKind, position?: number | null, reason?: string | null }
): Promise<number> {
  if (contactIds.length === 0) return 0
  const t = registrationNotice({ ...notice, eventId: rootEventId(event), title: event.title })
  const payload = { ...t.payload, ...(t.link !== undefined ? { link: t.link } : {}) }
  const message = { subject: t.subject, body: t.body, payload }
  return await regRepo.queueContactEmails(trx, event.tenant_id, contactIds, message)
}

/** Tells the event's creator and active managers that `count` registrations await their approval. */
export async function notifyManagersPending (trx: Tx, event: EventRow, count: number): Promise<void> {
  if (count === 0) return
  const eventId = rootEventId(event)
  const users = new Set([event.creator_id, ...await regRepo.activeManagerIds(trx, event.tenant_id, eventId)])
  const t = registrationNotice({ kind: 'registration.pending', eventId, title: event.title, count })
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
 * Sets the statuses asked for on attendees of the locked event, in request order, as registration places them
 * (pending, waitlisted, refused); then settles the waitlist. Every contact must attend (400 at `at(i)` otherwise);
 * any refusal throws and nothing is applied. `approvedBy` approves the requests (approval routes). Managers are told
 * about registrations that now await approval.
 */
export async function changeStatuses (
  trx: Tx,
  event: EventRow,
  requests: readonly StatusRequest[],
  o: { at: (i: number) => string, notes?: string | null | undefined, approvedBy?: string | undefined }
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
  const refused: Array<{ index: number, refusal: Refusal, value: string }> = []
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
    if (isRefusal(p)) refused.push({ index, refusal: p, value: r.status })
    else writes.set(r.contactId, { contactId: r.contactId, status: p.status, position: p.position })
  })
  throwRefusals(refused, o.at)
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

/**
 * Adds contacts as attendees of the locked event in request order, each with the status registration places it in;
 * contacts already attending (or named twice) are left as they are. Any refusal throws, nothing applied.
 */
export async function addAttendees (
  trx: Tx,
  event: EventRow,
  requests: readonly StatusRequest[],
  o: { at: (i: number) => string, notes?: string | null }
): Promise<repo.AttendeeRowCreated[]> {
  const eventId = rootEventId(event)
  const attending = await repo.lockAttendees(trx, event.tenant_id, eventId, requests.map(r => r.contactId))
  const plan = new SeatPlan(await registrationOf(trx, event), await seatCounts(trx, event.tenant_id, eventId), event)
  const seen = new Set<string>()
  const placed: Array<{ contactId: string, status: AttendeeStatus, position: number | null }> = []
  const refused: Array<{ index: number, refusal: Refusal, value: string }> = []
  requests.forEach((r, index) => {
    if (attending.has(r.contactId) || seen.has(r.contactId)) return
    seen.add(r.contactId)
    const p = plan.place(undefined, r.status, false)
    if (isRefusal(p)) refused.push({ index, refusal: p, value: r.status })
    else placed.push({ contactId: r.contactId, status: p.status, position: p.position })
  })
  throwRefusals(refused, o.at)
  const created = await repo.insertAttendees(trx, {
    tenantId: event.tenant_id,
    eventId,
    orgId: event.org_id,
    attendees: placed,
    notes: o.notes ?? null
  })
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
    return [{ index, refusal: { status: 409 as const, detail }, value: id }]
  })
  throwRefusals(refused, o.at)
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
    await notifyContacts(trx, event, [c.row.contact_id], { kind, position: c.row.waitlist_position })
  }
  return changed
}

/**
 * Marks every confirmed attendee of the locked event who never checked in as `no_show`; 409 before the event has
 * ended (its end, else its start; an event without dates never ends). The contacts marked.
 */
export async function markNoShows (trx: Tx, event: EventRow, now: Date = new Date()): Promise<string[]> {
  const end = endOf(event)
  if (end === null || end.getTime() > now.getTime()) {
    throw error409Conflict('no-shows can be marked once the event has ended', [
      fieldError('path.id', end === null ? 'the event has no start or end' : `the event ends ${end.toISOString()}`)
    ])
  }
  return await regRepo.markNoShows(trx, event.tenant_id, rootEventId(event))
}

/**
 * Mails to guests (docs/guests.md, "Mails"): every mail about an attendee's place, to the attendee's contact, in the
 * guest's language (the registration's, else the contact's, else the tenant's, else the deployment's), with a link
 * of the guest's own (attendees.guest-tokens.repository.ts) and, where a calendar should change, an iCalendar
 * invitation:
 * `METHOD:REQUEST` with one UID per event and guest and a SEQUENCE that grows with each mail that carries one, and
 * `METHOD:CANCEL` with the same UID when the event is cancelled or the guest's place is gone.
 *
 * Queued in the caller's transaction (nothing is mailed for a change that rolls back). Work is bounded by the
 * attendees named: the rows are read and written in chunks, whatever their number. A contact without an address
 * gets a row stored `undeliverable`, which an administrator sees. A guest who unsubscribed from updates gets no
 * `event_changed` mail; mails about their own place and the event's cancellation still go.
 */
import crypto from 'node:crypto'
import type { Tx } from '../../platform/db/tenant.ts'
import {
  formatWhen, localeOrDefault, message, type Locale, type MessageKey
} from '../../platform/i18n/i18n.ts'
import { calendarInviteText, type CalendarInvite } from '../../platform/notifications/calendar-invite.ts'
import { isEmailAddress, queueNotification } from '../../platform/notifications/notifications.ts'
import type { NotificationCalendar } from '../../platform/notifications/templates.ts'
import { type EventRow, rootEventId } from '../events/index.ts'
import {
  CONFIRM_HOURS, guestTokenExpiry, issueGuestTokens, type GuestTokenPurpose
} from './attendees.guest-tokens.repository.ts'
import * as guestRepo from './attendees.guest.repository.ts'
import type { AttendeeStatus } from './attendees.table.ts'

/** What a guest mail tells. */
export type GuestMailKind =
  | 'invitation' | 'optin' | 'already' | 'confirmed' | 'waitlisted' | 'pending' | 'promoted' | 'tentative'
  | 'declined' | 'rejected' | 'cancelled_by_guest' | 'event_changed' | 'event_cancelled' | 'new_link'

/** The deployment's part of guest mails, set once by the attendees module from the configuration. */
export interface GuestMailSettings {
  /** DEFAULT_LOCALE: the language when neither guest nor tenant has one */
  defaultLocale: Locale
  /** the organizer's address in calendar invitations when the event's creator has none (SMTP_FROM's) */
  fromAddress: string
  /** the host part of calendar UIDs (BASE_URL's) */
  uidDomain: string
}
let settings: GuestMailSettings = { defaultLocale: 'en', fromAddress: 'no-reply@localhost', uidDomain: 'localhost' }
export const configureGuestMail = (s: GuestMailSettings): void => { settings = s }
export const guestMailSettings = (): GuestMailSettings => settings

/** The web app's pages a guest's links open (joined to APP_URL when sent; docs/guests.md). */
export const GUEST_PAGES = { manage: '/guest/manage', confirm: '/guest/confirm' } as const

/** The calendar entry of a mail kind: added or updated (REQUEST), removed (CANCEL), or none. */
const CALENDAR: Partial<Record<GuestMailKind, 'REQUEST' | 'CANCEL'>> = {
  confirmed: 'REQUEST',
  promoted: 'REQUEST',
  event_changed: 'REQUEST',
  tentative: 'REQUEST',
  declined: 'CANCEL',
  rejected: 'CANCEL',
  cancelled_by_guest: 'CANCEL',
  event_cancelled: 'CANCEL'
}

/** The guest's answer as their calendar entry says it (PARTSTAT), by attendee status. */
const PARTSTAT: Partial<Record<AttendeeStatus, CalendarInvite['attendee']['partstat']>> = {
  confirmed: 'ACCEPTED', checked_in: 'ACCEPTED', tentative: 'TENTATIVE', declined: 'DECLINED'
}

type GuestRow = guestRepo.GuestRow

const CHUNK = 500

/** What a guest's mail shows of the event, as a digest: a change of it is a change to tell (`tellGuestsOfChange`). */
export const eventDigest = (e: Pick<EventRow, 'title' | 'start_dt' | 'end_dt' | 'timezone' | 'address'>): string =>
  crypto.createHash('sha256')
    .update(JSON.stringify([e.title, e.start_dt?.toISOString(), e.end_dt?.toISOString(), e.timezone, e.address]))
    .digest('base64url').slice(0, 22)

/**
 * Tells the guests of a published event that moved (title, time, zone or place: `onPublishedEventChange`): a mail
 * with the calendar entry updated to each guest whose last mail showed it otherwise, who may still come and did not
 * turn updates off. A write that changed nothing a guest saw mails nobody.
 */
export async function tellGuestsOfChange (trx: Tx, events: readonly EventRow[]): Promise<void> {
  const published = events.filter(e => e.published_id === null)
  const [first] = published
  if (first === undefined) return
  const told = await guestRepo.guestsToTell(trx, first.tenant_id, published.map(e => e.id))
  for (const event of published) {
    const digest = eventDigest(event)
    const ids = told.filter(g => g.event_id === event.id && g.calendar_digest !== digest).map(g => g.id)
    await mailGuests(trx, event, ids, 'event_changed')
  }
}

/** The calendar UID of an event and a guest: stable across every mail to that guest about that event. */
export const calendarUid = (eventId: number, attendeeId: number): string =>
  `event-${eventId}-guest-${attendeeId}@${settings.uidDomain}`

const nameOf = (r: Pick<GuestRow, 'first_name' | 'last_name'>): string | null =>
  [r.first_name, r.last_name].filter(p => p !== null && p.trim() !== '').join(' ') || null

/** The tenant's default language of guest texts (guest_settings), else the deployment's. */
export async function tenantLocale (trx: Tx, tenantId: string): Promise<Locale> {
  return localeOrDefault(await guestRepo.tenantDefaultLocale(trx, tenantId), settings.defaultLocale)
}

/** The organizer a guest sees: the event creator's display name and address (else the service's address). */
async function organizerOf (trx: Tx, event: EventRow): Promise<{ name: string, email: string }> {
  const u = await guestRepo.userProfile(trx, event.tenant_id, event.creator_id)
  const email = u?.email !== null && u?.email !== undefined && isEmailAddress(u.email) ? u.email : settings.fromAddress
  return { name: u?.display_name?.trim() || email, email }
}

/** The language of one guest: the registration's, else the contact's, else `fallback`. */
export const guestLocale = (r: { locale: string | null, contact_locale: string | null }, fallback: Locale): Locale =>
  localeOrDefault(r.locale ?? r.contact_locale, fallback)

/** What one mail to one guest says, in their language. */
function texts (kind: GuestMailKind, locale: Locale, event: EventRow, row: GuestRow,
  extra: { organizer: string, reason?: string | null | undefined }) {
  const title = event.title
  const when = formatWhen(locale, event.start_dt, event.end_dt, event.timezone)
  const where = event.address !== null && event.address.trim() !== '' ? event.address : message(locale, 'where.online')
  const position = row.waitlist_position ?? 0
  const values = { title, when, where, organizer: extra.organizer, position, hours: CONFIRM_HOURS }
  const subject = message(locale, `mail.${kind}.subject` as MessageKey, values)
  const paragraphs = [message(locale, `mail.${kind}.body` as MessageKey, values)]
  if (kind === 'event_cancelled' && extra.reason !== undefined && extra.reason !== null && extra.reason.trim() !== '') {
    paragraphs.push(message(locale, 'mail.event_cancelled.reason', { reason: extra.reason }))
  }
  return { subject, body: paragraphs.join('\n\n') }
}

/**
 * Queues a mail of `kind` to each attendee of the event (by attendee id), with a link of its own (a confirmation
 * link for `optin`, else a manage link) and the calendar invitation the kind carries. Returns the mails queued.
 */
export async function mailGuests (
  trx: Tx,
  event: EventRow,
  attendeeIds: readonly number[],
  kind: GuestMailKind,
  o: { reason?: string | null | undefined, payloadKind?: string } = {}
): Promise<number> {
  if (attendeeIds.length === 0) return 0
  const eventId = rootEventId(event)
  const fallback = await tenantLocale(trx, event.tenant_id)
  const organizer = await organizerOf(trx, event)
  const purpose: GuestTokenPurpose = kind === 'optin' ? 'confirm' : 'manage'
  const method = event.start_dt === null ? undefined : CALENDAR[kind]
  const digest = eventDigest(event)
  let queued = 0
  const ids = [...new Set(attendeeIds)]
  for (let i = 0; i < ids.length; i += CHUNK) {
    const rows = await guestRepo.guestRows(trx, event.tenant_id, ids.slice(i, i + CHUNK))
    const wanted = rows.filter(r => !(kind === 'event_changed' && r.updates_unsubscribed_at !== null))
    const addressed = wanted.filter(r => r.email !== null && isEmailAddress(r.email.trim()))
    const tokens = await issueGuestTokens(trx, event.tenant_id, addressed.map(r => r.id), purpose,
      guestTokenExpiry(purpose, event))
    // a CANCEL, and a change, only where a calendar holds the entry; each a SEQUENCE above the last one mailed
    const invited = method === undefined
      ? []
      : addressed.filter(r => (method === 'REQUEST' && kind !== 'event_changed') || r.calendar_sequence > 0)
    const sequences = await guestRepo.bumpSequences(trx, event.tenant_id, invited.map(r => r.id))
    await guestRepo.markMailed(trx, event.tenant_id, addressed.map(r => r.id), digest)
    for (const r of wanted) {
      const locale = guestLocale(r, fallback)
      const t = texts(kind, locale, event, r, { organizer: organizer.name, reason: o.reason })
      const email = r.email?.trim() ?? ''
      const token = tokens.get(r.id)
      if (token === undefined) {
        await queueNotification(trx, {
          tenantId: event.tenant_id,
          channel: 'email',
          recipient: email === '' ? `contact:${r.contact_id}` : email,
          subject: t.subject,
          body: t.body,
          payload: { kind: o.payloadKind ?? `guest.${kind}`, event_id: eventId, attendee_id: r.id },
          undeliverable: `the contact ${r.contact_id} has no e-mail address`
        })
        continue
      }
      const sequence = sequences.get(r.id)
      const calendar: NotificationCalendar | undefined = method !== undefined && sequence !== undefined
        ? { method, ics: inviteOf(event, r, { method, sequence, organizer }) }
        : undefined
      const page = purpose === 'confirm' ? GUEST_PAGES.confirm : GUEST_PAGES.manage
      const label = message(locale, kind === 'optin'
        ? 'mail.optin.link'
        : kind === 'invitation' ? 'mail.invitation.link' : 'mail.manage.link')
      await queueNotification(trx, {
        tenantId: event.tenant_id,
        channel: 'email',
        recipient: email,
        subject: t.subject,
        body: t.body,
        payload: { kind: o.payloadKind ?? `guest.${kind}`, event_id: eventId, attendee_id: r.id, locale },
        link: { label, path: page, query: { token } },
        ...(purpose === 'manage'
          ? {
              unsubscribe: {
                label: message(locale, 'mail.unsubscribe.label'), path: page, query: { token, updates: 'off' }
              }
            }
          : {}),
        ...(calendar !== undefined ? { calendar } : {})
      })
      queued += 1
    }
  }
  return queued
}

/** The calendar invitation of one guest for the event. */
function inviteOf (event: EventRow, r: GuestRow, o: {
  method: 'REQUEST' | 'CANCEL',
  sequence: number,
  organizer: { name: string, email: string }
}): string {
  return calendarInviteText({
    method: o.method,
    uid: calendarUid(rootEventId(event), r.id),
    sequence: o.sequence,
    title: event.title,
    description: event.description,
    start: event.start_dt,
    end: event.end_dt,
    timeZone: event.timezone,
    location: event.address,
    organizer: o.organizer,
    attendee: { name: nameOf(r), email: r.email?.trim() ?? '', partstat: PARTSTAT[r.status] ?? 'NEEDS-ACTION' },
    dtstamp: new Date()
  })
}

/**
 * The guest's calendar file of the event (the guest's link): the entry as the last mail left it (its SEQUENCE), a
 * CANCEL when the event is cancelled or the guest holds no place; undefined for an event without a start or a guest
 * without an address.
 */
export async function guestCalendarText (trx: Tx, event: EventRow, attendeeId: number): Promise<string | undefined> {
  const [r] = await guestRepo.guestRows(trx, event.tenant_id, [attendeeId])
  if (r === undefined || event.start_dt === null || r.email === null || !isEmailAddress(r.email.trim())) {
    return undefined
  }
  const gone = event.cancelled_at !== null || r.status === 'declined'
  return inviteOf(event, r, {
    method: gone ? 'CANCEL' : 'REQUEST',
    sequence: r.calendar_sequence,
    organizer: await organizerOf(trx, event)
  })
}

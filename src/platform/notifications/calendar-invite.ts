/**
 * The iCalendar invitation a notification mail carries (RFC 5546 iTIP), written by ical-generator: `METHOD:REQUEST`
 * adds or updates the guest's calendar entry, `METHOD:CANCEL` removes it. Calendars match an invitation to their
 * entry by UID and keep the one with the highest SEQUENCE, so the caller passes a UID that stays the same for the
 * event and a SEQUENCE that grows with each change of it.
 *
 * Decisions:
 * - Times are instants in UTC (`DTSTART:…Z`): no VTIMEZONE to get wrong, and every calendar shows them in the
 *   reader's zone. The event's zone goes along as `X-WR-TIMEZONE` (a hint, when it is an IANA zone). An event
 *   without an end lasts an hour; one without a start cannot be put in a calendar (the caller sends no invitation).
 * - Texts are escaped by ical-generator (TEXT: `\\`, `;`, `,`, newlines). Names in CN parameters are quoted by it but
 *   a parameter cannot hold a `"`, a backslash or a line break: they become `'`, `/` and a space.
 * - An invitation stays under CALENDAR_MAX_BYTES: long texts are cut (the description at 16 KiB), and
 *   `assertCalendarSize` refuses any text over it (`queueNotification` too, so the outbox row is bounded).
 * - The organizer is the platform's sender, the one attendee the recipient with `RSVP=FALSE`: replies are not read.
 */
import ical, { ICalAttendeeStatus, ICalCalendarMethod, ICalEventStatus } from 'ical-generator'
import { IANAZone } from 'luxon'

/** The largest iCalendar text a notification may carry (UTF-8 bytes). */
export const CALENDAR_MAX_BYTES = 64 * 1024

export const CALENDAR_METHODS = ['REQUEST', 'CANCEL'] as const
export type CalendarMethod = typeof CALENDAR_METHODS[number]

/** One event as an invitation to one guest. */
export interface CalendarInvite {
  /** REQUEST: add or update the entry; CANCEL: remove it (the event was cancelled or the guest's place is gone) */
  method: CalendarMethod
  /** the same for every invitation of the event, e.g. `event-12@collab.example.org` */
  uid: string
  /** grows with each change of the event (a calendar ignores an invitation older than its entry) */
  sequence: number
  title: string
  description?: string | null
  start: Date | null
  /** none, or not after the start: an hour after the start */
  end: Date | null
  /** the event's IANA zone (X-WR-TIMEZONE; the times themselves are written in UTC) */
  timeZone: string
  location?: string | null
  /** the event in the web app (http or https) */
  url?: string | null
  organizer: { name: string; email: string }
  attendee: { name: string | null; email: string; partstat: 'ACCEPTED' | 'TENTATIVE' | 'DECLINED' | 'NEEDS-ACTION' }
  /** when this invitation was made (DTSTAMP) */
  dtstamp: Date
}

const PROD_ID = { company: 'Collab', product: 'Invitations', language: 'EN' }
const HOUR_MS = 3_600_000

const PARTSTATS = {
  ACCEPTED: ICalAttendeeStatus.ACCEPTED,
  TENTATIVE: ICalAttendeeStatus.TENTATIVE,
  DECLINED: ICalAttendeeStatus.DECLINED,
  'NEEDS-ACTION': ICalAttendeeStatus.NEEDSACTION
} as const

/** The UTF-8 size of a text. */
export const calendarBytes = (ics: string): number => Buffer.byteLength(ics, 'utf8')

/** Throws when an iCalendar text is over CALENDAR_MAX_BYTES. */
export function assertCalendarSize (ics: string): void {
  const bytes = calendarBytes(ics)
  if (bytes > CALENDAR_MAX_BYTES) {
    throw new RangeError(`the calendar invitation has ${bytes} bytes, more than ${CALENDAR_MAX_BYTES}`)
  }
}

/** `text` cut to at most `maxBytes` UTF-8 bytes, at a character, with `…` when cut. */
function clip (text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text
  let out = ''
  let bytes = 3 // the ellipsis
  for (const c of text) {
    bytes += Buffer.byteLength(c, 'utf8')
    if (bytes > maxBytes) break
    out += c
  }
  return `${out}…`
}

/** A name for a quoted CN parameter, which can hold no `"`, backslash or line break. */
function paramName (name: string): string {
  // eslint-disable-next-line no-control-regex
  return clip(name.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/"/g, "'").replace(/\\/g, '/').trim(), 256)
}

/** An address for a mailto: value (ical-generator escapes it; a line break or a space has no place in it). */
function address (email: string, who: string): string {
  if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 320) throw new Error(`the ${who}'s e-mail is no address`)
  return email
}

/** The text of an optional field: none when absent or blank. */
const optional = (text: string | null | undefined, maxBytes: number): string | undefined =>
  text !== undefined && text !== null && text.trim() !== '' ? clip(text, maxBytes) : undefined

/**
 * The invitation as iCalendar text (CRLF lines folded at 75 octets, the last one ended by CRLF too): METHOD and
 * one VEVENT with UID, SEQUENCE, DTSTAMP, DTSTART and DTEND in UTC, SUMMARY, DESCRIPTION, LOCATION, URL, ORGANIZER,
 * ATTENDEE (CN, PARTSTAT, RSVP=FALSE) and STATUS (CONFIRMED, or CANCELLED for a CANCEL). Throws for an event
 * without a start, a sequence that is no integer ≥ 0, an address that is none, a URL that is no http(s) URL.
 *
 * @example
 *   const ics = calendarInviteText({ method: 'REQUEST', uid: `event-${id}@${host}`, sequence: revision, … })
 */
export function calendarInviteText (i: CalendarInvite): string {
  if (i.start === null || Number.isNaN(i.start.getTime())) throw new Error('an event without a start has no invite')
  if (!Number.isSafeInteger(i.sequence) || i.sequence < 0) throw new Error(`invalid SEQUENCE ${i.sequence}`)
  if (i.uid.trim() === '') throw new Error('an invitation needs a UID')
  const end = i.end !== null && i.end.getTime() > i.start.getTime() ? i.end : new Date(i.start.getTime() + HOUR_MS)
  let url: string | undefined
  if (i.url !== undefined && i.url !== null && i.url !== '') {
    // written unescaped (a URI): the WHATWG parser drops line breaks and encodes spaces
    const parsed = URL.canParse(i.url) ? new URL(i.url) : undefined
    if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol)) throw new Error('invalid event URL')
    url = clip(parsed.href, 2048)
  }
  const cancel = i.method === 'CANCEL'
  const description = optional(i.description, 16 * 1024)
  const location = optional(i.location, 2048)
  const cal = ical({
    prodId: PROD_ID,
    method: cancel ? ICalCalendarMethod.CANCEL : ICalCalendarMethod.REQUEST,
    ...(IANAZone.isValidZone(i.timeZone) ? { x: { 'X-WR-TIMEZONE': i.timeZone } } : {})
  })
  const attendeeName = paramName(i.attendee.name ?? '')
  cal.createEvent({
    id: clip(i.uid, 512),
    sequence: i.sequence,
    stamp: i.dtstamp,
    start: i.start,
    end,
    summary: clip(i.title, 1024),
    ...(description !== undefined ? { description } : {}),
    ...(location !== undefined ? { location } : {}),
    ...(url !== undefined ? { url } : {}),
    organizer: { name: paramName(i.organizer.name), email: address(i.organizer.email, 'organizer') },
    attendees: [{
      email: address(i.attendee.email, 'attendee'),
      ...(attendeeName !== '' ? { name: attendeeName } : {}),
      status: PARTSTATS[i.attendee.partstat],
      rsvp: false
    }],
    status: cancel ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED
  })
  // ical-generator ends the text without the CRLF that ends every content line (RFC 5545, 3.1)
  const ics = `${cal.toString()}\r\n`
  assertCalendarSize(ics)
  return ics
}

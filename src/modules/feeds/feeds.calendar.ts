/**
 * The iCalendar text of a feed (RFC 5545), written by ical-generator. Each event row is one VEVENT: a series is
 * stored as one row per occurrence (with its own overrides, times and cancellation), so its occurrences are written
 * out one by one, each with its own UID, rather than as a master with RRULE, EXDATE and RECURRENCE-ID overrides that
 * would have to be reverse-engineered from the rows (docs/integrations.md).
 *
 * Times are written in the event's own zone (DTSTART;TZID=…), with a VTIMEZONE per zone listing the zone's offset
 * changes over the feed's events (computed with luxon, which reads the platform's IANA database): an event at 10:00
 * in Berlin stays at 10:00 in Berlin across a change of daylight-saving time, wherever the reader is.
 *
 * The text depends on its inputs only (DTSTAMP is the row's `updated_at`, never "now"): `feedVersion`, a digest of
 * them, is its ETag, known from the rows' keys and versions before the rows are read (a calendar app polling an
 * unchanged feed costs a digest of the rows' versions, not reading and rendering them), and the key of the rendered
 * text in a cache.
 */
import crypto from 'node:crypto'
import ical, { ICalEventStatus } from 'ical-generator'
import { DateTime, IANAZone } from 'luxon'
import type { FeedEvent } from './feeds.repository.ts'

const PROD_ID = { company: 'Collab', product: 'Calendar feeds', language: 'EN' }
const DAY_MS = 86_400_000

/** RFC 5545 TEXT escaping, for values ical-generator writes unescaped (the calendar's name). */
const escapeText = (s: string): string => s.replace(/[\\;,]/g, c => `\\${c}`).replace(/\r\n|\r|\n/g, '\\n')

const pad = (n: number, width = 2): string => String(Math.abs(n)).padStart(width, '0')

/** `+0100` from minutes east of UTC. */
const offsetText = (minutes: number): string =>
  `${minutes < 0 ? '-' : '+'}${pad(Math.trunc(Math.abs(minutes) / 60))}${pad(Math.abs(minutes) % 60)}`

/** A UTC instant shifted by `offset` minutes, as a local DATE-TIME without zone (`20260329T020000`). */
function localText (ms: number, offset: number): string {
  const d = new Date(ms + offset * 60_000)
  return `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T` +
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`
}

const offsetAt = (zone: IANAZone, ms: number): number => zone.offset(ms)

/** The first minute in (lo, hi] at which the zone's offset differs from its offset at `lo`. */
function changeBetween (zone: IANAZone, lo: number, hi: number): number {
  const before = offsetAt(zone, lo)
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000
    if (offsetAt(zone, mid) === before) lo = mid
    else hi = mid
  }
  return hi
}

/**
 * The VTIMEZONE of a zone over [from, to]: the observance in effect at `from`, then one per offset change up to
 * `to` (each with its own DTSTART, no RRULE: the rules of a zone change, its history does not).
 */
export function vtimezone (name: string, from: Date, to: Date): string | null {
  const zone = IANAZone.create(name)
  if (!zone.isValid) return null
  const start = from.getTime() - DAY_MS
  const end = to.getTime() + DAY_MS
  const observance = (ms: number, before: number, after: number): string[] => {
    const dst = DateTime.fromMillis(ms, { zone }).isInDST
    const kind = dst ? 'DAYLIGHT' : 'STANDARD'
    return [
      `BEGIN:${kind}`,
      `DTSTART:${localText(ms, before)}`,
      `TZOFFSETFROM:${offsetText(before)}`,
      `TZOFFSETTO:${offsetText(after)}`,
      `TZNAME:${escapeText(zone.offsetName(ms, { format: 'short', locale: 'en-US' }) ?? offsetText(after))}`,
      `END:${kind}`
    ]
  }
  let offset = offsetAt(zone, start)
  const lines = ['BEGIN:VTIMEZONE', `TZID:${name}`, ...observance(start, offset, offset)]
  for (let ms = start; ms < end; ms += DAY_MS) {
    const next = Math.min(ms + DAY_MS, end)
    if (offsetAt(zone, next) === offset) continue
    const at = changeBetween(zone, ms, next)
    const after = offsetAt(zone, at)
    lines.push(...observance(at, offset, after))
    offset = after
  }
  lines.push('END:VTIMEZONE')
  return lines.join('\r\n')
}

export interface FeedCalendar {
  /** X-WR-CALNAME */
  name: string
  /** the host that UIDs are scoped to (of BASE_URL) */
  host: string
  /** the web app, for each event's URL (APP_URL) */
  appUrl: string
  events: readonly FeedEvent[]
}

/**
 * Whether each zone name is valid, asked once per name: luxon builds an Intl.DateTimeFormat on every check, which
 * for a feed of 5 000 events was a third of its rendering time (docs/performance.md, "Calendar feeds").
 */
const validZones = new Map<string, boolean>()
function zoneOf (name: string): string {
  let valid = validZones.get(name)
  if (valid === undefined) {
    valid = IANAZone.isValidZone(name)
    if (validZones.size < 1000) validZones.set(name, valid)
  }
  return valid ? name : 'UTC'
}

/** Bumped when renderCalendar writes other text for the same inputs: every ETag changes with it. */
const RENDERING = 1

/** What a feed's text holds beside its events. */
export type FeedHead = Omit<FeedCalendar, 'events'>

/**
 * The version of a feed's text: a digest of everything `renderCalendar` reads (the digest of its rows' keys and
 * versions, `feedDigest` in feeds.repository.ts; its name, host and web app), of the rendering and of the platform's
 * zone database (process.versions.tz: the VTIMEZONE blocks come from it).
 */
export function feedVersion ({ name, host, appUrl }: FeedHead, rows: string): string {
  return crypto.createHash('sha256')
    .update(JSON.stringify([RENDERING, process.versions.tz ?? '', name, host, appUrl, rows]))
    .digest('base64url').slice(0, 32)
}

/** The feed as iCalendar text (CRLF lines folded at 75 octets). */
export function renderCalendar ({ name, host, appUrl, events }: FeedCalendar): string {
  // each zone's VTIMEZONE covers the span of its events
  const spans = new Map<string, { from: Date, to: Date }>()
  for (const e of events) {
    const zone = zoneOf(e.timezone)
    const end = e.end_dt ?? e.start_dt
    const span = spans.get(zone)
    if (span === undefined) spans.set(zone, { from: e.start_dt, to: end })
    else {
      if (e.start_dt < span.from) span.from = e.start_dt
      if (end > span.to) span.to = end
    }
  }
  const cal = ical({ prodId: PROD_ID, name: escapeText(name) })
  cal.timezone({
    name: null,
    generator: zone => {
      const span = spans.get(zone)
      return span === undefined ? null : vtimezone(zone, span.from, span.to)
    }
  })
  for (const e of events) {
    const zone = zoneOf(e.timezone)
    const cancelled = e.cancelled_at !== null || e.is_deleted
    const geo = e.latitude !== null && e.longitude !== null ? { lat: e.latitude, lon: e.longitude } : undefined
    cal.createEvent({
      id: `event-${e.id}@${host}`,
      sequence: e.revision,
      stamp: e.updated_at,
      created: e.created_at,
      lastModified: e.updated_at,
      timezone: zone,
      start: DateTime.fromJSDate(e.start_dt, { zone }),
      ...(e.end_dt !== null && e.end_dt > e.start_dt ? { end: DateTime.fromJSDate(e.end_dt, { zone }) } : {}),
      summary: e.title,
      ...(e.description !== null && e.description !== '' ? { description: e.description } : {}),
      ...(e.address !== null && e.address !== ''
        ? { location: { title: e.address, ...(geo !== undefined ? { geo } : {}) } }
        : {}),
      url: `${appUrl}/events/${e.id}`,
      status: cancelled ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED
    })
  }
  return cal.toString()
}

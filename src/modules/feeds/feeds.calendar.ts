/**
 * The iCalendar text of a feed (RFC 5545), written by ical-generator. An event without a series is one VEVENT. The
 * occurrences of a series that a feed shows are one recurring VEVENT (RRULE, with EXDATE) and a VEVENT with
 * RECURRENCE-ID for each occurrence that differs from it (another title, description, place or time, or cancelled),
 * so calendar apps show one series with its exceptions (docs/integrations.md, "Series in feeds"). The recurring
 * VEVENT says no more than the rows its reader may read: it runs from the first to the last occurrence the feed shows,
 * each position between without a row shown is an EXDATE, and its title, description and place are those of an
 * occurrence shown. An occurrence at an added date (RDATE), or at an anchor off its rule, is a VEVENT of its own:
 * Outlook and node-ical ignore RDATE, so a recurring entry never needs it.
 *
 * Times are written in the event's own zone (DTSTART;TZID=…), with a VTIMEZONE per zone listing the zone's offset
 * changes over the feed's events (found to the second with luxon, which reads the platform's IANA database, so they
 * agree with the events' own wall times; named by the zone database's abbreviations, CET/CEST, through
 * moment-timezone): an event at 10:00 in Berlin stays at 10:00 in Berlin across a change of daylight-saving time,
 * wherever the reader is. The text ends with CRLF, as every line of it does (RFC 5545, 3.1).
 *
 * The text depends on its inputs only (DTSTAMP is the row's `updated_at`, never "now"): `feedVersion`, a digest of
 * them, is its ETag, known from the rows' keys and versions before the rows are read (a calendar app polling an
 * unchanged feed costs a digest of the rows' versions, not reading and rendering them), and the key of the rendered
 * text in a cache.
 */
import crypto from 'node:crypto'
import ical, { ICalEventStatus } from 'ical-generator'
import { DateTime, IANAZone } from 'luxon'
import moment from 'moment-timezone'
import type { SeriesRecurrence, SeriesSlot } from '../series/index.ts'
import type { FeedEvent } from './feeds.repository.ts'

const PROD_ID = { company: 'Collab', product: 'Calendar feeds', language: 'EN' }
const DAY_MS = 86_400_000

/** RFC 5545 TEXT escaping, for values ical-generator writes unescaped (the calendar's name). */
const escapeText = (s: string): string => s.replace(/[\\;,]/g, c => `\\${c}`).replace(/\r\n|\r|\n/g, '\\n')

const pad = (n: number, width = 2): string => String(Math.abs(n)).padStart(width, '0')

/** `+0100` from minutes east of UTC (`+005328` for an old offset of whole seconds, as RFC 5545 allows). */
function offsetText (minutes: number): string {
  const seconds = Math.round(Math.abs(minutes) * 60)
  const text = `${pad(Math.trunc(seconds / 3600))}${pad(Math.trunc(seconds / 60) % 60)}`
  return `${minutes < 0 ? '-' : '+'}${text}${seconds % 60 === 0 ? '' : pad(seconds % 60)}`
}

/** A UTC instant shifted by `offset` minutes, as a local DATE-TIME without zone (`20260329T020000`). */
function localText (ms: number, offset: number): string {
  const d = new Date(ms + Math.round(offset * 60) * 1000)
  return `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T` +
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`
}

const offsetAt = (zone: IANAZone, ms: number): number => zone.offset(ms)

/**
 * The instant at which the zone's offset changes in (lo, hi], to the second (the zone database's changes fall on
 * whole seconds, and luxon reads an offset to the second): `lo` and `hi` are whole seconds with other offsets.
 */
function changeBetween (zone: IANAZone, lo: number, hi: number): number {
  const before = offsetAt(zone, lo)
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000
    if (offsetAt(zone, mid) === before) lo = mid
    else hi = mid
  }
  return hi
}

/**
 * The zone database's abbreviation of the zone at an instant (`CET`, `CEST`, `EST`, `JST`; `-03` where the database
 * has none), from moment-timezone's copy of the IANA data: ICU, which luxon and Intl read, names most zones only
 * `GMT+1` in every locale. None when that copy gives another offset than the platform's database at the instant
 * (the two are of different releases; TZNAME is optional, a wrong one is worse than none).
 */
function abbreviation (name: string, ms: number, offset: number): string | undefined {
  const zone = moment.tz.zone(name)
  if (zone === null || -zone.utcOffset(ms) !== offset) return undefined
  const abbr = zone.abbr(ms)
  return /^[A-Za-z]{2,6}$|^[+-]\d{2,4}$/.test(abbr) ? abbr : undefined
}

/**
 * Where the observance in effect at `ms` began: the zone database's last change before it, when the platform's
 * database agrees with it (the offset just before and from then on); else `ms` itself.
 */
function onsetOf (zone: IANAZone, ms: number): { at: number, before: number } {
  const offset = offsetAt(zone, ms)
  const untils = moment.tz.zone(zone.name)?.untils ?? []
  let i = untils.findIndex(u => u > ms) - 1
  if (i < -1) i = untils.length - 1
  const at = untils[i]
  if (at === undefined || !Number.isFinite(at) || offsetAt(zone, at) !== offset) return { at: ms, before: offset }
  const before = offsetAt(zone, at - 1000)
  return before === offset ? { at: ms, before: offset } : { at, before }
}

/**
 * The VTIMEZONE of a zone over [from, to]: the observance in effect at `from` (from its onset), then one per offset
 * change up to `to` (each with its own DTSTART, no RRULE: the rules of a zone change, its history does not). The
 * changes are the platform's database's (luxon), found day by day from a UTC midnight and to the second: an
 * event's own seconds never leak into them. TZNAME is the zone database's abbreviation (`abbreviation`).
 */
export function vtimezone (name: string, from: Date, to: Date): string | null {
  const zone = IANAZone.create(name)
  if (!zone.isValid) return null
  const start = Math.floor(from.getTime() / DAY_MS) * DAY_MS - DAY_MS
  const end = to.getTime() + DAY_MS
  const observance = (ms: number, before: number, after: number): string[] => {
    const dst = DateTime.fromMillis(ms, { zone }).isInDST
    const kind = dst ? 'DAYLIGHT' : 'STANDARD'
    const abbr = abbreviation(name, ms, after)
    return [
      `BEGIN:${kind}`,
      `DTSTART:${localText(ms, before)}`,
      `TZOFFSETFROM:${offsetText(before)}`,
      `TZOFFSETTO:${offsetText(after)}`,
      ...(abbr !== undefined ? [`TZNAME:${escapeText(abbr)}`] : []),
      `END:${kind}`
    ]
  }
  let offset = offsetAt(zone, start)
  const onset = onsetOf(zone, start)
  const lines = ['BEGIN:VTIMEZONE', `TZID:${name}`, ...observance(onset.at, onset.before, offset)]
  for (let ms = start; ms < end; ms += DAY_MS) {
    const next = ms + DAY_MS
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
  /** the series of the events' occurrences (`seriesRecurrences`); an occurrence of another is a single VEVENT */
  series?: ReadonlyMap<number, SeriesRecurrence>
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
const RENDERING = 3

/** What a feed's text holds beside its events. */
export type FeedHead = Omit<FeedCalendar, 'events' | 'series'>

/**
 * The version of a feed's text: a digest of everything `renderCalendar` reads (the digest of its rows' keys and
 * versions, `feedDigest` in feeds.repository.ts; its name, host and web app), of the rendering and of the platform's
 * zone databases (process.versions.tz and moment-timezone's: the VTIMEZONE blocks come from them).
 */
export function feedVersion ({ name, host, appUrl }: FeedHead, rows: string): string {
  return crypto.createHash('sha256')
    .update(JSON.stringify([RENDERING, process.versions.tz ?? '', moment.tz.dataVersion, name, host, appUrl, rows]))
    .digest('base64url').slice(0, 32)
}

/** An occurrence shown in a feed at its position of a series. */
interface AtSlot { row: FeedEvent, slot: SeriesSlot, index: number }

const cancelledRow = (e: FeedEvent): boolean => e.cancelled_at !== null || e.is_deleted || e.unpublished
const endOf = (e: FeedEvent): number => (e.end_dt ?? e.start_dt).getTime()
/** Whether a row is at its slot's times (not moved). */
const atSlotTimes = ({ row, slot }: AtSlot): boolean =>
  row.start_dt.getTime() === slot.start.getTime() && endOf(row) === slot.end.getTime()
/** Whether two rows show the same title, description and place. */
const sameContent = (a: FeedEvent, b: FeedEvent): boolean =>
  a.title === b.title && a.description === b.description && a.address === b.address &&
  a.latitude === b.latitude && a.longitude === b.longitude && a.timezone === b.timezone

/** A wall time of a zone as iCalendar DATE-TIME text (`20270301T090000`). */
const wallText = (d: Date, zone: string): string => DateTime.fromJSDate(d, { zone }).toFormat("yyyyMMdd'T'HHmmss")
const utcText = (d: Date): string => DateTime.fromJSDate(d, { zone: 'UTC' }).toFormat("yyyyMMdd'T'HHmmss'Z'")

/**
 * The occurrences of a series a feed shows at positions of its rule, as a recurring entry: its first position and
 * its last, the rule positions between without a row (EXDATE), the row it takes its content from, and the rows that
 * differ from it (RECURRENCE-ID).
 */
function recurringEntry (rows: readonly AtSlot[], series: SeriesRecurrence) {
  const shown = new Set(rows.map(r => r.index))
  const from = rows[0]?.index ?? 0
  const until = rows[rows.length - 1]?.index ?? 0
  const exdates: Date[] = []
  for (let i = from; i <= until; i++) {
    const slot = series.slots[i]
    if (slot !== undefined && !slot.added && !shown.has(i)) exdates.push(slot.start)
  }
  const master = rows.find(r => !cancelledRow(r.row) && atSlotTimes(r)) ?? rows[0]
  const fromSlot = series.slots[from]
  const untilSlot = series.slots[until]
  if (master === undefined || fromSlot === undefined || untilSlot === undefined) return undefined
  const overrides = rows.filter(r => cancelledRow(r.row) || !atSlotTimes(r) || !sameContent(r.row, master.row))
  return { from: fromSlot, until: untilSlot, exdates, master, overrides, rows: new Set(rows.map(r => r.row)) }
}

type RecurringEntry = NonNullable<ReturnType<typeof recurringEntry>>

/** The recurring entry of each series among a feed's rows (`recurringEntry`), by series. */
function recurringEntries (
  events: readonly FeedEvent[],
  series: ReadonlyMap<number, SeriesRecurrence> | undefined
): Map<number, RecurringEntry> {
  const bySeries = new Map<number, Map<number, AtSlot>>()
  for (const row of events) {
    const s = row.series_id === null ? undefined : series?.get(row.series_id)
    const slot = row.series_index === null ? undefined : s?.slots[row.series_index]
    // an added date is written on its own (see the head of this file)
    if (s === undefined || slot === undefined || slot.added || row.series_index === null) continue
    const at: AtSlot = { row, slot, index: row.series_index }
    // a deleted row holds its position only where it was (a rule change may give the position another date)
    if (row.is_deleted && !atSlotTimes(at)) continue
    const group = bySeries.get(s.id) ?? new Map<number, AtSlot>()
    // one row a position: a live row before a deleted one (the others are written on their own)
    const other = group.get(at.index)
    if (other === undefined || (other.row.is_deleted && !row.is_deleted)) group.set(at.index, at)
    bySeries.set(s.id, group)
  }
  const out = new Map<number, RecurringEntry>()
  for (const [id, group] of bySeries) {
    const s = series?.get(id)
    const entry = s === undefined ? undefined : recurringEntry([...group.values()].sort((a, b) => a.index - b.index), s)
    if (entry !== undefined) out.set(id, entry)
  }
  return out
}

/** The feed as iCalendar text (CRLF lines folded at 75 octets, the last one ended by CRLF too). */
export function renderCalendar ({ name, host, appUrl, events, series }: FeedCalendar): string {
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
  const entries = recurringEntries(events, series)
  // a recurring entry's positions (its first, its last, its EXDATEs) need their zone's offsets too
  for (const [id, entry] of entries) {
    const zone = zoneOf(series?.get(id)?.timezone ?? 'UTC')
    const span = spans.get(zone) ?? { from: entry.from.start, to: entry.until.end }
    if (entry.from.start < span.from) span.from = entry.from.start
    if (entry.until.end > span.to) span.to = entry.until.end
    spans.set(zone, span)
  }
  const cal = ical({ prodId: PROD_ID, name: escapeText(name) })
  cal.timezone({
    name: null,
    generator: zone => {
      const span = spans.get(zone)
      return span === undefined ? null : vtimezone(zone, span.from, span.to)
    }
  })
  const url = (e: FeedEvent): string => `${appUrl}/events/${e.id}`
  const content = (e: FeedEvent, zone: string) => {
    const geo = e.latitude !== null && e.longitude !== null ? { lat: e.latitude, lon: e.longitude } : undefined
    return {
      timezone: zone,
      summary: e.title,
      ...(e.description !== null && e.description !== '' ? { description: e.description } : {}),
      ...(e.address !== null && e.address !== ''
        ? { location: { title: e.address, ...(geo !== undefined ? { geo } : {}) } }
        : {}),
      url: url(e),
      status: cancelledRow(e) ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED
    }
  }
  const single = (e: FeedEvent, uid: string, recurrenceId?: Date) => {
    const zone = zoneOf(e.timezone)
    cal.createEvent({
      ...content(e, zone),
      id: uid,
      sequence: e.revision,
      stamp: e.updated_at,
      created: e.created_at,
      lastModified: e.updated_at,
      start: DateTime.fromJSDate(e.start_dt, { zone }),
      ...(e.end_dt !== null && e.end_dt > e.start_dt ? { end: DateTime.fromJSDate(e.end_dt, { zone }) } : {}),
      ...(recurrenceId !== undefined ? { recurrenceId: DateTime.fromJSDate(recurrenceId, { zone }) } : {})
    })
  }

  const written = new Set<number>()
  for (const e of events) {
    const s = e.series_id === null ? undefined : series?.get(e.series_id)
    const entry = s === undefined ? undefined : entries.get(s.id)
    if (s === undefined || entry === undefined || !entry.rows.has(e)) {
      single(e, e.ical_uid ?? `event-${e.id}@${host}`)
      continue
    }
    if (written.has(s.id)) continue
    written.add(s.id)
    const uid = s.uid ?? `series-${s.id}@${host}`
    const zone = zoneOf(s.timezone)
    const rows = [...entry.rows]
    // UNTIL is inclusive and in whole seconds: the last start's second, rounded up
    const lines = [`RRULE:${s.rrule};UNTIL=${utcText(new Date(Math.ceil(entry.until.start.getTime() / 1000) * 1000))}`]
    const dates = (kind: string, ds: Date[]) => {
      if (ds.length > 0) lines.push(`${kind};TZID=${zone}:${ds.map(d => wallText(d, zone)).join(',')}`)
    }
    dates('EXDATE', entry.exdates)
    cal.createEvent({
      ...content(entry.master.row, zone),
      status: ICalEventStatus.CONFIRMED,
      id: uid,
      sequence: Math.max(...rows.map(r => r.revision)),
      stamp: new Date(Math.max(...rows.map(r => r.updated_at.getTime()))),
      created: new Date(Math.min(...rows.map(r => r.created_at.getTime()))),
      lastModified: new Date(Math.max(...rows.map(r => r.updated_at.getTime()))),
      start: DateTime.fromJSDate(entry.from.start, { zone }),
      ...(entry.from.end > entry.from.start ? { end: DateTime.fromJSDate(entry.from.end, { zone }) } : {}),
      repeating: lines.join('\r\n')
    })
    for (const o of entry.overrides) single(o.row, uid, o.slot.start)
  }
  // ical-generator ends the text without the CRLF that ends every content line
  return `${cal.toString()}\r\n`
}

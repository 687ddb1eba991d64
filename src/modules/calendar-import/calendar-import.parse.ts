/**
 * The reading of an iCalendar file (RFC 5545) for the import (docs/calendar-import.md): the bytes checked (UTF-8, no
 * NUL), the content lines scanned for their line numbers and structure, the file parsed by ical.js (its parser
 * only: values, escapes, parameters; never its recurrence expansion), and each VEVENT read into a `CalendarEvent`
 * with its instants, time zone and the line of each property. Pure: no database. The rules of what becomes an
 * event or a series, and the writing, are calendar-import.rules.ts and calendar-import.service.ts.
 *
 * Lines are physical lines of the file (1 is the first; `\r\n`, `\n` and a lone `\r` end one); a folded property
 * (RFC 5545 3.1) is named by the line it starts on. Every problem of the file is a 400 naming its line
 * (`body.line[<n>]`, the message starting `line <n>`), or `body` when it has none.
 */
import ICAL from 'ical.js'
import { DateTime } from 'luxon'
import rrule from 'rrule'
import { ApiError, error400BadRequest, fieldError } from '../../platform/http/errors.ts'
import { isTimezone } from '../../platform/http/validation.ts'
import { ICS_MAX_EVENTS, UID_MAX } from './calendar-import.schemas.ts'
import { forEachLine, utf8OrBadLine, withoutBom } from '../../platform/http/text-lines.ts'

const { RRule } = rrule

/** A value of the file and the line it was read from. */
export interface Located<T> {
  value: T
  line: number
}

/** One VEVENT of the file, read. */
export interface CalendarEvent {
  uid: string
  /** the line of its BEGIN:VEVENT */
  line: number
  /** the first line of each of its properties, by upper-case name (SUMMARY, DTSTART, RRULE …) */
  lines: ReadonlyMap<string, number>
  /** SUMMARY (undefined: absent) */
  title: string | undefined
  /** DESCRIPTION (undefined: absent) */
  description: string | undefined
  /** LOCATION (undefined: absent) */
  address: string | undefined
  /** GEO (undefined: absent) */
  geo: { latitude: number, longitude: number } | undefined
  /** DTSTART as an instant (undefined: absent, which only an override may be) */
  start: Date | undefined
  /** DTEND, or DTSTART + DURATION, or DTSTART (a date: the next day); undefined without DTSTART */
  end: Date | undefined
  /** whether DTEND or DURATION was given (an override without either keeps the series' length) */
  hasEnd: boolean
  /** the IANA zone of DTSTART, or the calendar's (dates, floating times), or UTC (see `notes`) */
  timezone: string
  /** DTSTART is a date: an all-day event */
  allDay: boolean
  /** DTSTART was written in UTC (`Z`) */
  utc: boolean
  /** STATUS:CANCELLED */
  cancelled: boolean
  /** the RRULE value as written (undefined: not recurring) */
  rrule: Located<string> | undefined
  rdates: Array<Located<Date>>
  exdates: Array<Located<Date>>
  /** RECURRENCE-ID: the instance of a recurring VEVENT (of the same UID) this one overrides */
  recurrenceId: (Located<Date> & { range: boolean }) | undefined
  /** a property the import cannot represent (EXRULE): the VEVENT is skipped with this reason */
  unsupported: string | undefined
  /** what the report says of how it was read (a zone that is not IANA, a floating time) */
  notes: string[]
}

export interface ParsedCalendar {
  events: CalendarEvent[]
  /** X-WR-TIMEZONE when it is an IANA zone, else UTC: where dates and floating times are read */
  zone: string
}

/** The location of a line of the file in an error. */
export const lineLocation = (line: number): string => `body.line[${line}]`

/** A 400 naming a line of the file. */
export const lineError = (line: number, message: string, detail = 'the calendar cannot be read'): ApiError =>
  error400BadRequest(detail, [fieldError(lineLocation(line), `line ${line}: ${message}`)])

const bodyError = (message: string): ApiError =>
  error400BadRequest('the calendar cannot be read', [fieldError('body', message)])

/**
 * The text of a calendar's bytes: a leading UTF-8 BOM dropped, then a 400 naming the line of the first NUL character
 * (PostgreSQL text cannot hold one) or byte that is not UTF-8.
 */
export function decodeCalendar (raw: Buffer): string {
  const bytes = withoutBom(raw)
  const nul = bytes.indexOf(0)
  if (nul >= 0) {
    forEachLine(bytes, (line, start, end) => {
      if (nul >= start && nul <= end) throw lineError(line, 'holds a NUL character')
    })
  }
  const decoded = utf8OrBadLine(bytes)
  if ('badLine' in decoded) throw lineError(decoded.badLine, 'is not UTF-8 text (the file must be encoded in UTF-8)')
  return decoded.text
}

/** A content line (RFC 5545 3.1) unfolded: the line it starts on, its name, its value as written. */
interface ContentLine {
  line: number
  name: string
  value: string
  text: string
}

const NAME = /^[A-Za-z0-9-]+/
/** Components nest at most this deep (VCALENDAR › VEVENT › VALARM is 3). */
const MAX_DEPTH = 8

/** The content lines of the text, unfolded, each checked to be `NAME[;params]:value` (400 naming the line). */
function contentLines (text: string): ContentLine[] {
  const out: ContentLine[] = []
  const physical = text.split(/\r\n|\n|\r/)
  let current: { line: number, text: string } | undefined
  const close = (): void => {
    if (current === undefined) return
    const { line, text: t } = current
    current = undefined
    const name = NAME.exec(t)?.[0]
    let colon = -1
    if (name !== undefined && (t[name.length] === ':' || t[name.length] === ';')) {
      let quoted = false
      for (let i = name.length; i < t.length; i++) {
        if (t[i] === '"') quoted = !quoted
        else if (t[i] === ':' && !quoted) { colon = i; break }
      }
    }
    if (name === undefined || colon < 0) {
      throw lineError(line, `expected a property NAME:value, got "${t.length > 60 ? `${t.slice(0, 60)}…` : t}"`)
    }
    out.push({ line, name: name.toUpperCase(), value: t.slice(colon + 1), text: t })
  }
  for (const [i, raw] of physical.entries()) {
    if ((raw.startsWith(' ') || raw.startsWith('\t')) && current !== undefined) {
      current.text += raw.slice(1)
      continue
    }
    close()
    if (raw.trim() !== '') current = { line: i + 1, text: raw }
  }
  close()
  return out
}

/** The VEVENTs of the calendar as scanned: the line of BEGIN:VEVENT and its own content lines (not its alarms'). */
interface ScannedEvent {
  line: number
  props: ContentLine[]
}

/** Checks the nesting of BEGIN and END (one VCALENDAR) and collects its VEVENTs' lines (400 naming the line). */
function scan (lines: ContentLine[]): { events: ScannedEvent[], lines: ContentLine[] } {
  const stack: Array<{ name: string, line: number }> = []
  const events: ScannedEvent[] = []
  let calendars = 0
  for (const cl of lines) {
    if (cl.name === 'BEGIN') {
      const name = cl.value.trim().toUpperCase()
      if (stack.length === 0) {
        if (name !== 'VCALENDAR') throw lineError(cl.line, `expected BEGIN:VCALENDAR, got BEGIN:${name}`)
        if (++calendars > 1) throw lineError(cl.line, 'expected one VCALENDAR in the file')
      }
      if (name === 'VEVENT' && stack.length === 1) events.push({ line: cl.line, props: [] })
      if (stack.length >= MAX_DEPTH) throw lineError(cl.line, `components nested deeper than ${MAX_DEPTH}`)
      stack.push({ name, line: cl.line })
    } else if (cl.name === 'END') {
      const name = cl.value.trim().toUpperCase()
      const open = stack.pop()
      if (open === undefined) throw lineError(cl.line, `END:${name} closes nothing`)
      if (open.name !== name) {
        throw lineError(cl.line, `END:${name} does not close BEGIN:${open.name} of line ${open.line}`)
      }
    } else if (stack.length === 0) {
      throw lineError(cl.line, 'expected BEGIN:VCALENDAR: this is not an iCalendar file')
    } else if (stack.length === 2 && stack[1]?.name === 'VEVENT') {
      events.at(-1)?.props.push(cl)
    }
  }
  const open = stack.at(-1)
  if (open !== undefined) throw lineError(open.line, `BEGIN:${open.name} is not closed (END:${open.name})`)
  if (calendars === 0) throw bodyError('expected an iCalendar file (BEGIN:VCALENDAR … END:VCALENDAR)')
  return { events, lines }
}

/** The IANA zone a name stands for, in its canonical spelling (`europe/berlin` → `Europe/Berlin`), or undefined. */
export function ianaZone (name: string | undefined): string | undefined {
  if (name === undefined || name.trim() === '' || !isTimezone(name.trim())) return undefined
  return new Intl.DateTimeFormat('en-US', { timeZone: name.trim() }).resolvedOptions().timeZone
}

/**
 * The IANA zone of a TZID: the TZID itself, the X-LIC-LOCATION of its VTIMEZONE (Mozilla's calendars), or the
 * trailing `Area/City` of a path-like TZID (`/mozilla.org/20050126_1/Europe/Berlin`); undefined otherwise (Outlook's
 * `W. Europe Standard Time`).
 */
function ianaOfTzid (tzid: string, vtimezone: ICAL.Component | undefined): string | undefined {
  const location = vtimezone?.getFirstProperty('x-lic-location')?.toJSON()[3]
  const own = ianaZone(tzid) ?? ianaZone(typeof location === 'string' ? location : undefined)
  if (own !== undefined) return own
  const parts = tzid.split('/').filter(p => p !== '')
  for (const n of [3, 2]) {
    if (parts.length > n) {
      const zone = ianaZone(parts.slice(-n).join('/'))
      if (zone !== undefined) return zone
    }
  }
  return undefined
}

/** A wall time as floating epoch milliseconds (its UTC fields are the wall clock). */
const floatingOf = (t: ICAL.Time): number => Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second)

/**
 * The UTC offset (ms) of a wall time (floating ms) under a VTIMEZONE of the file: the TZOFFSETTO of the observance
 * (STANDARD, DAYLIGHT) whose latest onset (DTSTART, its RRULE expanded by rrule.js, its RDATEs) is at or before the
 * wall time; before any onset, the TZOFFSETFROM of the earliest.
 */
function vtimezoneOffset (vtimezone: ICAL.Component, local: number): number {
  let best: { onset: number, offset: number } | undefined
  let earliest: { onset: number, offset: number } | undefined
  for (const o of vtimezone.getAllSubcomponents()) {
    if (o.name !== 'standard' && o.name !== 'daylight') continue
    const start = o.getFirstPropertyValue('dtstart')
    const to = o.getFirstPropertyValue('tzoffsetto')
    const from = o.getFirstPropertyValue('tzoffsetfrom')
    if (!(start instanceof ICAL.Time) || !(to instanceof ICAL.UtcOffset)) continue
    const first = floatingOf(start)
    const onsets = [first]
    const rule = o.getFirstPropertyValue('rrule')
    if (rule instanceof ICAL.Recur) {
      // a zone changes its offset at most a few times a year: a finer rule would have rrule.js count for ever
      if (rule.freq !== 'YEARLY') throw new Error(`expected its observances to recur yearly, got FREQ=${rule.freq}`)
      const latest = new RRule({ ...RRule.parseString(rule.toString()), dtstart: new Date(first) })
        .before(new Date(local), true)
      if (latest !== null) onsets.push(latest.getTime())
    }
    for (const p of o.getAllProperties('rdate')) {
      for (const v of p.getValues()) if (v instanceof ICAL.Time) onsets.push(floatingOf(v))
    }
    const onset = Math.max(...onsets.filter(t => t <= local))
    if (Number.isFinite(onset) && (best === undefined || onset > best.onset)) best = { onset, offset: to.toSeconds() }
    if (earliest === undefined || first < earliest.onset) {
      earliest = { onset: first, offset: (from instanceof ICAL.UtcOffset ? from : to).toSeconds() }
    }
  }
  return ((best ?? earliest)?.offset ?? 0) * 1000
}

/** How the times of a VEVENT are read: the calendar's zone and its VTIMEZONEs. */
interface TimeContext {
  zone: string
  vtimezones: ReadonlyMap<string, ICAL.Component>
}

/** A DATE or DATE-TIME value read as an instant, with the zone it was written in. */
interface ReadTime {
  at: Date
  allDay: boolean
  utc: boolean
  /** the IANA zone it names, the calendar's (dates, floating), or undefined (a TZID that is not IANA: see `note`) */
  zone: string | undefined
  note?: string
}

function readTime (prop: ICAL.Property, t: ICAL.Time, line: number, ctx: TimeContext): ReadTime {
  const name = prop.name.toUpperCase()
  const fields = { year: t.year, month: t.month, day: t.day, hour: t.hour, minute: t.minute, second: t.second }
  const invalid = (): ApiError =>
    lineError(line, `${name}: expected a date (20270301) or a date-time (20270301T090000)`)
  if (!Object.values(fields).every(Number.isInteger) || t.year < 1 || t.year > 9999) throw invalid()
  const at = (zone: string): Date => {
    const d = DateTime.fromObject(t.isDate ? { year: t.year, month: t.month, day: t.day } : fields, { zone })
    if (!d.isValid || d.year !== t.year || d.month !== t.month || d.day !== t.day) throw invalid()
    return d.toJSDate()
  }
  if (t.isDate) return { at: at(ctx.zone), allDay: true, utc: false, zone: ctx.zone }
  if (t.zone === ICAL.Timezone.utcTimezone) return { at: at('UTC'), allDay: false, utc: true, zone: undefined }
  const param = prop.getFirstParameter('tzid')
  const tzid = typeof param === 'string' && param !== '' ? param : undefined
  if (tzid === undefined) {
    return {
      at: at(ctx.zone),
      allDay: false,
      utc: false,
      zone: ctx.zone,
      note: `${name} has no time zone (a floating time): read in ${ctx.zone}`
    }
  }
  const vtimezone = ctx.vtimezones.get(tzid)
  const iana = ianaOfTzid(tzid, vtimezone)
  if (iana !== undefined) return { at: at(iana), allDay: false, utc: false, zone: iana }
  if (vtimezone === undefined) {
    throw lineError(line, `${name}: TZID "${tzid}" is neither an IANA time zone nor a VTIMEZONE of the file`)
  }
  at('UTC')
  const local = floatingOf(t)
  let offset: number
  try {
    offset = vtimezoneOffset(vtimezone, local)
  } catch (err) {
    throw lineError(line, `${name}: the VTIMEZONE of TZID "${tzid}" cannot be read: ${(err as Error).message}`)
  }
  return {
    at: new Date(local - offset),
    allDay: false,
    utc: false,
    zone: undefined,
    note: `TZID "${tzid}" is not an IANA time zone: the times are read with the file's VTIMEZONE, the event is in UTC`
  }
}

/** A property's values of one VEVENT and the line each property starts on. */
class EventProps {
  private readonly lineOf = new Map<string, number[]>()
  constructor (private readonly component: ICAL.Component, scanned: ScannedEvent) {
    for (const p of scanned.props) {
      const list = this.lineOf.get(p.name) ?? []
      list.push(p.line)
      this.lineOf.set(p.name, list)
    }
  }

  /** The line of the i-th property of that name (the VEVENT's own line when unknown). */
  line (name: string, i = 0): number | undefined {
    return this.lineOf.get(name)?.[i]
  }

  all (name: string): Array<{ prop: ICAL.Property, line: number }> {
    return this.component.getAllProperties(name.toLowerCase())
      .map((prop, i) => ({ prop, line: this.line(name, i) ?? 0 }))
  }

  first (name: string): { prop: ICAL.Property, line: number } | undefined {
    return this.all(name)[0]
  }

  firstLines (): Map<string, number> {
    return new Map([...this.lineOf].map(([name, lines]) => [name, lines[0] ?? 0]))
  }
}

const TIME_PROPERTIES = new Set(['DTSTART', 'DTEND', 'RECURRENCE-ID', 'RDATE', 'EXDATE'])

/** The values of a property, or the 400 naming its line when ical.js cannot read them (it reads them lazily). */
function valuesOf (p: { prop: ICAL.Property, line: number }): unknown[] {
  try {
    return p.prop.getValues()
  } catch (err) {
    const name = p.prop.name.toUpperCase()
    const expected = TIME_PROPERTIES.has(name) ? 'expected a date (20270301) or a date-time (20270301T090000): ' : ''
    throw lineError(p.line, `${name}: ${expected}${(err as Error).message}`)
  }
}

const firstValue = (p: { prop: ICAL.Property, line: number }): unknown => valuesOf(p)[0]

const textOf = (p: { prop: ICAL.Property, line: number } | undefined): string | undefined => {
  const v = p === undefined ? undefined : firstValue(p)
  return v === undefined || v === null ? undefined : String(v)
}

/** The dates of RDATE or EXDATE properties (a PERIOD by its start), each with its line. */
function datesOf (list: Array<{ prop: ICAL.Property, line: number }>, ctx: TimeContext): Array<Located<Date>> {
  const out: Array<Located<Date>> = []
  for (const { prop, line } of list) {
    for (const v of valuesOf({ prop, line })) {
      const t = v instanceof ICAL.Period ? v.start : v
      if (!(t instanceof ICAL.Time)) throw lineError(line, `${prop.name.toUpperCase()}: expected dates or date-times`)
      out.push({ value: readTime(prop, t, line, ctx).at, line })
    }
  }
  return out
}

/** Reads one VEVENT (400 naming the line of what cannot be read). */
function readEvent (component: ICAL.Component, scanned: ScannedEvent, raw: ContentLine[], ctx: TimeContext) {
  const props = new EventProps(component, scanned)
  const notes: string[] = []
  const uid = textOf(props.first('UID'))?.trim()
  if (uid === undefined || uid === '') throw lineError(scanned.line, 'the VEVENT has no UID (RFC 5545 requires one)')
  if (uid.length > UID_MAX) {
    throw lineError(props.line('UID') ?? scanned.line, `UID: expected at most ${UID_MAX} characters`)
  }
  const rrules = props.all('RRULE')
  if (rrules.length > 1) throw lineError(rrules[1]?.line ?? scanned.line, 'RRULE: a VEVENT takes one rule')
  const rruleLine = rrules[0]?.line
  const rruleText = rruleLine === undefined ? undefined : raw.find(l => l.line === rruleLine)?.value.trim()
  const recurring = rruleText !== undefined

  let start: ReadTime | undefined
  const dtstart = props.first('DTSTART')
  const startValue = dtstart === undefined ? undefined : firstValue(dtstart)
  if (dtstart !== undefined) {
    if (!(startValue instanceof ICAL.Time)) throw lineError(dtstart.line, 'DTSTART: expected a date or a date-time')
    start = readTime(dtstart.prop, startValue, dtstart.line, ctx)
    if (start.note !== undefined) notes.push(start.note)
    if (start.allDay) notes.push(`all day: from 00:00 to 24:00 in ${ctx.zone}`)
  }
  let end: Date | undefined
  const dtend = props.first('DTEND')
  const duration = props.first('DURATION')
  if (start !== undefined) {
    const s = start
    if (dtend !== undefined) {
      const v = firstValue(dtend)
      if (!(v instanceof ICAL.Time)) throw lineError(dtend.line, 'DTEND: expected a date or a date-time')
      end = readTime(dtend.prop, v, dtend.line, ctx).at
      // a date's end is exclusive: an end on or before the start is read as the one day
      if (s.allDay && end.getTime() <= s.at.getTime()) end = undefined
      else if (end.getTime() < s.at.getTime()) throw lineError(dtend.line, 'DTEND is before DTSTART')
    } else if (duration !== undefined) {
      const d = firstValue(duration)
      if (!(d instanceof ICAL.Duration) || d.isNegative) {
        throw lineError(duration.line, 'DURATION: expected a positive duration such as PT1H30M')
      }
      end = s.allDay
        ? DateTime.fromJSDate(s.at, { zone: ctx.zone }).plus({ days: d.weeks * 7 + d.days }).toJSDate()
        : new Date(s.at.getTime() + d.toSeconds() * 1000)
    }
    end ??= s.allDay ? DateTime.fromJSDate(s.at, { zone: ctx.zone }).plus({ days: 1 }).toJSDate() : s.at
  }

  let recurrenceId: CalendarEvent['recurrenceId']
  const rid = props.first('RECURRENCE-ID')
  if (rid !== undefined) {
    const v = firstValue(rid)
    if (!(v instanceof ICAL.Time)) throw lineError(rid.line, 'RECURRENCE-ID: expected a date or a date-time')
    const range = String(rid.prop.getFirstParameter('range') ?? '').toUpperCase() === 'THISANDFUTURE'
    recurrenceId = { value: readTime(rid.prop, v, rid.line, ctx).at, line: rid.line, range }
  }
  if (start === undefined && recurrenceId === undefined) {
    throw lineError(scanned.line, 'the VEVENT has no DTSTART')
  }

  let geo: CalendarEvent['geo']
  const geoProp = props.first('GEO')
  if (geoProp !== undefined) {
    const v = firstValue(geoProp)
    const [latitude, longitude] = Array.isArray(v) ? v.map(Number) : []
    if (latitude === undefined || longitude === undefined || !Number.isFinite(latitude) ||
      !Number.isFinite(longitude) || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) {
      throw lineError(geoProp.line, 'GEO: expected latitude;longitude within ±90 and ±180')
    }
    geo = { latitude, longitude }
  }

  // a UTC time recurs on UTC's clock (RFC 5545); a single event shows in the calendar's zone
  const timezone = start === undefined
    ? ctx.zone
    : start.zone ?? (start.utc && !recurring ? ctx.zone : 'UTC')
  if (start?.utc === true && recurring) notes.push('DTSTART is in UTC (Z): the series recurs on UTC\'s clock')
  const event: CalendarEvent = {
    uid,
    line: scanned.line,
    lines: props.firstLines(),
    title: textOf(props.first('SUMMARY')),
    description: textOf(props.first('DESCRIPTION')),
    address: textOf(props.first('LOCATION')),
    geo,
    start: start?.at,
    end,
    hasEnd: dtend !== undefined || duration !== undefined,
    timezone,
    allDay: start?.allDay ?? false,
    utc: start?.utc ?? false,
    cancelled: textOf(props.first('STATUS'))?.trim().toUpperCase() === 'CANCELLED',
    rrule: rruleText === undefined || rruleLine === undefined ? undefined : { value: rruleText, line: rruleLine },
    rdates: datesOf(props.all('RDATE'), ctx),
    exdates: datesOf(props.all('EXDATE'), ctx),
    recurrenceId,
    unsupported: props.all('EXRULE').length > 0
      ? 'EXRULE (RFC 2445) is not supported: its dates cannot be kept'
      : undefined,
    notes: [...new Set(notes)]
  }
  return event
}

/** The line of an ical.js parse error: the content line its message quotes, else none. */
function parserErrorLine (err: Error, lines: ContentLine[]): number | undefined {
  const quoted = /"([^"]*)"\s*$/.exec(err.message)?.[1]
  return quoted === undefined ? undefined : lines.find(l => l.text === quoted)?.line
}

/**
 * Reads a calendar's text: its structure and every VEVENT (at most ICS_MAX_EVENTS), or a 400 naming the line (or
 * `body`) of the first problem.
 */
export function parseCalendar (text: string): ParsedCalendar {
  const count = (text.match(/^BEGIN:VEVENT[ \t]*$/gim) ?? []).length
  if (count > ICS_MAX_EVENTS) {
    throw error400BadRequest(`the calendar has ${count} VEVENTs; nothing was imported`, [
      fieldError('body', `expected at most ${ICS_MAX_EVENTS} VEVENTs, got ${count}`, count)
    ])
  }
  const lines = contentLines(text)
  const scanned = scan(lines)
  let calendar: ICAL.Component
  try {
    calendar = new ICAL.Component(ICAL.parse(text) as unknown[])
  } catch (err) {
    const line = parserErrorLine(err as Error, lines)
    const message = (err as Error).message
    throw line === undefined ? bodyError(`not an iCalendar file: ${message}`) : lineError(line, message)
  }
  const declared = calendar.getFirstProperty('x-wr-timezone')?.toJSON()[3]
  const zone = ianaZone(typeof declared === 'string' ? declared : undefined) ?? 'UTC'
  const vtimezones = new Map<string, ICAL.Component>()
  for (const vt of calendar.getAllSubcomponents('vtimezone')) {
    const tzid = vt.getFirstPropertyValue('tzid')
    if (typeof tzid === 'string') vtimezones.set(tzid, vt)
  }
  const components = calendar.getAllSubcomponents('vevent')
  if (components.length !== scanned.events.length) {
    throw bodyError(`expected ${scanned.events.length} VEVENTs, ical.js read ${components.length}`)
  }
  const events = components.map((c, i) => readEvent(c, scanned.events[i] as ScannedEvent, scanned.lines,
    { zone, vtimezones }))
  return { events, zone }
}

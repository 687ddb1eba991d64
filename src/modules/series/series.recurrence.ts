/**
 * The recurrence engine: pure functions from an anchor (start, end, time zone) and a rule to the
 * occurrences of a series. A rule is an RFC 5545 RRULE (`rrule`) or a seed rule (freq, interval, repeat_days,
 * ends_on), which stands for an RRULE (`seedParts`, series.rrule.ts); either is expanded by rrule.js (a port of
 * python-dateutil's rrule) on the wall clock of the series' IANA time zone, and each wall time is then placed in
 * the zone (Luxon), so a 09:00 Europe/Berlin meeting stays at 09:00 local in summer and in winter.
 *
 * Decisions (docs/series.md):
 * - Position 0 is always the anchor, whatever the rule says of its day; later positions follow the rule.
 * - A wall time that does not exist on a day (the spring-forward gap) moves forward by the gap
 *   (02:30 → 03:30); an ambiguous one (fall back) takes the zone's standard-time instant.
 * - COUNT (`after_n`: `end_count`) counts the anchor; UNTIL and `on_date` (the end date's whole local day,
 *   in the series zone) are inclusive. RDATEs join the rule's dates and are not counted by COUNT.
 * - Every occurrence lasts as long as the anchor (elapsed time).
 */
import { DateTime, Settings } from 'luxon'
import rrule, { type Options } from 'rrule'
import { formatRrule, parseRrule, seedParts, untilInstant, type RruleParts } from './series.rrule.ts'

const { RRule } = rrule

/** `rrule`: the rule is the series' RFC 5545 `rrule` text; the others are the seed's own rules. */
export const FREQS = ['daily', 'weekly', 'monthly', 'custom', 'rrule'] as const
export type Freq = typeof FREQS[number]
export const ENDS_ON = ['never', 'on_date', 'after_n'] as const
export type EndsOn = typeof ENDS_ON[number]

export interface Rule {
  freq: Freq
  interval: number
  /** ISO weekdays 1 (Monday) … 7 (Sunday); used by weekly and custom */
  repeatDays: readonly number[] | null
  endsOn: EndsOn
  endCount: number | null
  endDate: Date | null
  /** the RFC 5545 rule (freq `rrule`): it decides the dates, the fields above mirror its INTERVAL and end */
  rrule?: string | null | undefined
  /** dates added to the rule's (RDATE) */
  rdates?: readonly Date[] | undefined
}

export interface Anchor {
  start: Date
  /** elapsed length of each occurrence in milliseconds */
  durationMs: number
  timezone: string
}

export interface Occurrence {
  /** position in the rule: 0 = the anchor */
  index: number
  start: Date
  end: Date
}

export interface ExpandOptions {
  /** stop before the first start at or after this instant (the rolling window) */
  until?: Date | undefined
  /** stop after this many occurrences (the caller checks whether the rule had more) */
  max: number
  /** stop before the first start at or after this instant whatever the rule (the longest span looked at) */
  horizon?: Date | undefined
}

/** Whether stepping `interval` days from a weekday ever lands on one of `days` (else a custom rule never repeats). */
export function customReachable (weekday: number, interval: number, days: readonly number[]): boolean {
  for (let k = 1; k <= 7; k++) if (days.includes(((weekday - 1 + k * interval) % 7) + 1)) return true
  return false
}

const DAY_MS = 86_400_000

/**
 * The rrule.js options of a rule: its RFC 5545 text (`rule.rrule`, or the text a seed rule stands for), without
 * COUNT and UNTIL (`expand` applies them itself, on instants).
 */
function ruleParts (rule: Rule, first: DateTime): RruleParts {
  if (rule.rrule !== undefined && rule.rrule !== null) return parseRrule(rule.rrule)
  const end = rule.endsOn === 'after_n' && rule.endCount !== null
    ? { count: rule.endCount }
    : rule.endsOn === 'on_date' && rule.endDate !== null
      ? { until: DateTime.fromJSDate(rule.endDate, { zone: first.zone }).endOf('day').toJSDate() }
      : null
  return seedParts({
    freq: rule.freq === 'rrule' ? 'daily' : rule.freq,
    interval: rule.interval,
    repeatDays: rule.repeatDays,
    end
  }, first.day)
}

/** The RFC 5545 rule (RRULE value) of a rule: its own text, or the one its seed fields stand for. */
export function rruleText (anchor: Pick<Anchor, 'start' | 'timezone'>, rule: Rule): string {
  return formatRrule(ruleParts(rule, DateTime.fromJSDate(anchor.start, { zone: anchor.timezone })))
}

/** A local wall time as a Date whose UTC fields are those of the wall clock (what rrule.js calls floating). */
const floating = (dt: DateTime): Date =>
  new Date(Date.UTC(dt.year, dt.month - 1, dt.day, dt.hour, dt.minute, dt.second, dt.millisecond))

/**
 * The instant of a local wall time (as floating epoch milliseconds) in the anchor's zone: what
 * `DateTime.fromObject({ year, month, day, hour, … }, { zone }).toMillis()` answers, without building DateTimes
 * (thousands per series). Like Luxon, it guesses the offset in force now and corrects it by the zone's offset at
 * the guessed instant: a wall time in a spring-forward gap moves forward by the gap, an ambiguous one keeps the
 * guessed offset when it is one of its two.
 */
function instantOf (first: DateTime): (local: number) => number {
  const zone = first.zone
  const guess = zone.offset(Settings.now())
  return (local) => {
    // Luxon's fixOffset
    let utc = local - guess * 60_000
    const o2 = zone.offset(utc)
    if (o2 === guess) return utc
    utc -= (o2 - guess) * 60_000
    const o3 = zone.offset(utc)
    if (o2 === o3) return utc
    return local - Math.min(o2, o3) * 60_000
  }
}

/** rrule.js options of parts (COUNT and UNTIL left out) starting at a floating `dtstart`. */
function rruleOptions (parts: RruleParts, dtstart: Date): Partial<Options> {
  const { COUNT: _c, UNTIL: _u, ...rest } = parts
  return { ...RRule.parseString(formatRrule(rest)), dtstart, count: null, until: null, tzid: null }
}

/**
 * Whether a rule's days can ever come: its filters (BYMONTH, BYMONTHDAY, BYDAY, …) as a yearly rule, a superset
 * of its days, tried over one 400-year cycle of the Gregorian calendar (after which weekdays and dates repeat).
 * rrule.js looks for a rule's next day up to the year 9999, one period at a time: a daily rule on 30 February
 * would take some 10 s to say it has none (docs/series.md, "Bounds").
 */
export function everRecurs (parts: RruleParts, first: DateTime): boolean {
  const filters = [parts.BYMONTH, parts.BYWEEKNO, parts.BYYEARDAY, parts.BYMONTHDAY, parts.BYDAY]
  if (filters.every(f => f === undefined)) return true
  const ordinals = parts.BYDAY?.some(d => /\d/.test(d)) === true
  const superset: RruleParts = {
    FREQ: 'YEARLY',
    ...(parts.BYMONTH !== undefined
      ? { BYMONTH: parts.BYMONTH }
      : parts.FREQ === 'MONTHLY' && ordinals ? { BYMONTH: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] } : {}),
    ...(parts.BYWEEKNO !== undefined ? { BYWEEKNO: parts.BYWEEKNO } : {}),
    ...(parts.BYYEARDAY !== undefined ? { BYYEARDAY: parts.BYYEARDAY } : {}),
    ...(parts.BYMONTHDAY !== undefined ? { BYMONTHDAY: parts.BYMONTHDAY } : {}),
    ...(parts.BYDAY !== undefined ? { BYDAY: parts.BYDAY } : {}),
    ...(parts.WKST !== undefined ? { WKST: parts.WKST } : {})
  }
  // the same place in the 400-year cycle, 400 to 800 years before rrule.js stops (9999)
  const probe = first.set({ year: 9200 + (((first.year % 400) + 400) % 400) })
  return new RRule(rruleOptions(superset, floating(probe))).all((_d, i) => i < 1).length > 0
}

/**
 * The occurrences of a rule in order, the anchor first, bounded by the rule's end (COUNT counts the anchor; UNTIL
 * and an on_date end are inclusive), `until` and `max` (whichever comes first). The rule is expanded by rrule.js
 * on the wall clock of the series' zone and each wall time then placed in the zone (a wall time in a
 * spring-forward gap moves forward by the gap; an ambiguous one takes the zone's standard-time instant); RDATEs
 * join the rule's dates (not counted by COUNT, as in RFC 5545); every occurrence lasts as long as the anchor.
 *
 * @example
 *   expand({ start: new Date('2027-03-22T08:00:00Z'), durationMs: 3_600_000, timezone: 'Europe/Berlin' },
 *     { freq: 'rrule', rrule: 'FREQ=MONTHLY;BYDAY=-1FR;COUNT=10', interval: 1, repeatDays: null,
 *       endsOn: 'after_n', endCount: 10, endDate: null }, { max: 500 })
 */
export function expand (anchor: Anchor, rule: Rule, options: ExpandOptions): Occurrence[] {
  const zone = anchor.timezone
  const first = DateTime.fromJSDate(anchor.start, { zone })
  if (!first.isValid) throw new Error(`invalid time zone ${zone}`)
  const parts = ruleParts(rule, first)
  const max = Math.min(parts.COUNT ?? options.max, options.max)
  const until = Math.min(options.until?.getTime() ?? Infinity, options.horizon?.getTime() ?? Infinity)
  const last = parts.UNTIL === undefined ? Infinity : untilInstant(parts.UNTIL, zone).getTime()
  const starts: number[] = []
  const anchorMs = anchor.start.getTime()
  if (max <= 0 || anchorMs >= until || anchorMs > last) return []
  starts.push(anchorMs)
  const local = floating(first)
  const at = instantOf(first)
  const recurs = rule.rrule === undefined || rule.rrule === null
    ? rule.freq !== 'custom' || customReachable(first.weekday, rule.interval, rule.repeatDays ?? [])
    : everRecurs(parts, first)
  if (max > 1 && recurs) {
    new RRule(rruleOptions(parts, local)).all((d) => {
      if (d.getTime() <= local.getTime()) return true
      const start = at(d.getTime())
      if (start >= until || start > last) return false
      if (start > starts[starts.length - 1]!) starts.push(start)
      return starts.length < max
    })
  }
  const rdates = (rule.rdates ?? []).map(d => d.getTime()).filter(t => t > anchorMs && t < until)
  const all = rdates.length === 0 ? starts : [...new Set([...starts, ...rdates])].sort((a, b) => a - b)
  return all.slice(0, options.max).map((start, index) =>
    ({ index, start: new Date(start), end: new Date(start + anchor.durationMs) }))
}

/**
 * Whether the anchor is one of its rule's own dates (RFC 5545 wants DTSTART to be; position 0 is the anchor
 * whatever its day, so a rule written for it elsewhere, as in a feed, lists it as an added date when it is not).
 */
export function anchorOnRule (anchor: Anchor, rule: Rule): boolean {
  const first = DateTime.fromJSDate(anchor.start, { zone: anchor.timezone })
  const local = floating(first)
  const [d] = new RRule(rruleOptions(ruleParts(rule, first), local)).all((_d, i) => i < 1)
  return d !== undefined && d.getTime() === local.getTime()
}

/**
 * The local date of instants in a zone as a day number, for comparing and matching dates: equal
 * numbers for instants on the same local date, as `DateTime.fromJSDate(d, { zone })` dates them,
 * without building a DateTime per instant.
 */
export function localDays (zone: string): (d: Date) => number {
  const z = DateTime.fromMillis(0, { zone }).zone
  return (d) => {
    const t = d.getTime()
    return Math.floor((t + z.offset(t) * 60_000) / DAY_MS)
  }
}

/** Whether the rule yields more occurrences than `max` (ignoring any window). */
export function exceeds (anchor: Anchor, rule: Rule, max: number): boolean {
  return expand(anchor, rule, { max: max + 1 }).length > max
}

/** The local wall-clock time of an instant in a zone, `HH:mm:ss.SSS`. */
export const wallTime = (d: Date, zone: string): string => DateTime.fromJSDate(d, { zone }).toFormat('HH:mm:ss.SSS')

/** The ISO weekday (1 = Monday) of an instant in a zone. */
export const weekdayIn = (d: Date, zone: string): number => DateTime.fromJSDate(d, { zone }).weekday

/** Moves an instant by a wall-clock difference in a zone (days and times of day, not elapsed time). */
export function shiftWallClock (d: Date, zone: string, from: Date, to: Date): Date {
  const naive = (x: Date) => DateTime.fromJSDate(x, { zone }).setZone('UTC', { keepLocalTime: true })
  const delta = naive(to).diff(naive(from)).toMillis()
  return naive(d).plus({ milliseconds: delta }).setZone(zone, { keepLocalTime: true }).toJSDate()
}

/** An elapsed length as a PostgreSQL interval string: `01:30:00`, `1 day 02:00:00`. */
export function intervalText (ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000))
  const days = Math.floor(total / 86_400)
  const rest = total - days * 86_400
  const pad = (n: number) => String(n).padStart(2, '0')
  const hms = `${pad(Math.floor(rest / 3600))}:${pad(Math.floor((rest % 3600) / 60))}:${pad(rest % 60)}`
  return days === 0 ? hms : `${days} day${days === 1 ? '' : 's'} ${hms}`
}

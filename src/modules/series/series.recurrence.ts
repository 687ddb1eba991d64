/**
 * The recurrence engine: pure functions from an anchor (start, end, time zone) and a rule to the
 * occurrences of a series. Every date is computed on the wall clock of the series' IANA time zone
 * (Luxon), so a 09:00 Europe/Berlin meeting stays at 09:00 local in summer and in winter.
 *
 * Decisions (docs/series.md):
 * - Position 0 is always the anchor, whatever its weekday; later positions follow the rule.
 * - daily: every `interval` days. weekly: in every `interval`-th ISO week (Monday first) counted
 *   from the anchor's week, on each of `repeat_days`. custom: every `interval` days, kept only on
 *   `repeat_days`. monthly: the anchor's day of month every `interval` months; a month without that
 *   day gets its last day (the 31st → 30 April, 28/29 February), always computed from the anchor,
 *   so the series never drifts.
 * - A wall time that does not exist on a day (the spring-forward gap) moves forward by the gap
 *   (02:30 → 03:30); an ambiguous one (fall back) takes the zone's standard-time instant.
 * - `after_n`: at most `end_count` positions, the anchor included. `on_date`: positions whose local
 *   date (in the series zone) is on or before the local date of `end_date`.
 * - Every occurrence lasts as long as the anchor (elapsed time).
 */
import { DateTime, Settings } from 'luxon'

export const FREQS = ['daily', 'weekly', 'monthly', 'custom'] as const
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
}

/** Whether stepping `interval` days from a weekday ever lands on one of `days` (else a custom rule never repeats). */
export function customReachable (weekday: number, interval: number, days: readonly number[]): boolean {
  for (let k = 1; k <= 7; k++) if (days.includes(((weekday - 1 + k * interval) % 7) + 1)) return true
  return false
}

/**
 * A calendar date without zone, as a day number (days since 1970-01-01 in the proleptic
 * Gregorian calendar): the rule steps in whole days, weeks and months, so plain integer arithmetic
 * does it (the zone comes in only with `wallClock`).
 */
type Day = number

const DAY_MS = 86_400_000

const dayFrom = (year: number, month: number, day: number): Day => {
  const d = new Date(0)
  d.setUTCFullYear(year, month - 1, day)
  return Math.round(d.getTime() / DAY_MS)
}

const dayOf = (dt: DateTime): Day => dayFrom(dt.year, dt.month, dt.day)

/** The date of a day number: [year, month 1-12, day of month]. */
function dateOf (day: Day): [number, number, number] {
  const d = new Date(day * DAY_MS)
  return [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()]
}

/** ISO weekday of a day number: 1 (Monday) … 7 (Sunday); day 0 was a Thursday. */
const weekdayOf = (day: Day): number => ((((day + 3) % 7) + 7) % 7) + 1

const daysInMonth = (year: number, month: number): number => dateOf(dayFrom(year, month + 1, 0))[2]

/** The day `months` months after `day`, clamped to the last day of a shorter month (the 31st → 30 April). */
function plusMonths (day: Day, months: number): Day {
  const [year, month, dom] = dateOf(day)
  const m0 = month - 1 + months
  const y = year + Math.floor(m0 / 12)
  const m = (((m0 % 12) + 12) % 12) + 1
  return dayFrom(y, m, Math.min(dom, daysInMonth(y, m)))
}

/** Candidate days of the rule after the anchor's day, in increasing order (unbounded). */
function * laterDays (anchorDay: Day, rule: Rule): Generator<Day> {
  const days = [...new Set(rule.repeatDays ?? [])].sort((a, b) => a - b)
  switch (rule.freq) {
    case 'daily':
      for (let k = 1; ; k++) yield anchorDay + k * rule.interval
    case 'custom':
      if (!customReachable(weekdayOf(anchorDay), rule.interval, days)) return
      for (let k = 1; ; k++) {
        const d = anchorDay + k * rule.interval
        if (days.includes(weekdayOf(d))) yield d
      }
    case 'weekly': {
      if (days.length === 0) return
      const monday = anchorDay - (weekdayOf(anchorDay) - 1)
      for (let w = 0; ; w++) {
        const week = monday + 7 * w * rule.interval
        for (const wd of days) {
          const d = week + (wd - 1)
          if (d > anchorDay) yield d
        }
      }
    }
    case 'monthly':
      for (let k = 1; ; k++) yield plusMonths(anchorDay, k * rule.interval)
  }
}

/**
 * The instant of a day at the anchor's wall-clock time in the anchor's zone, as epoch
 * milliseconds: what `DateTime.fromObject({ year, month, day, hour, … }, { zone }).toMillis()`
 * answers, without building DateTimes (thousands per series). Like Luxon, it guesses the offset
 * in force now and corrects it by the zone's offset at the guessed instant: a wall time in a
 * spring-forward gap moves forward by the gap, an ambiguous one keeps the guessed offset when it
 * is one of its two.
 */
function wallClock (first: DateTime): (day: Day) => number {
  const zone = first.zone
  const guess = zone.offset(Settings.now())
  const timeOfDay = ((first.hour * 60 + first.minute) * 60 + first.second) * 1000 + first.millisecond
  return (day) => {
    const local = day * DAY_MS + timeOfDay
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

/** The last local date allowed by an `on_date` rule, or null. */
function lastDay (rule: Rule, zone: string): Day | null {
  if (rule.endsOn !== 'on_date' || rule.endDate === null) return null
  return dayOf(DateTime.fromJSDate(rule.endDate, { zone }))
}

/**
 * The occurrences of a rule in order, the anchor first, bounded by the rule's end, `until` and
 * `max` (whichever comes first).
 *
 * @example
 *   expand({ start: new Date('2027-03-22T08:00:00Z'), durationMs: 3_600_000, timezone: 'Europe/Berlin' },
 *     { freq: 'weekly', interval: 1, repeatDays: [1, 3], endsOn: 'after_n', endCount: 10, endDate: null }, { max: 500
 * })
 */
export function expand (anchor: Anchor, rule: Rule, options: ExpandOptions): Occurrence[] {
  const zone = anchor.timezone
  const first = DateTime.fromJSDate(anchor.start, { zone })
  if (!first.isValid) throw new Error(`invalid time zone ${zone}`)
  const out: Occurrence[] = []
  const push = (start: Date) => {
    out.push({ index: out.length, start, end: new Date(start.getTime() + anchor.durationMs) })
  }
  const limitCount =
    rule.endsOn === 'after_n' && rule.endCount !== null ? Math.min(rule.endCount, options.max) : options.max
  const last = lastDay(rule, zone)
  const until = options.until?.getTime()
  const anchorDay = dayOf(first)
  if (
    limitCount <= 0 ||
    (until !== undefined && anchor.start.getTime() >= until) ||
    (last !== null && anchorDay > last)
  ) { return out }
  push(anchor.start)
  const atWallTime = wallClock(first)
  for (const day of laterDays(anchorDay, rule)) {
    if (out.length >= limitCount) break
    if (last !== null && day > last) break
    const start = atWallTime(day)
    if (until !== undefined && start >= until) break
    push(new Date(start))
  }
  return out
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

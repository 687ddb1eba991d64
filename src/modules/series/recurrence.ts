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
import { DateTime } from 'luxon'

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

/** A calendar date without zone (UTC is only the carrier). */
type Day = DateTime

const dayOf = (dt: DateTime): Day => DateTime.fromObject({ year: dt.year, month: dt.month, day: dt.day }, { zone: 'UTC' })

/** Candidate days of the rule after the anchor's day, in increasing order (unbounded). */
function * laterDays (anchorDay: Day, rule: Rule): Generator<Day> {
  const days = [...new Set(rule.repeatDays ?? [])].sort((a, b) => a - b)
  switch (rule.freq) {
    case 'daily':
      for (let k = 1; ; k++) yield anchorDay.plus({ days: k * rule.interval })
    case 'custom':
      if (!customReachable(anchorDay.weekday, rule.interval, days)) return
      for (let k = 1; ; k++) {
        const d = anchorDay.plus({ days: k * rule.interval })
        if (days.includes(d.weekday)) yield d
      }
    case 'weekly': {
      if (days.length === 0) return
      const monday = anchorDay.minus({ days: anchorDay.weekday - 1 })
      for (let w = 0; ; w++) {
        const week = monday.plus({ weeks: w * rule.interval })
        for (const wd of days) {
          const d = week.plus({ days: wd - 1 })
          if (d > anchorDay) yield d
        }
      }
    }
    case 'monthly':
      // plus({ months }) clamps to the last day of a shorter month
      for (let k = 1; ; k++) yield anchorDay.plus({ months: k * rule.interval })
  }
}

/** The instant of `day` at the anchor's wall-clock time in `zone`. */
function atWallTime (day: Day, time: DateTime, zone: string): DateTime {
  return DateTime.fromObject({
    year: day.year, month: day.month, day: day.day, hour: time.hour, minute: time.minute, second: time.second, millisecond: time.millisecond
  }, { zone })
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
 *     { freq: 'weekly', interval: 1, repeatDays: [1, 3], endsOn: 'after_n', endCount: 10, endDate: null }, { max: 500 })
 */
export function expand (anchor: Anchor, rule: Rule, options: ExpandOptions): Occurrence[] {
  const zone = anchor.timezone
  const first = DateTime.fromJSDate(anchor.start, { zone })
  if (!first.isValid) throw new Error(`invalid time zone ${zone}`)
  const out: Occurrence[] = []
  const push = (start: Date) => { out.push({ index: out.length, start, end: new Date(start.getTime() + anchor.durationMs) }) }
  const limitCount = rule.endsOn === 'after_n' && rule.endCount !== null ? Math.min(rule.endCount, options.max) : options.max
  const last = lastDay(rule, zone)
  const until = options.until?.getTime()
  const anchorDay = dayOf(first)
  if (limitCount <= 0 || (until !== undefined && anchor.start.getTime() >= until) || (last !== null && anchorDay > last)) return out
  push(anchor.start)
  for (const day of laterDays(anchorDay, rule)) {
    if (out.length >= limitCount) break
    if (last !== null && day > last) break
    const start = atWallTime(day, first, zone).toJSDate()
    if (until !== undefined && start.getTime() >= until) break
    push(start)
  }
  return out
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

/**
 * RFC 5545 recurrence rules as text (the value of an RRULE line): reading and checking a rule a client sends,
 * writing one back in a fixed order, changing its end, and the rule every seed rule (freq, interval,
 * repeat_days, ends_on) stands for. Pure: no dates are expanded here (series.recurrence.ts does, with rrule.js).
 *
 * What a series takes (docs/series.md, "RFC 5545 rules"): FREQ DAILY, WEEKLY, MONTHLY or YEARLY (a series has
 * at most one occurrence a day, at the anchor's time of day, so no sub-daily FREQ and no BYHOUR, BYMINUTE or
 * BYSECOND), INTERVAL, COUNT or UNTIL, BYDAY (with ordinals such as 2TU and -1FR where RFC 5545 allows them),
 * BYMONTHDAY, BYMONTH, BYYEARDAY, BYWEEKNO, BYSETPOS and WKST.
 */
import { DateTime } from 'luxon'

export const RRULE_FREQS = ['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'] as const
export type RruleFreq = typeof RRULE_FREQS[number]
const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const
/** The longest rule text taken (a rule listing every BYYEARDAY would be longer; no calendar app writes one). */
export const RRULE_MAX_LENGTH = 500
/** The most COUNT a series rule may have: the occurrence bound of docs/series.md. */
const COUNT_MAX = 500
const INTERVAL_MAX = 366

/** A rule's parts; the BY lists keep the client's order (duplicates removed). */
export interface RruleParts {
  FREQ: RruleFreq
  INTERVAL?: number
  COUNT?: number
  /** as written: `YYYYMMDD`, `YYYYMMDDTHHMMSS` (floating) or `YYYYMMDDTHHMMSSZ` */
  UNTIL?: string
  BYMONTH?: number[]
  BYWEEKNO?: number[]
  BYYEARDAY?: number[]
  BYMONTHDAY?: number[]
  /** `MO`, `2TU`, `-1FR` */
  BYDAY?: string[]
  BYSETPOS?: number[]
  WKST?: string
}

/** A rule that cannot be taken: `message` says which part and why. */
export class RruleError extends Error {}

const ORDER = [
  'FREQ', 'INTERVAL', 'COUNT', 'UNTIL', 'BYMONTH', 'BYWEEKNO', 'BYYEARDAY', 'BYMONTHDAY', 'BYDAY', 'BYSETPOS', 'WKST'
] as const
type PartName = typeof ORDER[number]
const TIME_PARTS = new Set(['BYHOUR', 'BYMINUTE', 'BYSECOND'])
const SUB_DAILY = new Set(['SECONDLY', 'MINUTELY', 'HOURLY'])

function integers (name: string, value: string, lo: number, hi: number, signed: boolean): number[] {
  const out: number[] = []
  for (const item of value.split(',')) {
    if (!/^[+-]?\d{1,3}$/.test(item)) throw new RruleError(`${name}: expected a list of integers, got "${item}"`)
    const n = Number(item)
    const abs = Math.abs(n)
    if (abs < lo || abs > hi || (!signed && n < 0)) {
      throw new RruleError(`${name}: ${item} is outside ${signed ? '±' : ''}${lo}…${hi}`)
    }
    if (!out.includes(n)) out.push(n)
  }
  return out
}

const UNTIL_FORM = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$/

function checkUntil (value: string): string {
  const m = UNTIL_FORM.exec(value)
  const d = m === null
    ? undefined
    : DateTime.fromObject({
      year: Number(m[1]),
      month: Number(m[2]),
      day: Number(m[3]),
      hour: Number(m[4] ?? 0),
      minute: Number(m[5] ?? 0),
      second: Number(m[6] ?? 0)
    }, { zone: 'UTC' })
  if (d === undefined || !d.isValid) {
    throw new RruleError(`UNTIL: expected a date (20271231) or a date-time (20271231T235959Z), got "${value}"`)
  }
  return value
}

/**
 * Reads a rule (the value of an RRULE line; an `RRULE:` prefix is taken too), checks it against RFC 5545 and
 * what a series takes, and returns its parts. Throws RruleError naming the part.
 */
export function parseRrule (text: string): RruleParts {
  const body = text.trim().replace(/^RRULE:/i, '')
  if (body.length === 0) throw new RruleError('expected a rule such as FREQ=MONTHLY;BYDAY=2TU')
  if (body.length > RRULE_MAX_LENGTH) throw new RruleError(`expected at most ${RRULE_MAX_LENGTH} characters`)
  const seen = new Map<string, string>()
  for (const part of body.split(';')) {
    const eq = part.indexOf('=')
    const name = (eq < 0 ? part : part.slice(0, eq)).trim().toUpperCase()
    const value = eq < 0 ? '' : part.slice(eq + 1).trim().toUpperCase()
    if (name === '' || value === '') throw new RruleError(`expected NAME=VALUE parts separated by ";", got "${part}"`)
    if (TIME_PARTS.has(name)) {
      throw new RruleError(`${name}: every occurrence of a series is at the anchor's time of day (start_dt)`)
    }
    if (!(ORDER as readonly string[]).includes(name)) throw new RruleError(`${name}: not a rule part a series takes`)
    if (seen.has(name)) throw new RruleError(`${name}: given twice`)
    seen.set(name, value)
  }
  const get = (name: PartName) => seen.get(name)
  const freq = get('FREQ')
  if (freq === undefined) throw new RruleError('FREQ: required')
  if (SUB_DAILY.has(freq)) {
    throw new RruleError(`FREQ: ${freq} repeats within a day; a series has at most one occurrence a day`)
  }
  if (!(RRULE_FREQS as readonly string[]).includes(freq)) {
    throw new RruleError(`FREQ: expected one of ${RRULE_FREQS.join(', ')}, got "${freq}"`)
  }
  const parts: RruleParts = { FREQ: freq as RruleFreq }
  const interval = get('INTERVAL')
  if (interval !== undefined) parts.INTERVAL = integers('INTERVAL', interval, 1, INTERVAL_MAX, false)[0] ?? 1
  const count = get('COUNT')
  if (count !== undefined) parts.COUNT = integers('COUNT', count, 1, COUNT_MAX, false)[0] ?? 1
  const until = get('UNTIL')
  if (until !== undefined) parts.UNTIL = checkUntil(until)
  if (count !== undefined && until !== undefined) throw new RruleError('COUNT and UNTIL: give one of them')
  const list = (name: 'BYMONTH' | 'BYWEEKNO' | 'BYYEARDAY' | 'BYMONTHDAY' | 'BYSETPOS', lo: number, hi: number,
    signed: boolean) => {
    const value = get(name)
    if (value !== undefined) parts[name] = integers(name, value, lo, hi, signed)
  }
  list('BYMONTH', 1, 12, false)
  list('BYWEEKNO', 1, 53, true)
  list('BYYEARDAY', 1, 366, true)
  list('BYMONTHDAY', 1, 31, true)
  list('BYSETPOS', 1, 366, true)
  const byday = get('BYDAY')
  if (byday !== undefined) {
    const days: string[] = []
    for (const item of byday.split(',')) {
      const m = /^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$/.exec(item)
      const n = m?.[1] === undefined ? 0 : Number(m[1])
      if (m === null || Math.abs(n) > 53 || (m[1] !== undefined && n === 0)) {
        throw new RruleError(`BYDAY: expected weekdays such as MO or 2TU or -1FR, got "${item}"`)
      }
      if (n !== 0 && parts.FREQ !== 'MONTHLY' && parts.FREQ !== 'YEARLY') {
        throw new RruleError(`BYDAY: an ordinal (${item}) needs FREQ=MONTHLY or FREQ=YEARLY`)
      }
      if (n !== 0 && parts.FREQ === 'YEARLY' && get('BYWEEKNO') !== undefined) {
        throw new RruleError(`BYDAY: an ordinal (${item}) cannot be used with BYWEEKNO`)
      }
      if (n !== 0 && parts.FREQ === 'MONTHLY' && Math.abs(n) > 5) {
        throw new RruleError(`BYDAY: a month has at most 5 of a weekday, got "${item}"`)
      }
      const canonical = `${n === 0 ? '' : n}${m[2]}`
      if (!days.includes(canonical)) days.push(canonical)
    }
    parts.BYDAY = days
  }
  const wkst = get('WKST')
  if (wkst !== undefined) {
    if (!(WEEKDAYS as readonly string[]).includes(wkst)) throw new RruleError(`WKST: expected MO … SU, got "${wkst}"`)
    parts.WKST = wkst
  }
  if (parts.BYWEEKNO !== undefined && parts.FREQ !== 'YEARLY') throw new RruleError('BYWEEKNO: needs FREQ=YEARLY')
  if (parts.BYYEARDAY !== undefined && parts.FREQ !== 'YEARLY') throw new RruleError('BYYEARDAY: needs FREQ=YEARLY')
  if (parts.BYMONTHDAY !== undefined && parts.FREQ === 'WEEKLY') {
    throw new RruleError('BYMONTHDAY: not with FREQ=WEEKLY')
  }
  if (
    parts.BYSETPOS !== undefined &&
    [parts.BYMONTH, parts.BYWEEKNO, parts.BYYEARDAY, parts.BYMONTHDAY, parts.BYDAY].every(p => p === undefined)
  ) {
    throw new RruleError('BYSETPOS: needs another BY part (BYDAY, BYMONTHDAY, …) to pick from')
  }
  return parts
}

/** The rule as text, its parts in a fixed order (FREQ first), so equal rules read the same. */
export function formatRrule (parts: RruleParts): string {
  const out: string[] = []
  for (const name of ORDER) {
    const value = parts[name]
    if (value === undefined) continue
    if (name === 'INTERVAL' && value === 1) continue
    out.push(`${name}=${Array.isArray(value) ? value.join(',') : String(value)}`)
  }
  return out.join(';')
}

/** `YYYYMMDDTHHMMSSZ` of an instant (whole seconds, rounded down). */
export function utcText (d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '')
}

/**
 * The end of a rule with UNTIL as the instant it stands for in `zone`: a date ends with that local day, a
 * floating date-time is a local time of the zone, a date-time with Z is that instant.
 */
export function untilInstant (until: string, zone: string): Date {
  const m = UNTIL_FORM.exec(until)
  if (m === null) throw new RruleError(`UNTIL: "${until}"`)
  const fields = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) }
  if (m[4] === undefined) return DateTime.fromObject(fields, { zone }).endOf('day').toJSDate()
  const time = { ...fields, hour: Number(m[4]), minute: Number(m[5]), second: Number(m[6]) }
  return DateTime.fromObject(time, { zone: m[7] === 'Z' ? 'UTC' : zone }).toJSDate()
}

/** The rule with another end: a COUNT, an UNTIL instant, or none (COUNT and UNTIL removed). */
export function withEnd (parts: RruleParts, end: { count: number } | { until: Date } | null): RruleParts {
  const { COUNT: _c, UNTIL: _u, ...rest } = parts
  if (end === null) return rest
  return 'count' in end ? { ...rest, COUNT: end.count } : { ...rest, UNTIL: utcText(end.until) }
}

/** The seed rule's fields (series.recurrence.ts `Rule`) a rule text is built from. */
export interface SeedRule {
  freq: 'daily' | 'weekly' | 'monthly' | 'custom'
  interval: number
  /** ISO weekdays 1 (Monday) … 7 (Sunday) */
  repeatDays: readonly number[] | null
  /** the end: `count` positions, the anchor included, or up to an instant */
  end: { count: number } | { until: Date } | null
}

/**
 * The RFC 5545 rule a seed rule stands for, given the anchor's day of month in its zone: daily = FREQ=DAILY;
 * weekly = FREQ=WEEKLY;BYDAY=…;WKST=MO (weeks counted from the anchor's ISO week); custom = FREQ=DAILY;BYDAY=…
 * (every interval days, kept on the listed weekdays); monthly = BYMONTHDAY of the anchor, the 31st the last day
 * (BYMONTHDAY=-1), and the 29th and 30th the last of 28…that day in each month (BYSETPOS=-1): the seed's clamp to
 * the month's end.
 */
export function seedParts (rule: SeedRule, anchorDayOfMonth: number): RruleParts {
  const days = [...new Set(rule.repeatDays ?? [])].sort((a, b) => a - b).map(d => WEEKDAYS[d - 1] ?? 'MO')
  let parts: RruleParts
  switch (rule.freq) {
    case 'daily':
      parts = { FREQ: 'DAILY', INTERVAL: rule.interval }
      break
    case 'custom':
      parts = { FREQ: 'DAILY', INTERVAL: rule.interval, BYDAY: days }
      break
    case 'weekly':
      parts = { FREQ: 'WEEKLY', INTERVAL: rule.interval, BYDAY: days, WKST: 'MO' }
      break
    case 'monthly':
      parts = anchorDayOfMonth <= 28
        ? { FREQ: 'MONTHLY', INTERVAL: rule.interval, BYMONTHDAY: [anchorDayOfMonth] }
        : anchorDayOfMonth === 31
          ? { FREQ: 'MONTHLY', INTERVAL: rule.interval, BYMONTHDAY: [-1] }
          : {
              FREQ: 'MONTHLY',
              INTERVAL: rule.interval,
              BYMONTHDAY: Array.from({ length: anchorDayOfMonth - 27 }, (_, i) => 28 + i),
              BYSETPOS: [-1]
            }
      break
  }
  return withEnd(parts, rule.end)
}

/** ISO weekday numbers (1 = Monday) of a BYDAY list without ordinals, or null when it has one. */
export function plainWeekdays (byday: readonly string[]): number[] | null {
  const out: number[] = []
  for (const d of byday) {
    const i = (WEEKDAYS as readonly string[]).indexOf(d)
    if (i < 0) return null
    out.push(i + 1)
  }
  return out
}

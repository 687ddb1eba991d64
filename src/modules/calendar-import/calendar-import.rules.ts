/**
 * What the VEVENTs of a file become (docs/calendar-import.md), as pure functions: the units of an import (a single
 * event, a series with its overrides, a VEVENT skipped and why), the content of an event, the rule of a series
 * (re-anchored within the allowed past), how many events a unit makes at most, and whether what is stored already
 * says what the file says. The series module's rule functions decide the rule; nothing here expands dates of its own.
 */
import { DateTime } from 'luxon'
import { ApiError, fieldError, type ErrorDetail } from '../../platform/http/errors.ts'
import { ADDRESS_MAX, DESCRIPTION_MAX, TITLE_MAX } from '../events/index.ts'
import {
  checkRule, expand, formatRrule, parseRrule, RULE_DATES_MAX, RruleError, withEnd, type SeriesRow
} from '../series/index.ts'
import { lineError, lineLocation, type CalendarEvent } from './calendar-import.parse.ts'

/** A new series starts at most this many months before now (docs/series.md, "Bounds"). */
const MAX_PAST_MONTHS = 12
/**
 * The periods of their rules (days of a DAILY rule, weeks of a WEEKLY one …) an import goes through before the allowed
 * past to re-anchor its series, all together: rrule.js visits each (some 50 000 days take it 0.25 s), so a file of
 * series starting in the year 1 cannot hold the process.
 */
export const REANCHOR_PERIODS_MAX = 50_000
const PERIOD_UNIT = { DAILY: 'days', WEEKLY: 'weeks', MONTHLY: 'months', YEARLY: 'years' } as const
/** The most dates of one rule before the allowed past a re-anchoring keeps count of. */
const REANCHOR_DATES_MAX = 100_000
/** Occurrences one series makes at most (docs/series.md, "Bounds"). */
const SERIES_ROWS_MAX = 500
/** The window of a series without an end (docs/series.md): occurrences exist this many months ahead. */
const WINDOW_MONTHS = 12
export const UNTITLED = '(no title)'

/** What the import does with one UID of the file. */
export type ImportUnit =
  | { kind: 'event', event: CalendarEvent }
  | { kind: 'series', master: CalendarEvent, overrides: CalendarEvent[] }
  | { kind: 'skip', event: CalendarEvent, as: 'event' | 'series', reason: string }

const isOverride = (e: CalendarEvent): boolean => e.recurrenceId !== undefined

/**
 * The units of a file: each VEVENT without RECURRENCE-ID is an event, or a series when it has an RRULE, and takes
 * the overrides (RECURRENCE-ID) of its UID. A UID given to two such VEVENTs, or two overrides of one date, is a 400
 * naming the second; an override without its recurring VEVENT in the file, a cancelled single event or series and
 * what the import cannot represent are skipped with the reason. In the order of the file.
 */
export function importUnits (events: readonly CalendarEvent[]): ImportUnit[] {
  const masters = new Map<string, CalendarEvent>()
  for (const e of events) {
    if (isOverride(e)) continue
    const other = masters.get(e.uid)
    if (other !== undefined) {
      throw lineError(e.line, `UID "${e.uid}" is already the UID of the VEVENT of line ${other.line}`)
    }
    masters.set(e.uid, e)
  }
  const overridesOf = new Map<string, CalendarEvent[]>()
  const units: ImportUnit[] = []
  for (const e of events) {
    if (!isOverride(e)) continue
    const master = masters.get(e.uid)
    const rid = e.recurrenceId?.value.getTime()
    const list = overridesOf.get(e.uid) ?? []
    const twice = list.find(o => o.recurrenceId?.value.getTime() === rid)
    if (twice !== undefined) {
      throw lineError(e.line, `RECURRENCE-ID: the VEVENT of line ${twice.line} already overrides this date`)
    }
    list.push(e)
    overridesOf.set(e.uid, list)
    const orphan = master === undefined
      ? 'RECURRENCE-ID of a UID whose recurring VEVENT is not in the file'
      : master.rrule === undefined ? 'RECURRENCE-ID of a VEVENT that does not recur (no RRULE)' : undefined
    if (orphan !== undefined) units.push({ kind: 'skip', event: e, as: 'event', reason: orphan })
  }
  for (const e of masters.values()) {
    const as = e.rrule === undefined ? 'event' as const : 'series' as const
    const overrides = overridesOf.get(e.uid) ?? []
    const skip = (reason: string): void => {
      units.push({ kind: 'skip', event: e, as, reason })
      if (as === 'series') {
        for (const o of overrides) {
          units.push({ kind: 'skip', event: o, as: 'event', reason: `its series is skipped: ${reason}` })
        }
      }
    }
    if (e.unsupported !== undefined) skip(e.unsupported)
    else if (e.cancelled) skip(`STATUS:CANCELLED: the ${as === 'series' ? 'whole series' : 'event'} is cancelled`)
    else if (e.rrule === undefined && e.rdates.length > 0) skip('RDATE without an RRULE is not supported')
    else if (as === 'series') units.push({ kind: 'series', master: e, overrides })
    else units.push({ kind: 'event', event: e })
  }
  return units.sort((a, b) => lineOf(a) - lineOf(b))
}

export const lineOf = (u: ImportUnit): number => u.kind === 'series' ? u.master.line : u.event.line

/** The content fields of an event or series from a VEVENT (400 naming the line of a value over its bound). */
export interface Content {
  title: string
  description: string | null
  address: string | null
  latitude: number | null
  longitude: number | null
}

const codePoints = (s: string): number => [...s].length

export function contentOf (e: CalendarEvent): Content {
  const bound = (name: string, value: string | undefined, max: number): string | null => {
    if (value === undefined) return null
    if (codePoints(value) > max) {
      throw lineError(e.lines.get(name) ?? e.line, `${name}: expected at most ${max} characters`)
    }
    return value
  }
  const title = bound('SUMMARY', e.title?.trim() === '' ? undefined : e.title, TITLE_MAX)
  return {
    title: title ?? UNTITLED,
    description: bound('DESCRIPTION', e.description, DESCRIPTION_MAX),
    address: bound('LOCATION', e.address, ADDRESS_MAX),
    latitude: e.geo?.latitude ?? null,
    longitude: e.geo?.longitude ?? null
  }
}

/** The earliest start a new series may have at `now` (the series module's bound). */
export const earliestAnchor = (now: Date): Date =>
  DateTime.fromJSDate(now, { zone: 'UTC' }).minus({ months: MAX_PAST_MONTHS }).toJSDate()

/** The rule of a series as the series module takes it in a body, and how the import changed the file's. */
export interface SeriesPlan {
  start: Date
  end: Date
  timezone: string
  rrule: string
  rdates: Date[]
  /** the file's EXDATEs and the dates its cancelled overrides leave out */
  exdates: Date[]
  notes: string[]
}

/**
 * A series error (ApiError of the series module, `prefix` its body's prefix) as the 400 naming the line of the file
 * it is about: the RRULE for the rule and its end, the RDATE or EXDATE of an item, DTSTART, DTEND.
 */
export function atLines (err: unknown, e: CalendarEvent, plan: Pick<SeriesPlan, 'rdates' | 'exdates'>,
  prefix: string): unknown {
  if (!(err instanceof ApiError) || err.status !== 400) return err
  const lineFor = (location: string): { line: number, what: string } => {
    const field = location.startsWith(prefix) ? location.slice(prefix.length) : location.replace(/^body\./, '')
    const item = /^(rdates|exdates)\[(\d+)\]$/.exec(field)
    if (item !== null) {
      const dates = item[1] === 'rdates' ? plan.rdates : plan.exdates
      const at = dates[Number(item[2])]?.getTime()
      const list = item[1] === 'rdates' ? e.rdates : e.exdates
      const name = item[1] === 'rdates' ? 'RDATE' : 'EXDATE'
      return { line: list.find(d => d.value.getTime() === at)?.line ?? e.lines.get(name) ?? e.line, what: name }
    }
    if (['rrule', 'end_count', 'end_date', 'freq', 'interval'].includes(field)) {
      return { line: e.rrule?.line ?? e.line, what: 'RRULE' }
    }
    if (field === 'start_dt' || field === 'timezone') return { line: e.lines.get('DTSTART') ?? e.line, what: 'DTSTART' }
    if (field === 'end_dt') {
      const what = e.lines.has('DTEND') ? 'DTEND' : 'DURATION'
      return { line: e.lines.get(what) ?? e.line, what }
    }
    return { line: e.line, what: 'VEVENT' }
  }
  const errors: ErrorDetail[] = err.errors.map(d => {
    const { line, what } = lineFor(d.location ?? '')
    return fieldError(lineLocation(line), `line ${line}: ${what}: ${d.message ?? ''}`, d.value)
  })
  return new ApiError(400, `the series of UID "${e.uid}" cannot be made: ${err.detail}`, errors)
}

/** RFC 5545 text of a rule, or the 400 naming the line of the RRULE with the series module's message. */
function ruleParts (e: CalendarEvent, text: string) {
  try {
    return parseRrule(text)
  } catch (err) {
    if (err instanceof RruleError) throw lineError(e.rrule?.line ?? e.line, `RRULE: ${err.message}`)
    throw err
  }
}

/**
 * The series of a recurring VEVENT: its anchor, rule, added and left-out dates. A DTSTART before `from` (the allowed
 * past: 12 months before now, or an existing series' own older anchor) is re-anchored at the rule's first date at
 * or after it: the dates before are left out, COUNT reduced by their number, RDATEs and EXDATEs before it dropped;
 * a `notes` entry says so. Answers the reason instead when no date of the rule is left, or when re-anchoring would go
 * through more periods of the rule than are left of the import's `budget`. `cancelled`: the dates of the cancelled
 * overrides.
 */
export function seriesPlan (
  e: CalendarEvent,
  from: Date,
  cancelled: readonly Date[],
  budget: { periods: number } = { periods: REANCHOR_PERIODS_MAX }
): SeriesPlan | string {
  const rule = e.rrule
  if (rule === undefined || e.start === undefined || e.end === undefined) throw new Error('a series needs its RRULE')
  const parts = ruleParts(e, rule.value)
  let start = e.start
  let end = e.end
  let text = rule.value
  const notes: string[] = []
  if (start.getTime() < from.getTime()) {
    const anchor = { start, durationMs: end.getTime() - start.getTime(), timezone: e.timezone }
    const asRule = {
      freq: 'rrule' as const,
      interval: parts.INTERVAL ?? 1,
      repeatDays: null,
      endsOn: 'never' as const,
      endCount: null,
      endDate: null,
      rrule: rule.value,
      rdates: []
    }
    const unit = PERIOD_UNIT[parts.FREQ]
    const periods = Math.ceil(DateTime.fromJSDate(from).diff(DateTime.fromJSDate(start), unit).as(unit) /
      (parts.INTERVAL ?? 1))
    if (periods > budget.periods) {
      return `DTSTART is too far back to re-anchor: ${periods} ${unit} of its rule before the last 12 months ` +
        `(at most ${REANCHOR_PERIODS_MAX} for all the series of an import)`
    }
    budget.periods -= periods
    const before = expand(anchor, asRule, { until: from, max: REANCHOR_DATES_MAX + 1 })
    if (before.length > REANCHOR_DATES_MAX) {
      return `DTSTART is too far back to re-anchor: more than ${REANCHOR_DATES_MAX} dates before the last 12 months`
    }
    const next = expand(anchor, asRule, { max: before.length + 1 })[before.length]
    if (next === undefined) return 'every date of the series is more than 12 months in the past'
    const k = before.length
    const iso = (d: Date): string =>
      DateTime.fromJSDate(d, { zone: e.timezone }).toISO({ suppressMilliseconds: true }) ?? ''
    start = next.start
    end = next.end
    if (parts.COUNT !== undefined) text = formatRrule(withEnd(parts, { count: parts.COUNT - k }))
    const droppedRdates = e.rdates.filter(d => d.value.getTime() <= start.getTime()).length
    notes.push(`DTSTART ${iso(e.start)} is more than 12 months before now: the series starts at its first date ` +
      `since ${iso(from)}, ${iso(start)}; ${k} earlier date${k === 1 ? ' is' : 's are'} left out` +
      (parts.COUNT !== undefined ? ` (COUNT ${parts.COUNT} → ${parts.COUNT - k})` : '') +
      (droppedRdates > 0 ? `, and ${droppedRdates} RDATE${droppedRdates === 1 ? '' : 's'} before it` : ''))
  }
  const after = (d: Date): boolean => d.getTime() > start.getTime()
  const unique = (dates: Date[]): Date[] =>
    [...new Set(dates.map(d => d.getTime()))].sort((a, b) => a - b).map(t => new Date(t))
  const rdates = unique(e.rdates.map(d => d.value).filter(after))
  const exdates = unique([...e.exdates.map(d => d.value), ...cancelled].filter(d => d.getTime() >= start.getTime()))
  for (const [name, list, dates] of [['RDATE', e.rdates, rdates], ['EXDATE', e.exdates, exdates]] as const) {
    if (dates.length > RULE_DATES_MAX) {
      const line = list[RULE_DATES_MAX]?.line ?? e.lines.get(name) ?? e.line
      throw lineError(line, `${name}: a series takes at most ${RULE_DATES_MAX} dates`)
    }
  }
  return { start, end, timezone: e.timezone, rrule: text, rdates, exdates, notes }
}

/** The series module's body of a plan's rule. */
export const ruleBody = (p: SeriesPlan) => ({
  rrule: p.rrule,
  rdates: p.rdates.map(d => d.toISOString()),
  exdates: p.exdates.map(d => d.toISOString())
})

/**
 * Checks a plan's rule with the series module's own check (400 naming the line of the file) before anything is
 * written, and answers the rule as the series stores it (`rrule` written out, `rdates`, `exdates`) and at most how
 * many occurrences it makes (a series without an end: those of its window).
 */
export function checkedRule (e: CalendarEvent, p: SeriesPlan, now: Date) {
  let rule: ReturnType<typeof checkRule>
  try {
    rule = checkRule(ruleBody(p), { start_dt: p.start, end_dt: p.end, timezone: p.timezone }, 'body.series.',
      { start: 'body.start_dt', end: 'body.end_dt' })
  } catch (err) {
    throw atLines(err, e, p, 'body.series.')
  }
  const windowStart = now.getTime() > p.start.getTime() ? now : p.start
  const windowEnd = DateTime.fromJSDate(windowStart, { zone: 'UTC' }).plus({ months: WINDOW_MONTHS }).toJSDate()
  const rows = expand({ start: p.start, durationMs: p.end.getTime() - p.start.getTime(), timezone: p.timezone }, {
    freq: rule.freq,
    interval: rule.interval,
    repeatDays: rule.repeat_days,
    endsOn: rule.ends_on,
    endCount: rule.end_count,
    endDate: rule.end_date,
    rrule: rule.rrule,
    rdates: rule.rdates
  }, { max: SERIES_ROWS_MAX, until: rule.ends_on === 'never' ? windowEnd : undefined }).length
  return { rrule: rule.rrule, rdates: rule.rdates, exdates: rule.exdates ?? [], rows }
}

const sameTimes = (a: readonly Date[], b: readonly Date[]): boolean => {
  const set = (l: readonly Date[]): string => [...new Set(l.map(d => new Date(d).getTime()))].sort().join(',')
  return set(a) === set(b)
}
const ms = (d: Date | string | null): number | null => d === null ? null : new Date(d).getTime()

/** The content fields of a stored event or series that differ from the file's. */
export function changedContent (stored: Content, wanted: Content): Array<keyof Content> {
  return (Object.keys(wanted) as Array<keyof Content>).filter(k => stored[k] !== wanted[k])
}

/** Whether a stored series has the times and rule of a plan (`rule`: the plan as the series stores it). */
export function sameRule (
  s: Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone' | 'rrule' | 'rdates' | 'exdates'>,
  p: SeriesPlan,
  rule: { rrule: string | null, rdates: Date[], exdates: Date[] }
): boolean {
  return ms(s.start_dt) === p.start.getTime() && ms(s.end_dt) === p.end.getTime() && s.timezone === p.timezone &&
    s.rrule === rule.rrule && sameTimes(s.rdates, rule.rdates) && sameTimes(s.exdates, rule.exdates)
}

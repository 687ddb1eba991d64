/**
 * The rule of a series as pure functions (no database): checking a rule against its anchor, the
 * positions it yields and the window of an ends_on=never series, the row of a new series, what a
 * series patch changes, and which positions, dates and fields an edit, split or delete touches.
 * The date expansion itself is `series.recurrence.ts`. Decisions: docs/series.md.
 */
import { DateTime } from 'luxon'
import { error409Conflict, invalidField } from '../../platform/http/errors.ts'
import { checkTimezone, loneSurrogateAt } from '../../platform/http/validation.ts'
import {
  type EventRow, type EventUpdate, mergePatch, METADATA_MAX_BYTES, type PatchEventBody
} from '../events/index.ts'
import {
  anchorOnRule, customReachable, everRecurs, exceeds, expand, intervalText, localDays, rruleText, shiftWallClock,
  type Occurrence, type Rule
} from './series.recurrence.ts'
import {
  formatRrule, parseRrule, RruleError, untilInstant, utcText, withEnd, type RruleParts
} from './series.rrule.ts'
import type { SlotMove } from './series.occurrences.repository.ts'
import type { SeriesInsert, SeriesUpdate } from './series.repository.ts'
import {
  MAX_CREATE_PER_REQUEST, MAX_OCCURRENCES, MAX_PAST_MONTHS, STORAGE_METADATA_KEYS, WINDOW_MONTHS, type PatchSeriesBody
} from './series.schemas.ts'
import type { SeriesRow } from './series.table.ts'

export type Json = Record<string, unknown>
export type Scope = 'this' | 'future' | 'all'

/** Rows a ends_on=never series may grow to over the years (the window bounds each step). */
const NEVER_MAX = 100_000
/** Occurrences start at most this long after the anchor (after_n, on_date), and anchors before LATEST_ANCHOR_YEAR. */
const MAX_SPAN_YEARS = 10
const LATEST_ANCHOR_YEAR = 9000
const MAX_DURATION_DAYS = 366
const DAY_MS = 86_400_000

const ms = (d: Date | string | null | undefined): number => d === null || d === undefined ? NaN : new Date(d).getTime()
const localDay = (d: Date | string, zone: string): string =>
  DateTime.fromJSDate(new Date(d), { zone }).toISODate() ?? ''

type RuleColumns = Pick<
  SeriesRow, 'freq' | 'interval' | 'repeat_days' | 'ends_on' | 'end_count' | 'end_date' | 'rrule' | 'rdates'
>
type RuleAndAnchor = RuleColumns & Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>

export function ruleOf (s: RuleColumns): Rule {
  return {
    freq: s.freq,
    interval: s.interval,
    repeatDays: s.repeat_days,
    endsOn: s.ends_on,
    endCount: s.end_count,
    endDate: s.end_date === null ? null : new Date(s.end_date),
    rrule: s.rrule,
    rdates: s.rdates.map(d => new Date(d))
  }
}

/** Whether the anchor of a series is one of its rule's dates (else a feed lists it as an added date). */
export const anchorOnItsRule = (s: RuleAndAnchor): boolean => anchorOnRule(anchorOf(s), ruleOf(s))

/** The RFC 5545 rule of a series as the API shows it: its own, or the one its seed fields stand for. */
export const rruleOfSeries = (s: RuleAndAnchor): string => rruleText(anchorOf(s), ruleOf(s))

const anchorOf = (s: Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>) => ({
  start: new Date(s.start_dt),
  durationMs: ms(s.end_dt) - ms(s.start_dt),
  timezone: s.timezone
})

/** The rule's positions of a series: bounded by its end, its window (never) and the row bounds. */
export function positionsOf (s: RuleAndAnchor & Pick<SeriesRow, 'window_end'>, until?: Date): Occurrence[] {
  const window = until ?? (s.window_end === null ? undefined : new Date(s.window_end))
  return expand(anchorOf(s), ruleOf(s), {
    until: s.ends_on === 'never' ? window : undefined,
    max: s.ends_on === 'never' ? NEVER_MAX : MAX_OCCURRENCES,
    horizon: s.ends_on === 'never' ? undefined : horizonOf(new Date(s.start_dt))
  })
}

/** The position of an occurrence row in its series (0 when it has none). */
export const positionOf = (row: Pick<EventRow, 'series_index'>): number => row.series_index ?? 0

/** Which occurrences a scoped edit or delete reaches: `future` from the first position is `all`. */
export const effectiveScope = (scope: Scope, index: number): Scope => scope === 'future' && index <= 0 ? 'all' : scope

const spanLimit = (start: Date): Date =>
  DateTime.fromJSDate(start, { zone: 'UTC' }).plus({ years: MAX_SPAN_YEARS }).toJSDate()

/** A finite rule's dates end within MAX_SPAN_YEARS of its anchor: expansions look no further (and a day more). */
const horizonOf = (start: Date): Date => new Date(spanLimit(start).getTime() + DAY_MS)

/** The window end of an ends_on=never series materialised at `now`: WINDOW_MONTHS on. */
export const windowFrom = (now: Date): Date =>
  DateTime.fromJSDate(now, { zone: 'UTC' }).plus({ months: WINDOW_MONTHS }).toJSDate()

/** The earliest start a new series' anchor may have (MAX_PAST_MONTHS before `now`). */
const earliestAnchor = (now: Date): Date =>
  DateTime.fromJSDate(now, { zone: 'UTC' }).minus({ months: MAX_PAST_MONTHS }).toJSDate()

/**
 * The window end of an ends_on=never series that materialises at most MAX_CREATE_PER_REQUEST
 * positions from `from` on: `windowEnd`, or the start of the first position past that count (the
 * window job extends it later, at most as many again per run).
 */
export function cappedWindow (s: RuleAndAnchor, from: Date, windowEnd: Date): Date {
  const positions = expand(anchorOf(s), ruleOf(s), { until: windowEnd, max: NEVER_MAX })
  const first = positions.findIndex(p => p.start.getTime() >= from.getTime())
  if (first < 0) return windowEnd
  return positions[first + MAX_CREATE_PER_REQUEST]?.start ?? windowEnd
}

/** A metadata object without the keys that carry storage keys (they belong to one event's cover upload). */
export function withoutStorageKeys (metadata: Json): Json {
  const out = { ...metadata }
  for (const k of STORAGE_METADATA_KEYS) Reflect.deleteProperty(out, k)
  return out
}

/** 400 when a series body's metadata holds a storage-key field (`body.metadata.cover_image`). */
export function refuseStorageKeys (metadata: Json | null | undefined): void {
  if (metadata === null || metadata === undefined) return
  for (const k of STORAGE_METADATA_KEYS) {
    if (Object.hasOwn(metadata, k)) {
      throw invalidField(
        `body.metadata.${k}`,
        'set by the cover upload (PUT /events/{id}/cover) only, never in a series body'
      )
    }
  }
}

export interface RuleInput {
  freq?: Rule['freq'] | undefined
  interval?: number | undefined
  repeat_days?: number[] | null | undefined
  ends_on?: Rule['endsOn'] | undefined
  end_count?: number | null | undefined
  end_date?: string | null | undefined
  /** an RFC 5545 rule (the value of an RRULE line): the rule instead of freq, interval, repeat_days and ends_on */
  rrule?: string | null | undefined
  /** dates added to the rule's (RDATE) */
  rdates?: string[] | null | undefined
  /** starts the rule leaves out (EXDATE); replaces the series' list */
  exdates?: string[] | null | undefined
}

const SEED_FIELDS = ['interval', 'repeat_days', 'ends_on', 'end_count', 'end_date'] as const

/**
 * The written-out form of a rule: what RFC 5545 takes from DTSTART when a rule leaves it out (the weekday of a
 * weekly rule, the day of a monthly one, the day and month of a yearly one) is written into the rule, so that a
 * split, which starts a new series at a later date, keeps the same dates.
 */
function writtenOut (parts: RruleParts, first: DateTime): RruleParts {
  const weekday = (['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const)[first.weekday - 1] ?? 'MO'
  const by = [parts.BYMONTH, parts.BYWEEKNO, parts.BYYEARDAY, parts.BYMONTHDAY, parts.BYDAY]
  if (by.some(b => b !== undefined)) {
    if (parts.FREQ === 'YEARLY' && parts.BYMONTH !== undefined && by.slice(1).every(b => b === undefined)) {
      return { ...parts, BYMONTHDAY: [first.day] }
    }
    return parts
  }
  switch (parts.FREQ) {
    case 'DAILY': return parts
    case 'WEEKLY': return { ...parts, BYDAY: [weekday] }
    case 'MONTHLY': return { ...parts, BYMONTHDAY: [first.day] }
    case 'YEARLY': return { ...parts, BYMONTH: [first.month], BYMONTHDAY: [first.day] }
  }
}

/** Dates of a body (`rdates`, `exdates`) as instants, 400 naming the item when one is not after the anchor. */
function datesOf (input: string[] | null | undefined, field: string, after?: Date): Date[] | undefined {
  if (input === undefined) return undefined
  const out: Date[] = []
  for (const [i, text] of (input ?? []).entries()) {
    const d = new Date(text)
    if (after !== undefined && d.getTime() <= after.getTime()) {
      throw invalidField(`${field}[${i}]`, 'expected a date after the first start (start_dt)', text)
    }
    if (!out.some(o => o.getTime() === d.getTime())) out.push(d)
  }
  return out.sort((a, b) => a.getTime() - b.getTime())
}

/**
 * The RFC 5545 rule of a series after `input` (null: a seed rule): `rrule` from the body, else the base's own
 * with the body's interval and end written into it (`repeat_days` belongs to the seed rules: 400).
 */
function rruleParts (input: RuleInput, base: Partial<SeriesRow>, prefix: string, zone: string): RruleParts | null {
  if (input.rrule !== undefined && input.rrule !== null && input.freq !== undefined && input.freq !== 'rrule') {
    throw invalidField(`${prefix}rrule`, 'give either rrule or freq, not both', input.rrule)
  }
  const own = input.rrule !== undefined && input.rrule !== null
  if (!own && (input.freq !== undefined || input.rrule === null)) {
    if (input.freq === 'rrule') throw invalidField(`${prefix}rrule`, 'required when freq is rrule', null)
    return null
  }
  const text = own ? input.rrule : base.rrule
  if (text === undefined || text === null) return null
  let parts: RruleParts
  try {
    parts = parseRrule(text)
  } catch (e) {
    if (e instanceof RruleError) throw invalidField(`${prefix}rrule`, e.message, text)
    throw e
  }
  if (own) {
    for (const f of SEED_FIELDS) {
      if (input[f] !== undefined) {
        throw invalidField(`${prefix}${f}`, 'give either rrule or the seed rule fields', input[f])
      }
    }
    return parts
  }
  if (input.repeat_days !== undefined) {
    throw invalidField(`${prefix}repeat_days`, 'a series with an rrule takes its weekdays in rrule (BYDAY)',
      input.repeat_days)
  }
  if (input.interval !== undefined) parts = { ...parts, INTERVAL: input.interval }
  const endsOn = input.ends_on ?? (input.end_count !== undefined && input.end_count !== null
    ? 'after_n'
    : input.end_date !== undefined && input.end_date !== null ? 'on_date' : undefined)
  if (endsOn === 'never') parts = withEnd(parts, null)
  if (endsOn === 'after_n') {
    const count = input.end_count ?? parts.COUNT
    if (count === undefined || count === null) {
      throw invalidField(`${prefix}end_count`, 'required when ends_on is after_n')
    }
    parts = withEnd(parts, { count })
  }
  if (endsOn === 'on_date') {
    const until = input.end_date !== undefined && input.end_date !== null
      ? new Date(input.end_date)
      : parts.UNTIL !== undefined ? untilInstant(parts.UNTIL, zone) : undefined
    if (until === undefined) throw invalidField(`${prefix}end_date`, 'required when ends_on is on_date')
    parts = withEnd(parts, { until })
  }
  return parts
}

/**
 * Checks a rule against its anchor (400 naming the field, `prefix` = `body.` or `body.series.`)
 * and returns the stored rule columns.
 */
export function checkRule (
  input: RuleInput,
  base: Partial<SeriesRow> & Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>,
  prefix: string,
  anchorAt: { start: string; end: string }
) {
  const zone = base.timezone
  const rdates = datesOf(input.rdates, `${prefix}rdates`, new Date(base.start_dt)) ??
    (base.rdates ?? []).map(d => new Date(d))
  const exdates = datesOf(input.exdates, `${prefix}exdates`)
  const rrule = rruleParts(input, base, prefix, zone)
  if (rrule !== null) return { ...checkRrule(rrule, base, prefix, anchorAt, rdates), ...(exdates ? { exdates } : {}) }
  const freq = input.freq ?? (base.freq === 'rrule' ? undefined : base.freq)
  if (freq === undefined || freq === 'rrule') throw invalidField(`${prefix}freq`, 'required (or rrule)')
  const interval = input.interval ?? base.interval ?? 1
  const endsOn = input.ends_on ?? base.ends_on ?? 'never'
  const repeatDays = 'repeat_days' in input ? (input.repeat_days ?? null) : (base.repeat_days ?? null)
  const endCount =
    endsOn !== 'after_n' ? null : 'end_count' in input ? (input.end_count ?? null) : (base.end_count ?? null)
  const endDateInput =
    endsOn !== 'on_date' ? null : 'end_date' in input ? (input.end_date ?? null) : (base.end_date ?? null)
  const endDate = endDateInput === null ? null : new Date(endDateInput)
  checkAnchor(base, anchorAt)
  if (freq === 'weekly' || freq === 'custom') {
    if (repeatDays === null || repeatDays.length === 0) {
      throw invalidField(`${prefix}repeat_days`, `required (ISO weekdays 1-7) when freq is ${freq}`, repeatDays)
    }
    if (
      freq === 'custom' &&
      !customReachable(DateTime.fromJSDate(new Date(base.start_dt), { zone }).weekday, interval, repeatDays)
    ) {
      throw invalidField(
        `${prefix}repeat_days`,
        `no listed weekday is ever reached every ${interval} days from the anchor`,
        repeatDays
      )
    }
  }
  if (endsOn === 'after_n' && endCount === null) {
    throw invalidField(`${prefix}end_count`, 'required when ends_on is after_n', endCount)
  }
  if (endsOn === 'on_date') {
    if (endDate === null) throw invalidField(`${prefix}end_date`, 'required when ends_on is on_date', endDateInput)
    if (localDay(endDate, zone) < localDay(base.start_dt, zone)) {
      throw invalidField(`${prefix}end_date`, 'expected a date on or after the first start', endDateInput)
    }
  }
  const rule: Rule = {
    freq,
    interval,
    repeatDays: freq === 'weekly' || freq === 'custom' ? repeatDays : null,
    endsOn,
    endCount,
    endDate,
    rdates
  }
  checkBounds(base, rule, endsOn === 'on_date' ? `${prefix}end_date` : `${prefix}end_count`,
    endsOn === 'after_n' ? endCount : endDateInput)
  return {
    freq,
    interval,
    repeat_days: rule.repeatDays === null ? null : [...new Set(rule.repeatDays)].sort((a, b) => a - b),
    ends_on: endsOn,
    end_count: endCount,
    end_date: endDate,
    rrule: null,
    rdates,
    ...(exdates ? { exdates } : {})
  }
}

type AnchorTimes = Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>

function checkAnchor (base: AnchorTimes, anchorAt: { start: string; end: string }): void {
  if (new Date(base.start_dt).getUTCFullYear() >= LATEST_ANCHOR_YEAR) {
    throw invalidField(anchorAt.start, `a series starts before the year ${LATEST_ANCHOR_YEAR}`, base.start_dt)
  }
  if (ms(base.end_dt) - ms(base.start_dt) > MAX_DURATION_DAYS * 86_400_000) {
    throw invalidField(anchorAt.end, `an occurrence lasts at most ${MAX_DURATION_DAYS} days`, base.end_dt)
  }
}

/**
 * A finite rule (a count or an end) has at most MAX_OCCURRENCES dates, the last within MAX_SPAN_YEARS of the
 * anchor (400 naming `field`); an endless one is bounded by its window instead.
 */
function checkBounds (base: AnchorTimes, rule: Rule, field: string, value: unknown): void {
  const finite = rule.endsOn !== 'never'
  const anchor = anchorOf(base)
  const span = spanLimit(new Date(base.start_dt))
  if (!finite) {
    // added dates of an endless rule are bounded like a finite rule's
    if ((rule.rdates ?? []).some(d => d.getTime() > span.getTime())) {
      throw invalidField(field.replace(/[a-z_]+$/, 'rdates'),
        `an added date starts at most ${MAX_SPAN_YEARS} years after the first`)
    }
    return
  }
  if (exceeds(anchor, rule, MAX_OCCURRENCES)) {
    throw invalidField(field, `the rule yields more than ${MAX_OCCURRENCES} occurrences; end it earlier or never`,
      value)
  }
  const positions = expand(anchor, rule, { max: MAX_OCCURRENCES + 1, horizon: new Date(span.getTime() + 1) })
  // one date more, wherever it is: every rule has one at least every 400 years (everRecurs), and a rule with dates
  // that far apart is refused here
  const more = expand(anchor, rule, { max: positions.length + 1 })
  if (more.length > positions.length) {
    throw invalidField(field,
      `the last occurrence would start more than ${MAX_SPAN_YEARS} years after the first`, value)
  }
}

/** The columns of a series whose rule is RFC 5545 text (400 naming `rrule`, `end_count` or `end_date`). */
function checkRrule (
  given: RruleParts,
  base: Partial<SeriesRow> & AnchorTimes,
  prefix: string,
  anchorAt: { start: string; end: string },
  rdates: Date[]
) {
  checkAnchor(base, anchorAt)
  const first = DateTime.fromJSDate(new Date(base.start_dt), { zone: base.timezone })
  // UNTIL as an instant (RFC 5545: UTC when DTSTART has a zone), whatever form it came in
  const until = given.UNTIL === undefined ? null : untilInstant(given.UNTIL, base.timezone)
  const parts = writtenOut(until === null ? given : { ...given, UNTIL: utcText(until) }, first)
  const text = formatRrule(parts)
  if (!everRecurs(parts, first)) {
    throw invalidField(`${prefix}rrule`, 'the rule never yields a date (no day has what it asks)', text)
  }
  if (until !== null && until.getTime() < first.toMillis()) {
    throw invalidField(`${prefix}rrule`, 'UNTIL is before the first start (start_dt)', text)
  }
  const endsOn = parts.COUNT !== undefined ? 'after_n' as const : until !== null ? 'on_date' as const : 'never' as const
  const rule: Rule = {
    freq: 'rrule',
    interval: parts.INTERVAL ?? 1,
    repeatDays: null,
    endsOn,
    endCount: parts.COUNT ?? null,
    endDate: until,
    rrule: text,
    rdates
  }
  checkBounds(base, rule, `${prefix}rrule`, text)
  return {
    freq: 'rrule' as const,
    interval: rule.interval,
    repeat_days: null,
    ends_on: endsOn,
    end_count: rule.endCount,
    end_date: until,
    rrule: text,
    rdates
  }
}

// ---- a new series

/** The anchor fields a new series is made from. */
export type AnchorRow = Pick<
  EventRow,
  'org_id' | 'creator_id' | 'title' | 'description' | 'address' | 'latitude' | 'longitude' | 'start_dt' | 'end_dt' |
  'timezone' | 'keywords' | 'metadata' | 'visibility' | 'status' | 'published_at' | 'version' | 'template' |
  'template_version'
>

/**
 * The row of a new series with `anchor` as position 0 and `input`'s rule (400 naming the field; `prefix`
 * `body.series.` for with-series, `body.` for a conversion). An anchor without an end lasts no time.
 */
export function newSeriesRow (
  anchor: AnchorRow,
  input: RuleInput,
  prefix: string,
  now: Date
): SeriesInsert & { start_dt: Date, end_dt: Date } {
  const startAt = prefix === 'body.series.' ? 'body.start_dt' : 'path.id'
  if (anchor.start_dt === null) throw invalidField(startAt, 'a series needs an anchor with a start_dt', null)
  const start = new Date(anchor.start_dt)
  if (start.getTime() < earliestAnchor(now).getTime()) {
    throw invalidField(startAt, `a series starts at most ${MAX_PAST_MONTHS} months before now`, anchor.start_dt)
  }
  const end = anchor.end_dt === null ? start : new Date(anchor.end_dt)
  const base = { start_dt: start, end_dt: end, timezone: anchor.timezone }
  const rule = checkRule(
    input,
    base,
    prefix,
    prefix === 'body.series.' ? { start: 'body.start_dt', end: 'body.end_dt' } : { start: 'path.id', end: 'path.id' }
  )
  return {
    org_id: anchor.org_id,
    creator_id: anchor.creator_id,
    title: anchor.title,
    description: anchor.description,
    address: anchor.address,
    latitude: anchor.latitude,
    longitude: anchor.longitude,
    start_dt: start,
    end_dt: end,
    timezone: anchor.timezone,
    keywords: anchor.keywords,
    // the anchor's cover (key and metadata) stays the anchor's: nothing of it goes to the series
    metadata: JSON.stringify(withoutStorageKeys(anchor.metadata)),
    visibility: anchor.visibility,
    status: anchor.status === 'published' ? 'published' : 'draft',
    published_at: anchor.published_at,
    version: anchor.version,
    template: anchor.template,
    template_version: anchor.template_version,
    cover_image_key: null,
    ...rule,
    duration: intervalText(end.getTime() - start.getTime()),
    window_end:
      rule.ends_on === 'never'
        ? cappedWindow({ ...base, ...rule }, start, windowFrom(now.getTime() > start.getTime() ? now : start))
        : null
  }
}

// ---- a series patch

const RULE_FIELDS = [
  'freq', 'interval', 'repeat_days', 'ends_on', 'end_count', 'end_date', 'rrule', 'rdates', 'exdates'
] as const
/** Cascaded content; no storage key (`cover_image_key` is not a field of the body: 400). */
const CONTENT = ['title', 'description', 'address', 'latitude', 'longitude', 'keywords', 'visibility'] as const

export interface SeriesChange {
  /** the columns of the series to write (none: nothing changes) */
  values: SeriesUpdate
  /** the content fields to cascade onto the occurrences */
  fields: Set<string>
  /** the rule or the times change: the occurrences from `now` on are regenerated */
  regenerate: boolean
}

/** What a series patch changes on the series (400 naming the field): content, metadata, times, rule and window. */
export function seriesChange (s: SeriesRow, input: PatchSeriesBody, now: Date): SeriesChange {
  checkTimezone(input.timezone, 'body.timezone')
  const start = input.start_dt !== undefined ? new Date(input.start_dt) : new Date(s.start_dt)
  const end = input.end_dt !== undefined
    ? new Date(input.end_dt)
    : new Date(start.getTime() + ms(s.end_dt) - ms(s.start_dt))
  if (end.getTime() < start.getTime()) {
    throw invalidField(
      input.end_dt !== undefined ? 'body.end_dt' : 'body.start_dt',
      'expected end_dt >= start_dt',
      input.end_dt ?? input.start_dt
    )
  }
  const timezone = input.timezone ?? s.timezone
  const ruleChanged = RULE_FIELDS.some(f => f in input)
  const timesChanged = start.getTime() !== ms(s.start_dt) || end.getTime() !== ms(s.end_dt) || timezone !== s.timezone
  // an anchor moves back at most a day, or to MAX_PAST_MONTHS before now: the rule's positions are counted from it
  if (timesChanged && start.getTime() < Math.min(earliestAnchor(now).getTime(), ms(s.start_dt) - DAY_MS)) {
    throw invalidField(
      'body.start_dt',
      `a series starts at most ${MAX_PAST_MONTHS} months before now (or moves back by a day at most)`,
      input.start_dt
    )
  }
  const rule =
    ruleChanged || timesChanged
      ? checkRule(input, { ...s, start_dt: start, end_dt: end, timezone }, 'body.', {
        start: 'body.start_dt',
        end: 'body.end_dt'
      })
      : undefined
  const values: SeriesUpdate = { ...rule }
  const fields = new Set<string>()
  for (const f of CONTENT) {
    if (f in input) {
      (values as Record<string, unknown>)[f] = f === 'keywords' ? (input.keywords ?? []) : input[f]
      fields.add(f)
    }
  }
  if ('metadata' in input) {
    refuseStorageKeys(input.metadata)
    const bad = loneSurrogateAt(input.metadata, 'body.metadata')
    if (bad !== undefined) throw invalidField(bad, 'expected text without lone UTF-16 surrogates')
    values.metadata = JSON.stringify(
      input.metadata === null ? {} : withoutStorageKeys(mergePatch(s.metadata, input.metadata) as Json)
    )
    if (Buffer.byteLength(values.metadata) > METADATA_MAX_BYTES) {
      throw invalidField('body.metadata', `expected at most ${METADATA_MAX_BYTES} bytes of JSON`)
    }
    fields.add('metadata')
  }
  if (timesChanged) {
    Object.assign(values, {
      start_dt: start,
      end_dt: end,
      timezone,
      duration: intervalText(end.getTime() - start.getTime())
    })
  }
  if (rule !== undefined) {
    const windowEnd =
      s.window_end === null ? windowFrom(now.getTime() > start.getTime() ? now : start) : new Date(s.window_end)
    values.window_end =
      rule.ends_on === 'never'
        ? cappedWindow({ ...rule, start_dt: start, end_dt: end, timezone }, now, windowEnd)
        : null
  }
  return { values, fields, regenerate: ruleChanged || timesChanged }
}

// ---- scoped edits, splits and deletes

/** A series patch from an occurrence patch: times move by the occurrence's wall-clock shift. */
export function seriesPatchFrom (
  s: Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>,
  occurrence: Pick<EventRow, 'start_dt' | 'end_dt'>,
  patch: PatchEventBody
): PatchSeriesBody {
  const out: Record<string, unknown> = {}
  for (const f of [
    'title',
    'description',
    'address',
    'latitude',
    'longitude',
    'keywords',
    'metadata',
    'visibility',
    'timezone'
  ] as const) {
    if (f in patch) out[f] = patch[f]
  }
  // the occurrence's own time moves as the series' time moves, in the series' wall clock
  const shifted = (field: 'start_dt' | 'end_dt', to: string, at: Date | string) =>
    shiftWallClock(new Date(s[field]), s.timezone, new Date(at), new Date(to)).toISOString()
  if (patch.start_dt !== undefined && patch.start_dt !== null && occurrence.start_dt !== null) {
    out.start_dt = shifted('start_dt', patch.start_dt, occurrence.start_dt)
  }
  if (patch.end_dt !== undefined && patch.end_dt !== null && occurrence.end_dt !== null) {
    out.end_dt = shifted('end_dt', patch.end_dt, occurrence.end_dt)
  } else if (out.start_dt !== undefined) {
    out.end_dt = new Date(new Date(out.start_dt as string).getTime() + ms(s.end_dt) - ms(s.start_dt)).toISOString()
  }
  return out as PatchSeriesBody
}

/** An occurrence's overrides after a `scope=this` patch: title, description and metadata (merged into its own). */
export function occurrenceOverrides (
  patch: PatchEventBody,
  metadataOverride: Json | null
): Pick<EventUpdate, 'title_override' | 'description_override' | 'metadata_override'> {
  const overrides: EventUpdate = {}
  if (patch.title !== undefined) overrides.title_override = patch.title
  if ('description' in patch) overrides.description_override = patch.description ?? null
  if (patch.metadata !== undefined) {
    overrides.metadata_override =
      patch.metadata === null ? null : JSON.stringify(mergePatch(metadataOverride ?? {}, patch.metadata))
  }
  return overrides
}

/** The overrides a `scope=future|all` patch clears: the edited fields win over the occurrences' own values. */
export function clearedOverrides (patch: PatchEventBody): Pick<EventUpdate, 'title_override' | 'description_override'> {
  const clear: EventUpdate = {}
  if (patch.title !== undefined) clear.title_override = null
  if ('description' in patch) clear.description_override = null
  return clear
}

/**
 * The series' changes that end it right before position `k`: a seed rule ends after k occurrences (after_n) or
 * on the day of k - 1; an RFC 5545 rule, or one with added dates, gets UNTIL = the start of k - 1 (as calendar
 * apps split a series) and keeps the added dates before the cut.
 */
export function endBeforeValues (s: SeriesRow, k: number): SeriesUpdate {
  const positions = positionsOf(s)
  const until = positions[k - 1]?.start ?? new Date(s.start_dt)
  if (s.rrule !== null || s.rdates.length > 0) {
    const cut = positions[k]?.start.getTime() ?? Infinity
    const rdates = s.rdates.map(d => new Date(d)).filter(d => d.getTime() < cut)
    const rrule = s.rrule === null ? null : formatRrule(withEnd(parseRrule(s.rrule), { until }))
    return { rrule, rdates, ends_on: 'on_date', end_date: until, end_count: null, window_end: null }
  }
  return s.ends_on === 'after_n'
    ? { end_count: k }
    : { ends_on: 'on_date', end_date: until, end_count: null, window_end: null }
}

/** The rule of the series that a split at position k starts: the same, its COUNT less the rule's dates before k. */
function ruleFromSplit (s: SeriesRow, k: number, cut: number): Pick<SeriesRow, 'rrule' | 'end_count' | 'rdates'> {
  const rdates = s.rdates.map(d => new Date(d))
  const rdatesAfter = rdates.filter(d => d.getTime() > cut)
  // the rule's own dates before k: k positions less the added dates among them
  const ruleBefore = k - rdates.filter(d => d.getTime() < cut).length
  const endCount = s.ends_on === 'after_n' && s.end_count !== null ? Math.max(1, s.end_count - ruleBefore) : s.end_count
  if (s.rrule === null) return { rrule: null, end_count: endCount, rdates: rdatesAfter }
  const parts = parseRrule(s.rrule)
  return {
    rrule: formatRrule(parts.COUNT !== undefined && endCount !== null ? withEnd(parts, { count: endCount }) : parts),
    end_count: endCount,
    rdates: rdatesAfter
  }
}

/**
 * A split at position k ≥ 1 (409 when the rule no longer has it): the new series (same rule and
 * content) starting at its slot with the exclusions from its day on, and the exclusions the old one keeps.
 */
export function splitPlan (s: SeriesRow, k: number): { next: SeriesInsert, exdatesBefore: Date[] } {
  const slot = positionsOf(s)[k]
  if (slot === undefined) {
    throw error409Conflict('the occurrence is no longer part of the rule', [], 'occurrence_not_in_rule')
  }
  const zone = s.timezone
  const cut = localDay(slot.start, zone)
  const { id: _id, tenant_id: _t, created_at: _c, updated_at: _u, revision: _r, ...rest } = s
  return {
    next: {
      ...rest,
      cover_image_key: null,
      // an imported series' UID stays with the first part (unique per tenant)
      ical_uid: undefined,
      metadata: JSON.stringify(withoutStorageKeys(s.metadata)),
      start_dt: slot.start,
      end_dt: slot.end,
      ...ruleFromSplit(s, k, slot.start.getTime()),
      exdates: s.exdates.filter(d => localDay(d, zone) >= cut)
    },
    exdatesBefore: s.exdates.filter(d => localDay(d, zone) < cut)
  }
}

/** The series' exclusions after deleting one occurrence: its slot's start (its own start when the rule lost it). */
export function exdatesAfterDelete (s: SeriesRow, occurrence: Pick<EventRow, 'series_index' | 'start_dt'>): Date[] {
  const slot = positionsOf(s)[positionOf(occurrence)]
  const exdate = slot?.start ?? (occurrence.start_dt === null ? undefined : new Date(occurrence.start_dt))
  return [...s.exdates, ...(exdate !== undefined ? [exdate] : [])]
}

// ---- regeneration

export interface SyncTargets {
  /** positions of the series that should have a row: from `from` on, its exclusions left out */
  wanted: Occurrence[]
  /** the slots of the series before the change (the rows hold their positions) */
  oldSlots: Occurrence[]
  /** the first old slot at or after `from`: rows of earlier slots are left alone */
  fromIndex: number
}

/**
 * The positions `s` should have rows for from `from` on, and where the rows to read start (`old` = the
 * series before the change). Throws past MAX_CREATE_PER_REQUEST (the callers cap rule and window first).
 */
export function syncTargets (s: SeriesRow, old: SeriesRow, from: Date): SyncTargets {
  const dayIn = localDays(s.timezone)
  const excluded = new Set(s.exdates.map(d => dayIn(new Date(d))))
  const positions = positionsOf(s)
  const wanted = positions.filter(p => p.start.getTime() >= from.getTime() && !excluded.has(dayIn(p.start)))
  const oldSlots = old === s ? positions : positionsOf(old)
  // the callers bound the work before it starts (checkRule, cappedWindow): this is the backstop
  if (wanted.length > MAX_CREATE_PER_REQUEST) {
    throw new Error(`series ${s.id}: ${wanted.length} positions to materialise, more than ${MAX_CREATE_PER_REQUEST}`)
  }
  const firstIndex = oldSlots.findIndex(p => p.start.getTime() >= from.getTime())
  return { wanted, oldSlots, fromIndex: firstIndex < 0 ? oldSlots.length : firstIndex }
}

export type OccurrenceSlot = Pick<EventRow, 'id' | 'series_index' | 'start_dt' | 'end_dt' | 'timezone'>
export type RemovedOccurrence = Pick<EventRow, 'id' | 'start_dt' | 'series_index'>

export interface RowMatch {
  /** rows whose day the rule no longer has (or a second row on one day) */
  removed: RemovedOccurrence[]
  /** rows that take another position, or their slot's new times */
  moves: SlotMove[]
  /** positions without a row */
  added: Occurrence[]
}

/**
 * Matches the live rows of `s` to the wanted positions by their original slot's local date (the slot
 * under `old`), so a row keeps its id, attendees and overrides while the rule still has its day; a row
 * with times of its own (moved) keeps them. Rows of slots before `from` are left alone.
 */
export function matchRows (
  s: Pick<SeriesRow, 'timezone'>,
  old: Pick<SeriesRow, 'timezone'>,
  targets: Pick<SyncTargets, 'wanted' | 'oldSlots'>,
  rows: readonly OccurrenceSlot[],
  from: Date
): RowMatch {
  const { wanted, oldSlots } = targets
  const dayIn = localDays(s.timezone)
  const byDay = new Map(wanted.map(p => [dayIn(p.start), p]))
  const dayInOld = old.timezone === s.timezone ? dayIn : localDays(old.timezone)
  const removed: RemovedOccurrence[] = []
  const moves: SlotMove[] = []
  const kept = new Set<number>()
  for (const row of rows) {
    const slot = row.series_index === null ? undefined : oldSlots[row.series_index]
    const slotStart = slot?.start ?? (row.start_dt === null ? undefined : new Date(row.start_dt))
    if (slotStart === undefined || slotStart.getTime() < from.getTime()) continue
    const p = byDay.get(dayInOld(slotStart))
    if (p === undefined || kept.has(p.index)) {
      removed.push({ id: row.id, start_dt: row.start_dt, series_index: row.series_index })
      continue
    }
    kept.add(p.index)
    const moved =
      slot === undefined || ms(row.start_dt) !== slot.start.getTime() || ms(row.end_dt) !== slot.end.getTime()
    const retime =
      !moved &&
      (ms(row.start_dt) !== p.start.getTime() || ms(row.end_dt) !== p.end.getTime() || row.timezone !== s.timezone)
    if (row.series_index !== p.index || retime) {
      moves.push({
        id: row.id,
        seriesIndex: p.index,
        times: retime ? { start: p.start, end: p.end, timezone: s.timezone } : undefined
      })
    }
  }
  return { removed, moves, added: wanted.filter(p => !kept.has(p.index)) }
}

/**
 * The pure rule of series (series.rule.ts), one table of cases per function: inputs and what they
 * give or refuse. No database. Times are UTC instants; Europe/Berlin is on summer time from
 * 2027-03-28 to 2027-10-31, so its 09:00 is 08:00Z in winter and 07:00Z in summer.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ApiError } from '../../platform/http/errors.ts'
import type { PatchEventBody } from '../events/events.schemas.ts'
import {
  cappedWindow, checkRule, clearedOverrides, effectiveScope, endBeforeValues, exdatesAfterDelete, matchRows,
  newSeriesRow, occurrenceOverrides, positionsOf, refuseStorageKeys, seriesChange, seriesPatchFrom, splitPlan,
  syncTargets, withoutStorageKeys, type AnchorRow, type OccurrenceSlot, type RuleInput, type Scope
} from './series.rule.ts'
import type { PatchSeriesBody } from './series.schemas.ts'
import type { SeriesRow } from './series.table.ts'

const BERLIN = 'Europe/Berlin'
const HOUR = 3_600_000
const DAY = 24 * HOUR
const at = (iso: string): Date => new Date(iso)
const isos = (ds: ReadonlyArray<{ start: Date }>): string[] => ds.map(d => d.start.toISOString())

/** A weekly Monday 09:00–10:00 Berlin series from 2027-01-04, four occurrences; `over` changes it. */
function series (over: Partial<SeriesRow> = {}): SeriesRow {
  return {
    tenant_id: 'tenant-a',
    id: 7,
    org_id: null,
    creator_id: 'alice',
    title: 'Standup',
    description: null,
    address: null,
    latitude: null,
    longitude: null,
    start_dt: at('2027-01-04T08:00:00Z'),
    end_dt: at('2027-01-04T09:00:00Z'),
    timezone: BERLIN,
    keywords: [],
    metadata: {},
    visibility: 20,
    status: 'draft',
    template: 'default',
    template_version: 1,
    cover_image_key: null,
    freq: 'weekly',
    interval: 1,
    repeat_days: [1],
    ends_on: 'after_n',
    end_count: 4,
    end_date: null,
    duration: '01:00:00',
    exdates: [],
    rrule: null,
    rdates: [],
    window_end: null,
    published_id: null,
    published_at: null,
    is_deleted: false,
    series_manager_id: null,
    series_manager_status: null,
    series_manager_invited_by: null,
    series_manager_invited_email: null,
    series_manager_invited_at: null,
    series_manager_accepted_at: null,
    series_manager_expires_at: null,
    capacity: null,
    waitlist_enabled: false,
    requires_approval: false,
    version: 1,
    revision: 1,
    created_at: at('2026-12-01T00:00:00Z'),
    updated_at: at('2026-12-01T00:00:00Z'),
    ...over
  }
}

/** The fields of an anchor event (`AnchorRow`), which its series row holds too. */
const ANCHOR_FIELDS = [
  'org_id', 'creator_id', 'title', 'description', 'address', 'latitude', 'longitude', 'start_dt', 'end_dt', 'timezone',
  'keywords', 'metadata', 'visibility', 'status', 'published_at', 'version', 'template', 'template_version'
] as const satisfies ReadonlyArray<keyof AnchorRow & keyof SeriesRow>

/** What a call ends in: its value, or `<status> <field location>` of the error it throws. */
function outcome<T> (f: () => T): T | { error: string } {
  try {
    return f()
  } catch (e) {
    if (e instanceof ApiError) return { error: `${e.status} ${e.errors[0]?.location ?? e.detail}` }
    if (e instanceof Error) return { error: e.message }
    throw e
  }
}

/** The named fields of an object (to compare the ones a case is about). */
function pick (o: object, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map(k => [k, (o as Record<string, unknown>)[k]]))
}

void describe('series rule: positionsOf', () => {
  const cases: Array<{ name: string, s: SeriesRow, until?: Date, starts: string[] }> = [
    {
      name: 'by count, across the spring change: 09:00 local stays, the UTC hour moves',
      s: series({ start_dt: at('2027-03-15T08:00:00Z'), end_dt: at('2027-03-15T09:00:00Z') }),
      starts: ['2027-03-15T08:00:00.000Z', '2027-03-22T08:00:00.000Z', '2027-03-29T07:00:00.000Z',
        '2027-04-05T07:00:00.000Z']
    },
    {
      name: 'by count, across the autumn change',
      s: series({ start_dt: at('2027-10-25T07:00:00Z'), end_dt: at('2027-10-25T08:00:00Z'), end_count: 2 }),
      starts: ['2027-10-25T07:00:00.000Z', '2027-11-01T08:00:00.000Z']
    },
    {
      name: 'by date: through the local day of end_date (23:30Z on the 6th is still the 6th in Berlin)',
      s: series({
        freq: 'daily', repeat_days: null, ends_on: 'on_date', end_count: null, end_date: at('2027-01-06T22:30:00Z')
      }),
      starts: ['2027-01-04T08:00:00.000Z', '2027-01-05T08:00:00.000Z', '2027-01-06T08:00:00.000Z']
    },
    {
      name: 'by date: 00:30 on the 7th in Berlin (23:30Z on the 6th) takes in the 7th',
      s: series({
        freq: 'daily', repeat_days: null, ends_on: 'on_date', end_count: null, end_date: at('2027-01-06T23:30:00Z')
      }),
      starts: ['2027-01-04T08:00:00.000Z', '2027-01-05T08:00:00.000Z', '2027-01-06T08:00:00.000Z',
        '2027-01-07T08:00:00.000Z']
    },
    {
      name: 'never: up to the window end, exclusive',
      s: series({
        freq: 'daily', repeat_days: null, ends_on: 'never', end_count: null, window_end: at('2027-01-07T08:00:00Z')
      }),
      starts: ['2027-01-04T08:00:00.000Z', '2027-01-05T08:00:00.000Z', '2027-01-06T08:00:00.000Z']
    },
    {
      name: 'never: `until` instead of the window end',
      s: series({
        freq: 'daily', repeat_days: null, ends_on: 'never', end_count: null, window_end: at('2028-01-01T00:00:00Z')
      }),
      until: at('2027-01-05T12:00:00Z'),
      starts: ['2027-01-04T08:00:00.000Z', '2027-01-05T08:00:00.000Z']
    },
    {
      name: 'by count: the window end does not bound it',
      s: series({ end_count: 3, window_end: at('2027-01-05T00:00:00Z') }),
      starts: ['2027-01-04T08:00:00.000Z', '2027-01-11T08:00:00.000Z', '2027-01-18T08:00:00.000Z']
    },
    {
      name: 'monthly on the 31st: the last day of shorter months',
      s: series({
        freq: 'monthly',
        repeat_days: null,
        timezone: 'UTC',
        end_count: 3,
        start_dt: at('2027-01-31T10:00:00Z'),
        end_dt: at('2027-01-31T11:00:00Z')
      }),
      starts: ['2027-01-31T10:00:00.000Z', '2027-02-28T10:00:00.000Z', '2027-03-31T10:00:00.000Z']
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      assert.deepEqual(isos(positionsOf(c.s, c.until)), c.starts)
    })
  }
})

void describe('series rule: effectiveScope', () => {
  const cases: Array<{ scope: Scope, index: number, expected: Scope }> = [
    { scope: 'this', index: 0, expected: 'this' },
    { scope: 'this', index: 3, expected: 'this' },
    { scope: 'future', index: 0, expected: 'all' },
    { scope: 'future', index: 1, expected: 'future' },
    { scope: 'all', index: 0, expected: 'all' },
    { scope: 'all', index: 5, expected: 'all' }
  ]
  for (const c of cases) {
    void it(`${c.scope} at position ${c.index} reaches ${c.expected}`, () => {
      assert.equal(effectiveScope(c.scope, c.index), c.expected)
    })
  }
})

void describe('series rule: checkRule', () => {
  const monday = { start_dt: at('2027-01-04T08:00:00Z'), end_dt: at('2027-01-04T09:00:00Z'), timezone: BERLIN }
  const utc = { start_dt: at('2027-01-04T08:00:00Z'), end_dt: at('2027-01-04T09:00:00Z'), timezone: 'UTC' }
  const anchorAt = { start: 'body.start_dt', end: 'body.end_dt' }
  const rule = (over: object) => ({
    freq: 'weekly',
    interval: 1,
    repeat_days: null,
    ends_on: 'never',
    end_count: null,
    end_date: null,
    rrule: null,
    rdates: [],
    ...over
  })
  interface Case { name: string, input: RuleInput, base?: Partial<SeriesRow>, prefix?: string, expected: unknown }
  const cases: Case[] = [
    { name: 'no freq, none before', input: {}, expected: { error: '400 body.freq' } },
    {
      name: 'defaults: every 1, never; a daily rule keeps no weekdays',
      input: { freq: 'daily', repeat_days: [1] },
      expected: rule({ freq: 'daily' })
    },
    {
      name: 'weekly without weekdays (with-series: body.series.)',
      input: { freq: 'weekly' },
      prefix: 'body.series.',
      expected: { error: '400 body.series.repeat_days' }
    },
    {
      name: 'weekdays sorted, once each',
      input: { freq: 'weekly', repeat_days: [5, 1, 3, 1] },
      expected: rule({ repeat_days: [1, 3, 5] })
    },
    {
      name: 'custom every 7 days from a Monday never reaches a Tuesday',
      input: { freq: 'custom', interval: 7, repeat_days: [2] },
      expected: { error: '400 body.repeat_days' }
    },
    {
      name: 'custom every 2 days from a Monday reaches Wednesday',
      input: { freq: 'custom', interval: 2, repeat_days: [3] },
      expected: rule({ freq: 'custom', interval: 2, repeat_days: [3] })
    },
    {
      name: 'after_n without a count',
      input: { freq: 'daily', ends_on: 'after_n' },
      expected: { error: '400 body.end_count' }
    },
    {
      name: 'after_n: the count is kept, an end_date dropped',
      input: { freq: 'daily', ends_on: 'after_n', end_count: 3, end_date: '2027-02-01T00:00:00Z' },
      expected: rule({ freq: 'daily', ends_on: 'after_n', end_count: 3 })
    },
    {
      name: 'on_date without a date',
      input: { freq: 'daily', ends_on: 'on_date' },
      expected: { error: '400 body.end_date' }
    },
    {
      name: 'on_date the local day before the first start',
      input: { freq: 'daily', ends_on: 'on_date', end_date: '2027-01-03T22:00:00Z' },
      expected: { error: '400 body.end_date' }
    },
    {
      name: 'on_date the day before in UTC but the first day in Berlin',
      input: { freq: 'daily', ends_on: 'on_date', end_date: '2027-01-03T23:30:00Z' },
      expected: rule({ freq: 'daily', ends_on: 'on_date', end_date: at('2027-01-03T23:30:00Z') })
    },
    {
      name: 'on_date yielding more than 500 occurrences',
      input: { freq: 'daily', ends_on: 'on_date', end_date: '2028-06-01T00:00:00Z' },
      expected: { error: '400 body.end_date' }
    },
    {
      name: 'after_n: the last start exactly 10 years on',
      input: { freq: 'monthly', interval: 12, ends_on: 'after_n', end_count: 11 },
      base: utc,
      expected: rule({ freq: 'monthly', interval: 12, ends_on: 'after_n', end_count: 11 })
    },
    {
      name: 'after_n: the last start more than 10 years on',
      input: { freq: 'monthly', interval: 12, ends_on: 'after_n', end_count: 12 },
      base: utc,
      expected: { error: '400 body.end_count' }
    },
    {
      name: 'an anchor in the year 9000',
      input: { freq: 'daily' },
      base: { start_dt: at('9000-01-01T00:00:00Z'), end_dt: at('9000-01-01T01:00:00Z') },
      expected: { error: '400 body.start_dt' }
    },
    {
      name: 'an occurrence longer than 366 days',
      input: { freq: 'daily' },
      base: { end_dt: at('2028-01-06T08:00:00Z') },
      expected: { error: '400 body.end_dt' }
    },
    {
      name: 'a patch keeps what it does not name',
      input: { end_count: 6 },
      base: { freq: 'weekly', interval: 2, repeat_days: [1, 4], ends_on: 'after_n', end_count: 4 },
      expected: rule({ interval: 2, repeat_days: [1, 4], ends_on: 'after_n', end_count: 6 })
    },
    {
      name: 'a patch to never drops the count',
      input: { ends_on: 'never' },
      base: { freq: 'weekly', repeat_days: [1], ends_on: 'after_n', end_count: 4 },
      expected: rule({ repeat_days: [1] })
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const base = { ...monday, ...c.base }
      assert.deepEqual(outcome(() => checkRule(c.input, base, c.prefix ?? 'body.', anchorAt)), c.expected)
    })
  }
})

void describe('series rule: cappedWindow', () => {
  const daily = series({
    freq: 'daily',
    repeat_days: null,
    ends_on: 'never',
    end_count: null,
    timezone: 'UTC',
    start_dt: at('2027-01-01T10:00:00Z'),
    end_dt: at('2027-01-01T11:00:00Z')
  })
  const cases: Array<{ name: string, from: Date, windowEnd: Date, expected: string }> = [
    {
      name: 'more than 500 positions in the window: ends at position 500',
      from: at('2027-01-01T10:00:00Z'),
      windowEnd: at('2029-01-01T00:00:00Z'),
      expected: new Date(Date.parse('2027-01-01T10:00:00Z') + 500 * DAY).toISOString()
    },
    {
      name: 'from a later position: 500 positions after it',
      from: at('2027-01-11T00:00:00Z'),
      windowEnd: at('2029-01-01T00:00:00Z'),
      expected: new Date(Date.parse('2027-01-11T10:00:00Z') + 500 * DAY).toISOString()
    },
    {
      name: 'fewer positions in the window: the window end',
      from: at('2027-01-01T10:00:00Z'),
      windowEnd: at('2027-06-01T00:00:00Z'),
      expected: '2027-06-01T00:00:00.000Z'
    },
    {
      name: 'from after every position of the window: the window end',
      from: at('2027-07-01T00:00:00Z'),
      windowEnd: at('2027-06-01T00:00:00Z'),
      expected: '2027-06-01T00:00:00.000Z'
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      assert.equal(cappedWindow(daily, c.from, c.windowEnd).toISOString(), c.expected)
    })
  }
})

void describe('series rule: withoutStorageKeys', () => {
  const cases: Array<{ metadata: Record<string, unknown>, expected: Record<string, unknown> }> = [
    { metadata: {}, expected: {} },
    { metadata: { room: 'A' }, expected: { room: 'A' } },
    { metadata: { room: 'A', cover_image: { key: 'k' } }, expected: { room: 'A' } }
  ]
  for (const c of cases) {
    void it(JSON.stringify(c.metadata), () => {
      const before = structuredClone(c.metadata)
      assert.deepEqual(withoutStorageKeys(c.metadata), c.expected)
      assert.deepEqual(c.metadata, before, 'the input is left as it was')
    })
  }
})

void describe('series rule: refuseStorageKeys', () => {
  const cases: Array<{ metadata: Record<string, unknown> | null | undefined, expected: unknown }> = [
    { metadata: undefined, expected: undefined },
    { metadata: null, expected: undefined },
    { metadata: { room: 'A' }, expected: undefined },
    { metadata: { cover_image: null }, expected: { error: '400 body.metadata.cover_image' } }
  ]
  for (const c of cases) {
    void it(JSON.stringify(c.metadata) ?? 'undefined', () => {
      assert.deepEqual(outcome(() => refuseStorageKeys(c.metadata)), c.expected)
    })
  }
})

void describe('series rule: newSeriesRow', () => {
  const now = at('2027-01-01T00:00:00Z')
  /** The anchor event of `series()` (the fields an event shares with its series); `over` changes it. */
  const anchor = (over: Partial<AnchorRow> = {}): AnchorRow => {
    const s = series()
    return { ...Object.fromEntries(ANCHOR_FIELDS.map(k => [k, s[k]])) as AnchorRow, ...over }
  }
  const weekly: RuleInput = { freq: 'weekly', repeat_days: [1], ends_on: 'after_n', end_count: 4 }
  const KEYS = ['start_dt', 'end_dt', 'duration', 'status', 'metadata', 'cover_image_key', 'ends_on', 'window_end']
  const row = (over: object) => ({
    start_dt: at('2027-01-04T08:00:00Z'),
    end_dt: at('2027-01-04T09:00:00Z'),
    duration: '01:00:00',
    status: 'draft',
    metadata: '{}',
    cover_image_key: null,
    ends_on: 'after_n',
    window_end: null,
    ...over
  })
  const cases: Array<{ name: string, anchor: AnchorRow, input?: RuleInput, prefix?: string, expected: unknown }> = [
    { name: 'a weekly series by count', anchor: anchor(), expected: row({}) },
    {
      name: 'with-series, no start',
      anchor: anchor({ start_dt: null }),
      prefix: 'body.series.',
      expected: { error: '400 body.start_dt' }
    },
    { name: 'a conversion, no start', anchor: anchor({ start_dt: null }), expected: { error: '400 path.id' } },
    {
      name: 'an anchor more than 12 months before now',
      anchor: anchor({ start_dt: at('2025-12-31T23:00:00Z'), end_dt: at('2025-12-31T23:30:00Z') }),
      expected: { error: '400 path.id' }
    },
    {
      name: 'an anchor without an end lasts no time',
      anchor: anchor({ end_dt: null }),
      expected: row({ end_dt: at('2027-01-04T08:00:00Z'), duration: '00:00:00' })
    },
    {
      name: 'a published anchor makes a published series, an archived one a draft',
      anchor: anchor({ status: 'published', published_at: now }),
      expected: row({ status: 'published' })
    },
    { name: 'an archived anchor', anchor: anchor({ status: 'archived' }), expected: row({}) },
    {
      name: "the anchor's cover stays the anchor's",
      anchor: anchor({ metadata: { room: 'A', cover_image: { key: 'k' } } }),
      expected: row({ metadata: '{"room":"A"}' })
    },
    {
      name: 'never, a future anchor: the window runs 12 months from the anchor',
      anchor: anchor(),
      input: { freq: 'weekly', repeat_days: [1] },
      expected: row({ ends_on: 'never', window_end: at('2028-01-04T08:00:00Z') })
    },
    {
      name: 'never, a past anchor: the window runs 12 months from now',
      anchor: anchor({ start_dt: at('2026-11-02T08:00:00Z'), end_dt: at('2026-11-02T09:00:00Z') }),
      input: { freq: 'weekly', repeat_days: [1] },
      expected: row({
        start_dt: at('2026-11-02T08:00:00Z'),
        end_dt: at('2026-11-02T09:00:00Z'),
        ends_on: 'never',
        window_end: at('2028-01-01T00:00:00Z')
      })
    },
    {
      name: 'never, daily from 11 months ago: the window stops at position 500 (09:00 summer time)',
      anchor: anchor({ start_dt: at('2026-02-02T08:00:00Z'), end_dt: at('2026-02-02T09:00:00Z') }),
      input: { freq: 'daily' },
      expected: row({
        start_dt: at('2026-02-02T08:00:00Z'),
        end_dt: at('2026-02-02T09:00:00Z'),
        ends_on: 'never',
        window_end: at('2027-06-17T07:00:00Z')
      })
    },
    {
      name: 'with-series: a too long anchor names body.end_dt',
      anchor: anchor({ end_dt: at('2028-02-01T00:00:00Z') }),
      prefix: 'body.series.',
      expected: { error: '400 body.end_dt' }
    },
    {
      name: 'a conversion: a too long anchor names path.id',
      anchor: anchor({ end_dt: at('2028-02-01T00:00:00Z') }),
      expected: { error: '400 path.id' }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const got = outcome(() => newSeriesRow(c.anchor, c.input ?? weekly, c.prefix ?? 'body.', now))
      assert.deepEqual('error' in got ? got : pick(got, KEYS), c.expected)
    })
  }
})

void describe('series rule: seriesChange', () => {
  const now = at('2027-01-01T00:00:00Z')
  const old = { start_dt: at('2025-11-03T08:00:00Z'), end_dt: at('2025-11-03T09:00:00Z') }
  const RULE_KEYS = [
    'end_count', 'end_date', 'ends_on', 'freq', 'interval', 'rdates', 'repeat_days', 'rrule', 'window_end'
  ]
  const TIME_KEYS = ['duration', 'end_dt', 'start_dt', 'timezone']
  interface Change { keys: string[], values?: Record<string, unknown>, fields?: string[], regenerate: boolean }
  const cases: Array<{
    name: string
    s?: SeriesRow
    input: PatchSeriesBody
    expected: Change | { error: string }
  }> = [
    { name: 'nothing', input: {}, expected: { keys: [], fields: [], regenerate: false } },
    {
      name: 'content only: cascaded, nothing regenerated',
      input: { title: 'Sync', address: null },
      expected: {
        keys: ['address', 'title'],
        values: { title: 'Sync', address: null },
        fields: ['address', 'title'],
        regenerate: false
      }
    },
    {
      name: 'keywords null: none',
      input: { keywords: null },
      expected: { keys: ['keywords'], values: { keywords: [] }, regenerate: false }
    },
    { name: 'an unknown time zone', input: { timezone: 'Mars/Olympus' }, expected: { error: '400 body.timezone' } },
    {
      name: 'an end before the start',
      input: { start_dt: '2027-01-04T08:00:00Z', end_dt: '2027-01-04T07:00:00Z' },
      expected: { error: '400 body.end_dt' }
    },
    {
      name: 'a new start alone keeps the length',
      input: { start_dt: '2027-01-04T09:00:00Z' },
      expected: {
        keys: [...RULE_KEYS, ...TIME_KEYS].sort(),
        values: {
          start_dt: at('2027-01-04T09:00:00Z'),
          end_dt: at('2027-01-04T10:00:00Z'),
          duration: '01:00:00',
          window_end: null
        },
        regenerate: true
      }
    },
    {
      name: 'a time zone alone regenerates (same instants)',
      input: { timezone: 'Europe/London' },
      expected: { keys: [...RULE_KEYS, ...TIME_KEYS].sort(), values: { timezone: 'Europe/London' }, regenerate: true }
    },
    {
      name: 'an old anchor moves back by half a day',
      s: series(old),
      input: { start_dt: '2025-11-02T20:00:00Z' },
      expected: {
        keys: [...RULE_KEYS, ...TIME_KEYS].sort(), values: { start_dt: at('2025-11-02T20:00:00Z') }, regenerate: true
      }
    },
    {
      name: 'an old anchor moves back by two days',
      s: series(old),
      input: { start_dt: '2025-11-01T08:00:00Z' },
      expected: { error: '400 body.start_dt' }
    },
    {
      name: 'a recent anchor moves back by two days',
      input: { start_dt: '2027-01-02T08:00:00Z' },
      expected: {
        keys: [...RULE_KEYS, ...TIME_KEYS].sort(), values: { start_dt: at('2027-01-02T08:00:00Z') }, regenerate: true
      }
    },
    {
      name: 'a rule to never: the window runs 12 months from the anchor',
      input: { ends_on: 'never' },
      expected: {
        keys: RULE_KEYS,
        values: { ends_on: 'never', end_count: null, window_end: at('2028-01-04T08:00:00Z') },
        regenerate: true
      }
    },
    {
      name: 'a bad rule',
      input: { freq: 'custom', interval: 7, repeat_days: [2] },
      expected: { error: '400 body.repeat_days' }
    },
    {
      name: 'metadata merged, its storage keys kept out',
      s: series({ metadata: { a: 1, b: 2, cover_image: { key: 'k' } } }),
      input: { metadata: { b: null, c: 3 } },
      expected: { keys: ['metadata'], values: { metadata: '{"a":1,"c":3}' }, fields: ['metadata'], regenerate: false }
    },
    {
      name: 'metadata null: empty',
      input: { metadata: null },
      expected: { keys: ['metadata'], values: { metadata: '{}' }, regenerate: false }
    },
    {
      name: 'metadata naming a storage key',
      input: { metadata: { cover_image: 'x' } },
      expected: { error: '400 body.metadata.cover_image' }
    },
    {
      name: 'metadata over 16 KiB',
      input: { metadata: { a: 'x'.repeat(16_384) } },
      expected: { error: '400 body.metadata' }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const got = outcome(() => seriesChange(c.s ?? series(), c.input, now))
      if ('error' in got || 'error' in c.expected) {
        assert.deepEqual(got, c.expected)
        return
      }
      assert.deepEqual(Object.keys(got.values).sort(), c.expected.keys)
      const values = c.expected.values
      if (values !== undefined) assert.deepEqual(pick(got.values, Object.keys(values)), values)
      if (c.expected.fields !== undefined) assert.deepEqual([...got.fields].sort(), c.expected.fields)
      assert.equal(got.regenerate, c.expected.regenerate)
    })
  }
})

void describe('series rule: seriesPatchFrom', () => {
  // the series' anchor in winter; the occurrence edited in summer (07:00Z = 09:00 Berlin)
  const s = series()
  const summer = { start_dt: at('2027-07-05T07:00:00Z'), end_dt: at('2027-07-05T08:00:00Z') }
  type Times = Pick<OccurrenceSlot, 'start_dt' | 'end_dt'>
  const cases: Array<{ name: string, occurrence?: Times, patch: PatchEventBody, expected: object }> = [
    {
      name: 'an hour later in summer is an hour later on the winter anchor (wall clock, not UTC)',
      patch: { start_dt: '2027-07-05T08:00:00Z' },
      expected: { start_dt: '2027-01-04T09:00:00.000Z', end_dt: '2027-01-04T10:00:00.000Z' }
    },
    {
      name: 'start and end: each shifted by its own difference',
      patch: { start_dt: '2027-07-05T08:00:00Z', end_dt: '2027-07-05T09:30:00Z' },
      expected: { start_dt: '2027-01-04T09:00:00.000Z', end_dt: '2027-01-04T10:30:00.000Z' }
    },
    {
      name: 'a day later',
      patch: { start_dt: '2027-07-06T07:00:00Z' },
      expected: { start_dt: '2027-01-05T08:00:00.000Z', end_dt: '2027-01-05T09:00:00.000Z' }
    },
    {
      name: 'content fields carried over; priority and template are not series fields',
      patch: { title: 'Sync', description: null, keywords: ['a'], timezone: 'UTC', priority: 3, template: 'x' },
      expected: { title: 'Sync', description: null, keywords: ['a'], timezone: 'UTC' }
    },
    { name: 'a null start moves nothing', patch: { start_dt: null }, expected: {} },
    {
      name: 'an occurrence without times moves nothing',
      occurrence: { start_dt: null, end_dt: null },
      patch: { start_dt: '2027-07-05T08:00:00Z', end_dt: '2027-07-05T09:00:00Z' },
      expected: {}
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      assert.deepEqual(seriesPatchFrom(s, c.occurrence ?? summer, c.patch), c.expected)
    })
  }
})

void describe('series rule: occurrenceOverrides', () => {
  const cases: Array<{ name: string, patch: PatchEventBody, own: Record<string, unknown> | null, expected: object }> = [
    { name: 'nothing overridden', patch: { address: 'x', start_dt: '2027-01-04T09:00:00Z' }, own: null, expected: {} },
    { name: 'a title', patch: { title: 'Mine' }, own: null, expected: { title_override: 'Mine' } },
    { name: 'a null description', patch: { description: null }, own: null, expected: { description_override: null } },
    {
      name: 'metadata merged into its own',
      patch: { metadata: { a: null, b: 2 } },
      own: { a: 1, c: 3 },
      expected: { metadata_override: '{"c":3,"b":2}' }
    },
    {
      name: 'metadata null clears its own',
      patch: { metadata: null },
      own: { a: 1 },
      expected: { metadata_override: null }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      assert.deepEqual(occurrenceOverrides(c.patch, c.own), c.expected)
    })
  }
})

void describe('series rule: clearedOverrides', () => {
  const cases: Array<{ patch: PatchEventBody, expected: object }> = [
    { patch: {}, expected: {} },
    { patch: { metadata: { a: 1 }, priority: 2 }, expected: {} },
    { patch: { title: 'x' }, expected: { title_override: null } },
    { patch: { title: 'x', description: null }, expected: { title_override: null, description_override: null } }
  ]
  for (const c of cases) {
    void it(JSON.stringify(c.patch), () => {
      assert.deepEqual(clearedOverrides(c.patch), c.expected)
    })
  }
})

void describe('series rule: endBeforeValues', () => {
  const window = at('2027-03-01T00:00:00Z')
  const cases: Array<{ name: string, s: SeriesRow, k: number, expected: object }> = [
    { name: 'by count: k occurrences', s: series({ end_count: 10 }), k: 3, expected: { end_count: 3 } },
    {
      name: 'by date: on the day of position k - 1',
      s: series({ ends_on: 'on_date', end_count: null, end_date: at('2027-02-28T00:00:00Z') }),
      k: 3,
      expected: { ends_on: 'on_date', end_date: at('2027-01-18T08:00:00Z'), end_count: null, window_end: null }
    },
    {
      name: 'never: ends on the day of position k - 1, no window',
      s: series({ ends_on: 'never', end_count: null, window_end: window }),
      k: 1,
      expected: { ends_on: 'on_date', end_date: at('2027-01-04T08:00:00Z'), end_count: null, window_end: null }
    },
    {
      name: 'past the rule: on the first day',
      s: series({ ends_on: 'on_date', end_count: null, end_date: at('2027-01-12T00:00:00Z') }),
      k: 5,
      expected: { ends_on: 'on_date', end_date: at('2027-01-04T08:00:00Z'), end_count: null, window_end: null }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      assert.deepEqual(endBeforeValues(c.s, c.k), c.expected)
    })
  }
})

void describe('series rule: splitPlan', () => {
  // exdates: the 11th, and 00:30 on the 18th in Berlin (23:30Z on the 17th), the day of position 2
  const exdates = [at('2027-01-11T08:00:00Z'), at('2027-01-17T23:30:00Z')]
  const KEYS = ['start_dt', 'end_dt', 'end_count', 'exdates', 'metadata', 'cover_image_key', 'id', 'revision']
  const cases: Array<{ name: string, s: SeriesRow, k: number, expected: unknown }> = [
    {
      name: 'by count at position 2: the new series has the rest; exclusions split by local day',
      s: series({ end_count: 6, exdates, metadata: { room: 'A', cover_image: { key: 'k' } }, cover_image_key: 'old' }),
      k: 2,
      expected: {
        next: {
          start_dt: at('2027-01-18T08:00:00Z'),
          end_dt: at('2027-01-18T09:00:00Z'),
          end_count: 4,
          exdates: [at('2027-01-17T23:30:00Z')],
          metadata: '{"room":"A"}',
          cover_image_key: null,
          id: undefined,
          revision: undefined
        },
        exdatesBefore: [at('2027-01-11T08:00:00Z')]
      }
    },
    {
      name: 'by count at the last position: one left',
      s: series({ end_count: 4 }),
      k: 3,
      expected: {
        next: {
          start_dt: at('2027-01-25T08:00:00Z'),
          end_dt: at('2027-01-25T09:00:00Z'),
          end_count: 1,
          exdates: [],
          metadata: '{}',
          cover_image_key: null,
          id: undefined,
          revision: undefined
        },
        exdatesBefore: []
      }
    },
    {
      name: 'a position the rule no longer has',
      s: series({ end_count: 4 }),
      k: 4,
      expected: { error: '409 the occurrence is no longer part of the rule' }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const got = outcome(() => splitPlan(c.s, c.k))
      assert.deepEqual('error' in got ? got : { next: pick(got.next, KEYS), exdatesBefore: got.exdatesBefore },
        c.expected)
    })
  }
})

void describe('series rule: exdatesAfterDelete', () => {
  const before = [at('2027-01-11T08:00:00Z')]
  type Slot = Pick<OccurrenceSlot, 'series_index' | 'start_dt'>
  const cases: Array<{ name: string, occurrence: Slot, expected: Date[] }> = [
    {
      name: 'an occurrence in its slot: the slot start',
      occurrence: { series_index: 2, start_dt: at('2027-01-18T08:00:00Z') },
      expected: [...before, at('2027-01-18T08:00:00Z')]
    },
    {
      name: 'a moved occurrence: its slot start, not its own',
      occurrence: { series_index: 2, start_dt: at('2027-01-19T15:00:00Z') },
      expected: [...before, at('2027-01-18T08:00:00Z')]
    },
    {
      name: 'no position: the anchor slot',
      occurrence: { series_index: null, start_dt: at('2027-01-05T08:00:00Z') },
      expected: [...before, at('2027-01-04T08:00:00Z')]
    },
    {
      name: 'a position the rule lost: its own start',
      occurrence: { series_index: 9, start_dt: at('2027-03-08T08:00:00Z') },
      expected: [...before, at('2027-03-08T08:00:00Z')]
    },
    {
      name: 'a position the rule lost, no start: nothing added',
      occurrence: { series_index: 9, start_dt: null },
      expected: before
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      assert.deepEqual(exdatesAfterDelete(series({ exdates: before }), c.occurrence), c.expected)
    })
  }
})

void describe('series rule: syncTargets', () => {
  const s = series()
  const cases: Array<{ name: string, s: SeriesRow, old?: SeriesRow, from: Date, expected: unknown }> = [
    {
      name: 'from the anchor: every position',
      s,
      from: at('2027-01-04T08:00:00Z'),
      expected: {
        wanted: ['2027-01-04T08:00:00.000Z', '2027-01-11T08:00:00.000Z', '2027-01-18T08:00:00.000Z',
          '2027-01-25T08:00:00.000Z'],
        fromIndex: 0
      }
    },
    {
      name: 'from between positions: the later ones',
      s,
      from: at('2027-01-12T00:00:00Z'),
      expected: { wanted: ['2027-01-18T08:00:00.000Z', '2027-01-25T08:00:00.000Z'], fromIndex: 2 }
    },
    {
      name: 'an exclusion on the local day of a position (another instant) leaves it out',
      s: series({ exdates: [at('2027-01-17T23:30:00Z')] }),
      from: at('2027-01-04T08:00:00Z'),
      expected: {
        wanted: ['2027-01-04T08:00:00.000Z', '2027-01-11T08:00:00.000Z', '2027-01-25T08:00:00.000Z'], fromIndex: 0
      }
    },
    {
      name: 'from after every position: nothing, rows from past the end',
      s,
      from: at('2027-02-01T00:00:00Z'),
      expected: { wanted: [], fromIndex: 4 }
    },
    {
      name: 'the rows are read from the slots of the series before the change',
      s: series({ end_count: 2 }),
      old: series({ freq: 'daily', repeat_days: null, end_count: 10 }),
      from: at('2027-01-06T00:00:00Z'),
      expected: { wanted: ['2027-01-11T08:00:00.000Z'], fromIndex: 2 }
    },
    {
      name: 'more than 500 positions to make',
      s: series({
        freq: 'daily', repeat_days: null, ends_on: 'never', end_count: null, window_end: at('2028-09-01T00:00:00Z')
      }),
      from: at('2027-01-04T08:00:00Z'),
      expected: { error: 'series 7: 606 positions to materialise, more than 500' }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const got = outcome(() => syncTargets(c.s, c.old ?? c.s, c.from))
      assert.deepEqual('error' in got ? got : { wanted: isos(got.wanted), fromIndex: got.fromIndex }, c.expected)
    })
  }
})

void describe('series rule: matchRows', () => {
  const old = series()
  // the rows of `old`: ids 11-14 at positions 0-3, in their slots
  const slots = positionsOf(old)
  const inPlace = (over: Partial<OccurrenceSlot> = {}, i = 0): OccurrenceSlot => ({
    id: 11 + i,
    series_index: i,
    start_dt: slots[i]?.start ?? null,
    end_dt: slots[i]?.end ?? null,
    timezone: BERLIN,
    ...over
  })
  const rows = [0, 1, 2, 3].map(i => inPlace({}, i))
  const from = at('2027-01-04T08:00:00Z')
  const spring = series({ start_dt: at('2027-03-15T08:00:00Z'), end_dt: at('2027-03-15T09:00:00Z') })
  const midnight = (timezone: string) => series({
    freq: 'daily',
    repeat_days: null,
    end_count: 2,
    timezone,
    start_dt: at('2027-01-03T23:30:00Z'),
    end_dt: at('2027-01-04T00:30:00Z')
  })
  interface Case { name: string, s: SeriesRow, old?: SeriesRow, rows: OccurrenceSlot[], from?: Date, expected: unknown }
  const cases: Case[] = [
    { name: 'nothing changed', s: old, rows, expected: { removed: [], moves: [], added: [] } },
    {
      name: 'a row missing: its position is added',
      s: old,
      rows: rows.filter(r => r.id !== 13),
      expected: { removed: [], moves: [], added: [2] }
    },
    {
      name: 'Mondays to Mondays and Wednesdays: rows keep their days, take new positions, the rest go',
      s: series({ repeat_days: [1, 3] }),
      rows,
      expected: {
        removed: [{ id: 13, start_dt: at('2027-01-18T08:00:00Z'), series_index: 2 },
          { id: 14, start_dt: at('2027-01-25T08:00:00Z'), series_index: 3 }],
        moves: [{ id: 12, seriesIndex: 2, times: undefined }],
        added: [1, 3]
      }
    },
    {
      name: 'an hour later: rows in their slots are retimed, a moved row keeps its times',
      s: series({ start_dt: at('2027-01-04T09:00:00Z'), end_dt: at('2027-01-04T10:00:00Z'), end_count: 2 }),
      rows: [inPlace({}, 0), inPlace({ start_dt: at('2027-01-11T12:00:00Z'), end_dt: at('2027-01-11T13:00:00Z') }, 1)],
      expected: {
        removed: [],
        moves: [{
          id: 11,
          seriesIndex: 0,
          times: { start: at('2027-01-04T09:00:00Z'), end: at('2027-01-04T10:00:00Z'), timezone: BERLIN }
        }],
        added: []
      }
    },
    {
      name: 'another time zone, same instants: rows take the zone',
      s: series({ timezone: 'Europe/London', end_count: 1 }),
      rows: [inPlace({}, 0)],
      expected: {
        removed: [],
        moves: [{
          id: 11,
          seriesIndex: 0,
          times: { start: at('2027-01-04T08:00:00Z'), end: at('2027-01-04T09:00:00Z'), timezone: 'Europe/London' }
        }],
        added: []
      }
    },
    {
      name: 'another zone across midnight: a row keeps the day it had in the old zone ' +
        '(00:30 Berlin is 23:30Z the day before)',
      s: midnight('UTC'),
      old: midnight(BERLIN),
      rows: [
        inPlace({ start_dt: at('2027-01-03T23:30:00Z'), end_dt: at('2027-01-04T00:30:00Z') }, 0),
        inPlace({ start_dt: at('2027-01-04T23:30:00Z'), end_dt: at('2027-01-05T00:30:00Z') }, 1)
      ],
      from: at('2027-01-03T23:30:00Z'),
      expected: {
        removed: [{ id: 12, start_dt: at('2027-01-04T23:30:00Z'), series_index: 1 }],
        moves: [{
          id: 11,
          seriesIndex: 1,
          times: { start: at('2027-01-04T23:30:00Z'), end: at('2027-01-05T00:30:00Z'), timezone: 'UTC' }
        }],
        added: [0]
      }
    },
    {
      name: 'across the spring change: rows at 09:00 local stay',
      s: spring,
      old: spring,
      rows: [
        inPlace({ start_dt: at('2027-03-22T08:00:00Z'), end_dt: at('2027-03-22T09:00:00Z'), series_index: 1, id: 12 }),
        inPlace({ start_dt: at('2027-03-29T07:00:00Z'), end_dt: at('2027-03-29T08:00:00Z'), series_index: 2, id: 13 })
      ],
      from: at('2027-03-20T00:00:00Z'),
      expected: { removed: [], moves: [], added: [3] }
    },
    {
      name: 'rows of slots before `from` are left alone',
      s: series({ repeat_days: [2] }),
      rows,
      from: at('2027-01-12T00:00:00Z'),
      expected: {
        removed: [{ id: 13, start_dt: at('2027-01-18T08:00:00Z'), series_index: 2 },
          { id: 14, start_dt: at('2027-01-25T08:00:00Z'), series_index: 3 }],
        moves: [],
        added: [2, 3]
      }
    },
    {
      name: 'a second row on one day goes',
      s: old,
      rows: [...rows, inPlace({ id: 99, series_index: null }, 1)],
      expected: {
        removed: [{ id: 99, start_dt: at('2027-01-11T08:00:00Z'), series_index: null }], moves: [], added: []
      }
    }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const before = c.old ?? old
      const got = matchRows(c.s, before, syncTargets(c.s, before, c.from ?? from), c.rows, c.from ?? from)
      assert.deepEqual({ ...got, added: got.added.map(p => p.index) }, c.expected)
    })
  }
})

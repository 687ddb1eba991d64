import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { DateTime } from 'luxon'
import {
  expand, intervalText, shiftWallClock, wallTime, weekdayIn, type Anchor, type Rule
} from './series.recurrence.ts'

const HOUR = 3_600_000
const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'Australia/Sydney',
  'UTC',
  'Asia/Kolkata',
  'America/Sao_Paulo',
  'Pacific/Auckland'
] as const

const local = (iso: string, zone: string): Date => DateTime.fromISO(iso, { zone }).toJSDate()
const localIso = (d: Date, zone: string): string => DateTime.fromJSDate(d, { zone }).toFormat("yyyy-MM-dd'T'HH:mm")

/** A random anchor at a wall time that exists every day in the zones above (04:00–23:59). */
const anchorArb = fc.record({
  zone: fc.constantFrom(...ZONES),
  day: fc.integer({ min: 0, max: 3 * 366 }),
  hour: fc.integer({ min: 4, max: 23 }),
  minute: fc.integer({ min: 0, max: 59 }),
  durationMin: fc.integer({ min: 0, max: 24 * 60 })
}).map(({ zone, day, hour, minute, durationMin }) => {
  const start = DateTime.fromObject({ year: 2026, month: 1, day: 1, hour, minute }, { zone }).plus({ days: day })
  return { start: start.toJSDate(), durationMs: durationMin * 60_000, timezone: zone } satisfies Anchor
})

const ruleArb = fc.record({
  freq: fc.constantFrom('daily', 'weekly', 'monthly', 'custom' as const),
  interval: fc.integer({ min: 1, max: 12 }),
  repeatDays: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 7 }),
  endsOn: fc.constantFrom('never', 'on_date', 'after_n' as const),
  endCount: fc.integer({ min: 1, max: 60 }),
  endAfterDays: fc.integer({ min: 0, max: 800 })
})

type RuleInput = typeof ruleArb extends fc.Arbitrary<infer T> ? T : never

function ruleOf (r: RuleInput, anchor: Anchor): Rule {
  return {
    freq: r.freq,
    interval: r.interval,
    repeatDays: r.repeatDays,
    endsOn: r.endsOn,
    endCount: r.endsOn === 'after_n' ? r.endCount : null,
    endDate: r.endsOn === 'on_date' ? new Date(anchor.start.getTime() + r.endAfterDays * 24 * HOUR) : null
  }
}

void describe('recurrence engine: properties', () => {
  void it('strictly increasing, on allowed weekdays, count and end date respected, local time constant', () => {
    fc.assert(fc.property(anchorArb, ruleArb, (anchor, r) => {
      const rule = ruleOf(r, anchor)
      const until = new Date(anchor.start.getTime() + 250 * 24 * HOUR)
      const occ = expand(anchor, rule, { until, max: 500 })
      assert.ok(occ.length >= 1, 'the anchor is always an occurrence')
      assert.equal(occ[0]?.start.getTime(), anchor.start.getTime())
      const zone = anchor.timezone
      const time = wallTime(anchor.start, zone)
      for (const [i, o] of occ.entries()) {
        assert.equal(o.index, i)
        assert.equal(o.end.getTime() - o.start.getTime(), anchor.durationMs)
        assert.equal(wallTime(o.start, zone), time, `local time kept at ${o.start.toISOString()}`)
        assert.ok(o.start.getTime() < until.getTime())
        if (i > 0) {
          const prev = occ[i - 1]
          assert.ok(prev !== undefined && o.start.getTime() > prev.start.getTime(), 'strictly increasing')
          if (rule.freq === 'weekly' || rule.freq === 'custom') {
            assert.ok(r.repeatDays.includes(weekdayIn(o.start, zone)), 'on an allowed weekday')
          }
        }
      }
      if (rule.endsOn === 'after_n') assert.ok(occ.length <= r.endCount)
      if (rule.endsOn === 'on_date' && rule.endDate !== null) {
        const lastDay = DateTime.fromJSDate(rule.endDate, { zone }).toISODate() ?? ''
        for (const o of occ) assert.ok((DateTime.fromJSDate(o.start, { zone }).toISODate() ?? '') <= lastDay)
      }
      // the bound that stopped the expansion is a real one: the next candidate would break it
      const more = expand(anchor, rule, { until: new Date(until.getTime() + 60 * 24 * HOUR), max: 501 })
      assert.deepEqual(
        more.slice(0, occ.length).map(o => o.start.getTime()),
        occ.map(o => o.start.getTime()),
        'a prefix of any longer window'
      )
      const next = more[occ.length]
      if (next !== undefined) {
        assert.ok(
          next.start.getTime() >= until.getTime() || occ.length === 500,
          'nothing skipped before the window end'
        )
      }
    }), { numRuns: 500 })
  })

  void it('daily rules step by interval days and monthly rules land on the anchor day or the month end', () => {
    fc.assert(fc.property(anchorArb, fc.integer({ min: 1, max: 6 }), (anchor, interval) => {
      const zone = anchor.timezone
      const days = expand(
        anchor,
        { freq: 'daily', interval, repeatDays: null, endsOn: 'after_n', endCount: 30, endDate: null },
        { max: 500 }
      )
      const d0 = DateTime.fromJSDate(anchor.start, { zone }).startOf('day')
      for (const o of days) {
        const diff = Math.round(DateTime.fromJSDate(o.start, { zone }).startOf('day').diff(d0, 'days').days)
        assert.equal(diff, o.index * interval)
      }
      const months = expand(
        anchor,
        { freq: 'monthly', interval, repeatDays: null, endsOn: 'after_n', endCount: 24, endDate: null },
        { max: 500 }
      )
      const anchorDay = DateTime.fromJSDate(anchor.start, { zone }).day
      for (const o of months) {
        const l = DateTime.fromJSDate(o.start, { zone })
        assert.equal(l.day, Math.min(anchorDay, l.daysInMonth ?? 31))
      }
    }), { numRuns: 200 })
  })
})

void describe('recurrence engine: DST and month ends', () => {
  const weekly = (days: number[], count: number): Rule => ({
    freq: 'weekly',
    interval: 1,
    repeatDays: days,
    endsOn: 'after_n',
    endCount: count,
    endDate: null
  })

  for (const [zone, expected] of [
    ['Europe/Berlin', ['2027-03-22T09:00', '2027-03-29T09:00', '2027-04-05T09:00']],
    ['America/New_York', ['2027-03-08T09:00', '2027-03-15T09:00', '2027-03-22T09:00']],
    ['Australia/Sydney', ['2027-03-29T09:00', '2027-04-05T09:00', '2027-04-12T09:00']]
  ] as const) {
    void it(`${zone}: a weekly 09:00 stays at 09:00 local across the change`, () => {
      const occ = expand({ start: local(expected[0], zone), durationMs: HOUR, timezone: zone }, weekly([1], 3), {
        max: 500
      })
      assert.deepEqual(occ.map(o => localIso(o.start, zone)), [...expected])
      const offsets = occ.map(o => DateTime.fromJSDate(o.start, { zone }).offset)
      assert.notEqual(offsets[0], offsets[2], 'the UTC offset changed between the first and the last')
      assert.equal(occ[0]?.start.getUTCHours() === occ[2]?.start.getUTCHours(), false, 'so the UTC hour moved')
    })
  }

  void it('Europe/Berlin autumn: Monday/Wednesday meeting across the end of summer time', () => {
    const zone = 'Europe/Berlin'
    const occ = expand(
      { start: local('2027-10-25T09:00', zone), durationMs: HOUR, timezone: zone },
      weekly([1, 3], 4),
      { max: 500 }
    )
    assert.deepEqual(occ.map(o => o.start.toISOString()), [
      '2027-10-25T07:00:00.000Z', '2027-10-27T07:00:00.000Z', '2027-11-01T08:00:00.000Z', '2027-11-03T08:00:00.000Z'
    ])
  })

  /** a rule of `count` occurrences, every day or month, from a local start; the local times it gives */
  interface WallTimeCase {
    name: string
    zone: string
    start: string
    freq: Rule['freq']
    count: number
    expected: string[]
  }
  const wallTimes: WallTimeCase[] = [
    {
      name: 'a wall time inside the spring-forward gap moves forward by the gap',
      zone: 'America/New_York',
      start: '2027-03-13T02:30',
      freq: 'daily',
      count: 3,
      expected: ['2027-03-13T02:30', '2027-03-14T03:30', '2027-03-15T02:30']
    },
    {
      name: 'monthly on the 31st clamps to the last day of shorter months, without drift',
      zone: 'Europe/Berlin',
      start: '2027-01-31T18:00',
      freq: 'monthly',
      count: 5,
      expected: ['2027-01-31T18:00', '2027-02-28T18:00', '2027-03-31T18:00', '2027-04-30T18:00', '2027-05-31T18:00']
    }
  ]
  for (const c of wallTimes) {
    void it(c.name, () => {
      const rule: Rule = {
        freq: c.freq,
        interval: 1,
        repeatDays: null,
        endsOn: 'after_n',
        endCount: c.count,
        endDate: null
      }
      const occ = expand({ start: local(c.start, c.zone), durationMs: HOUR, timezone: c.zone }, rule, { max: 500 })
      assert.deepEqual(occ.map(o => localIso(o.start, c.zone)), c.expected)
    })
  }

  void it("on_date includes the end date's whole local day; after_n counts the anchor; the window bounds never", () => {
    const zone = 'Australia/Sydney'
    const start = local('2027-01-04T20:00', zone)
    const onDate = expand(
      { start, durationMs: HOUR, timezone: zone },
      {
        freq: 'daily',
        interval: 1,
        repeatDays: null,
        endsOn: 'on_date',
        endCount: null,
        endDate: local('2027-01-06T00:00', zone)
      },
      { max: 500 }
    )
    assert.equal(onDate.length, 3)
    const afterN = expand(
      { start, durationMs: HOUR, timezone: zone },
      { freq: 'daily', interval: 2, repeatDays: null, endsOn: 'after_n', endCount: 1, endDate: null },
      { max: 500 }
    )
    assert.equal(afterN.length, 1)
    const never = expand(
      { start, durationMs: HOUR, timezone: zone },
      { freq: 'daily', interval: 1, repeatDays: null, endsOn: 'never', endCount: null, endDate: null },
      { until: new Date(start.getTime() + 10 * 24 * HOUR), max: 500 }
    )
    assert.equal(never.length, 10)
  })

  void it('custom: every day on the listed weekdays; helpers', () => {
    const zone = 'UTC'
    const occ = expand(
      { start: local('2027-06-07T08:00', zone), durationMs: HOUR, timezone: zone },
      { freq: 'custom', interval: 1, repeatDays: [1, 2, 3, 4, 5], endsOn: 'after_n', endCount: 7, endDate: null },
      { max: 500 }
    )
    assert.deepEqual(
      occ.map(o => localIso(o.start, zone).slice(0, 10)),
      ['2027-06-07', '2027-06-08', '2027-06-09', '2027-06-10', '2027-06-11', '2027-06-14', '2027-06-15']
    )
    assert.equal(intervalText(90 * 60_000), '01:30:00')
    assert.equal(intervalText(26 * HOUR), '1 day 02:00:00')
    const berlin = 'Europe/Berlin'
    assert.equal(
      localIso(
        shiftWallClock(
          local('2027-11-01T09:00', berlin),
          berlin,
          local('2027-10-25T09:00', berlin),
          local('2027-10-25T10:30', berlin)
        ),
        berlin
      ),
      '2027-11-01T10:30'
    )
  })
})

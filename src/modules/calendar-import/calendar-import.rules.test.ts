/**
 * The pure rules of the calendar import, by tables of cases: what each VEVENT of a file becomes (importUnits), and the
 * series of a recurring VEVENT re-anchored within the allowed past (seriesPlan). No database.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DateTime } from 'luxon'
import { ApiError } from '../../platform/http/errors.ts'
import { parseCalendar } from './calendar-import.parse.ts'
import { importUnits, seriesPlan } from './calendar-import.rules.ts'

const file = (...events: string[][]): string =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'X-WR-TIMEZONE:Europe/Berlin', ...events.flat(), 'END:VCALENDAR', '']
    .join('\r\n')
const vevent = (...lines: string[]): string[] => ['BEGIN:VEVENT', ...lines, 'END:VEVENT']

void describe('calendar import: what each VEVENT becomes', () => {
  const cases: Array<[string, string[][], string[]]> = [
    ['a single event', [vevent('UID:a', 'DTSTART:20270101T100000Z')], ['event a']],
    ['a series and its overrides', [
      vevent('UID:s', 'DTSTART:20270101T100000Z', 'RRULE:FREQ=DAILY;COUNT=5'),
      vevent('UID:s', 'RECURRENCE-ID:20270102T100000Z', 'SUMMARY:Moved'),
      vevent('UID:s', 'RECURRENCE-ID:20270103T100000Z', 'STATUS:CANCELLED')
    ], ['series s (2 overrides)']],
    ['an override before its series, in the order of the file', [
      vevent('UID:s', 'RECURRENCE-ID:20270102T100000Z', 'SUMMARY:Moved'),
      vevent('UID:s', 'DTSTART:20270101T100000Z', 'RRULE:FREQ=DAILY;COUNT=5')
    ], ['series s (1 overrides)']],
    ['a cancelled single event', [vevent('UID:c', 'DTSTART:20270101T100000Z', 'STATUS:CANCELLED')],
      ['skip event c: STATUS:CANCELLED: the event is cancelled']],
    ['a cancelled series skips its overrides', [
      vevent('UID:s', 'DTSTART:20270101T100000Z', 'RRULE:FREQ=DAILY', 'STATUS:CANCELLED'),
      vevent('UID:s', 'RECURRENCE-ID:20270102T100000Z', 'SUMMARY:Moved')
    ], ['skip series s: STATUS:CANCELLED: the whole series is cancelled',
      'skip event s: its series is skipped: STATUS:CANCELLED: the whole series is cancelled']],
    ['an override without its series', [vevent('UID:o', 'RECURRENCE-ID:20270102T100000Z', 'SUMMARY:Moved')],
      ['skip event o: RECURRENCE-ID of a UID whose recurring VEVENT is not in the file']],
    ['an override of a single event', [
      vevent('UID:a', 'DTSTART:20270101T100000Z'),
      vevent('UID:a', 'RECURRENCE-ID:20270101T100000Z', 'SUMMARY:Moved')
    ], ['event a', 'skip event a: RECURRENCE-ID of a VEVENT that does not recur (no RRULE)']],
    ['EXRULE', [vevent('UID:x', 'DTSTART:20270101T100000Z', 'RRULE:FREQ=DAILY', 'EXRULE:FREQ=WEEKLY')],
      ['skip series x: EXRULE (RFC 2445) is not supported: its dates cannot be kept']],
    ['RDATE without RRULE', [vevent('UID:r', 'DTSTART:20270101T100000Z', 'RDATE:20270105T100000Z')],
      ['skip event r: RDATE without an RRULE is not supported']]
  ]
  for (const [name, events, expected] of cases) {
    void it(name, () => {
      const units = importUnits(parseCalendar(file(...events)).events)
      assert.deepEqual(units.map(u => u.kind === 'skip'
        ? `skip ${u.as} ${u.event.uid}: ${u.reason}`
        : u.kind === 'series' ? `series ${u.master.uid} (${u.overrides.length} overrides)` : `event ${u.event.uid}`),
      expected)
    })
  }

  void it('refuses a UID given twice, or two overrides of one date, naming the second', () => {
    for (const [events, line] of [
      [[vevent('UID:a', 'DTSTART:20270101T100000Z'), vevent('UID:a', 'DTSTART:20270102T100000Z')], 8],
      [[vevent('UID:s', 'DTSTART:20270101T100000Z', 'RRULE:FREQ=DAILY'),
        vevent('UID:s', 'RECURRENCE-ID:20270102T100000Z'), vevent('UID:s', 'RECURRENCE-ID:20270102T100000Z')], 13]
    ] as const) {
      assert.throws(() => importUnits(parseCalendar(file(...events)).events),
        (err: unknown) => err instanceof ApiError && err.errors[0]?.location === `body.line[${line}]`)
    }
  })
})

void describe('calendar import: reading a VTIMEZONE', () => {
  void it('refuses an observance that does not recur yearly, naming the line of the time that uses it', () => {
    const text = file(['BEGIN:VTIMEZONE', 'TZID:Odd', 'BEGIN:STANDARD', 'DTSTART:16010101T000000',
      'TZOFFSETFROM:+0100', 'TZOFFSETTO:+0100', 'RRULE:FREQ=SECONDLY', 'END:STANDARD', 'END:VTIMEZONE'],
    vevent('UID:a', 'DTSTART;TZID=Odd:20270101T100000'))
    assert.throws(() => parseCalendar(text), (err: unknown) => err instanceof ApiError &&
      err.errors[0]?.location === 'body.line[15]' && /recur yearly/.test(err.errors[0].message ?? ''))
  })
})

void describe('calendar import: a series re-anchored within the allowed past', () => {
  const from = new Date('2026-01-01T00:00:00Z')
  const plan = (dtstart: string, rule: string, extra: string[] = []) => {
    const [e] = parseCalendar(file(vevent('UID:s', `DTSTART;TZID=Europe/Berlin:${dtstart}`, `RRULE:${rule}`,
      ...extra))).events
    if (e === undefined) throw new Error('no VEVENT')
    return seriesPlan(e, from, [])
  }
  const local = (d: Date): string => DateTime.fromJSDate(d, { zone: 'Europe/Berlin' }).toFormat("yyyy-MM-dd'T'HH:mm")
  const cases: Array<[string, string, string, string[], string | { start: string, rrule: string, rdates?: number }]> =
    [
      ['within the allowed past: as it is', '20260105T090000', 'FREQ=WEEKLY;COUNT=10', [],
        { start: '2026-01-05T09:00', rrule: 'FREQ=WEEKLY;COUNT=10' }],
      ['weekly with COUNT: the dates before are left out of COUNT', '20251201T090000', 'FREQ=WEEKLY;COUNT=10', [],
        { start: '2026-01-05T09:00', rrule: 'FREQ=WEEKLY;COUNT=5' }],
      ['without an end: the rule as it is', '20240102T090000', 'FREQ=MONTHLY;BYMONTHDAY=2', [],
        { start: '2026-01-02T09:00', rrule: 'FREQ=MONTHLY;BYMONTHDAY=2' }],
      ['an UNTIL kept, RDATEs before dropped', '20251215T090000', 'FREQ=DAILY;UNTIL=20260110T080000Z',
        ['RDATE;TZID=Europe/Berlin:20251220T120000', 'RDATE;TZID=Europe/Berlin:20260115T120000'],
        { start: '2026-01-01T09:00', rrule: 'FREQ=DAILY;UNTIL=20260110T080000Z', rdates: 1 }],
      ['every date before: skipped', '20250101T090000', 'FREQ=DAILY;COUNT=3', [],
        'every date of the series is more than 12 months in the past'],
      ['ended by UNTIL before: skipped', '20250101T090000', 'FREQ=DAILY;UNTIL=20251001T000000Z', [],
        'every date of the series is more than 12 months in the past']
    ]
  void it('goes through at most REANCHOR_PERIODS_MAX periods of the rules of an import, all series together', () => {
    assert.match(String(plan('18000101T090000', 'FREQ=DAILY')), /^DTSTART is too far back to re-anchor: \d+ days/)
    const yearly = plan('18000101T090000', 'FREQ=YEARLY')
    assert.ok(typeof yearly !== 'string' && local(yearly.start) === '2026-01-01T09:00', String(yearly))
  })

  for (const [name, dtstart, rule, extra, expected] of cases) {
    void it(name, () => {
      const p = plan(dtstart, rule, extra)
      if (typeof expected === 'string') {
        assert.equal(p, expected)
        return
      }
      assert.ok(typeof p !== 'string', String(p))
      assert.deepEqual([local(p.start), p.rrule, p.rdates.length],
        [expected.start, expected.rrule, expected.rdates ?? 0])
      assert.equal(p.notes.length, name.startsWith('within') ? 0 : 1, 'a note says it was re-anchored')
    })
  }
})

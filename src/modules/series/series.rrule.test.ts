/**
 * Series with RFC 5545 rules through the API: the recurrence examples of RFC 5545 (section 3.8.5.3) expand to the
 * dates the RFC lists, at the same wall time in three zones across their changes of daylight-saving time; RDATE and
 * EXDATE; the seed rules shown as their RRULE; scoped edits and the split of an RRULE series; bad rules refused with
 * nothing stored.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { getJson } from '../../../test/helpers/requests.ts'
import { assertBadRequestAt } from '../../../test/helpers/problem.ts'
import type { Json } from '../events/events.fixtures.ts'
import { withSeries } from './series.fixtures.ts'
import { RFC5545_EXAMPLES, ruleIn, shifted, startIn, SUB_DAILY } from './series.rfc5545-examples.ts'

const ZONES = ['America/New_York', 'Europe/Berlin', 'Australia/Sydney'] as const
const localOf = (utc: string, zone: string): string =>
  DateTime.fromISO(utc, { zone: 'UTC' }).setZone(zone).toFormat("yyyy-MM-dd'T'HH:mm")

async function occurrencesOf (t: TestApp, token: string, eventId: number): Promise<Json[]> {
  return (await getJson(t, token, `/api/v1/events/${eventId}/series/occurrences?limit=200`)).items
}

async function eventCount (t: TestApp, token: string): Promise<number> {
  return (await getJson(t, token, '/api/v1/events?size=1')).total
}

for (const kind of databases()) {
  void describe(`${kind}: series with RFC 5545 rules`, () => {
    const t = useTestApp(kind)

    for (const zone of ZONES) {
      void it(`the RFC 5545 examples expand to the dates the RFC lists, at 09:00 in ${zone}`, async () => {
        const alice = await newTenant(t).user('alice')
        for (const example of RFC5545_EXAMPLES.map(e => shifted(e))) {
          const start = startIn(example.dtstart, zone)
          const created = await withSeries(t, alice, {
            title: example.name,
            start_dt: start,
            end_dt: DateTime.fromISO(start).plus({ hours: 1 }).toUTC().toISO(),
            timezone: zone,
            series: { rrule: ruleIn(example.rrule, zone) }
          })
          const got = await occurrencesOf(t, alice, created.event.id as number)
          assert.deepEqual(
            got.map(o => localOf(o.start_dt as string, zone)),
            example.dates.map(d => `${d}T09:00`),
            `${example.name} (${example.rrule}) in ${zone}`
          )
          assert.ok(got.every(o => localOf(o.end_dt as string, zone).endsWith('T10:00')), example.name)
        }
      })
    }

    void it('RDATE adds dates, EXDATE leaves dates out; the seed rules are shown as their RRULE', async () => {
      const alice = await newTenant(t).user('alice')
      const zone = 'Europe/Berlin'
      const at = (local: string) => DateTime.fromISO(local, { zone }).toUTC().toISO() ?? ''
      // the last Friday of each month, six times, with an extra Wednesday and without the April one
      const created = await withSeries(t, alice, {
        title: 'Retro',
        start_dt: at('2027-01-29T16:00'),
        end_dt: at('2027-01-29T17:00'),
        timezone: zone,
        series: {
          rrule: 'RRULE:FREQ=MONTHLY;BYDAY=-1FR;COUNT=6',
          rdates: [at('2027-03-10T16:00')],
          exdates: [at('2027-04-30T16:00')]
        }
      })
      const id = created.event.id as number
      assert.deepEqual(
        (await occurrencesOf(t, alice, id)).map(o => localOf(o.start_dt as string, zone)),
        ['2027-01-29T16:00', '2027-02-26T16:00', '2027-03-10T16:00', '2027-03-26T16:00', '2027-05-28T16:00',
          '2027-06-25T16:00']
      )
      const series = (await getJson(t, alice, `/api/v1/events/${id}/series`)).series
      assert.equal(series.freq, 'rrule')
      assert.equal(series.rrule, 'FREQ=MONTHLY;COUNT=6;BYDAY=-1FR')
      assert.equal(series.ends_on, 'after_n')
      assert.equal(series.end_count, 6)
      assert.deepEqual(series.rdates, [at('2027-03-10T16:00')])

      const seed = await withSeries(t, alice, {
        title: 'Standup',
        start_dt: at('2027-01-04T09:00'),
        end_dt: at('2027-01-04T09:15'),
        timezone: zone,
        series: { freq: 'weekly', repeat_days: [1, 3], ends_on: 'after_n', end_count: 10 }
      })
      const seedSeries = (await getJson(t, alice, `/api/v1/events/${seed.event.id as number}/series`)).series
      assert.equal(seedSeries.freq, 'weekly')
      assert.equal(seedSeries.rrule, 'FREQ=WEEKLY;COUNT=10;BYDAY=MO,WE;WKST=MO')
      const monthly = await withSeries(t, alice, {
        title: 'Month end',
        start_dt: at('2027-01-31T09:00'),
        end_dt: at('2027-01-31T10:00'),
        timezone: zone,
        series: { freq: 'monthly', ends_on: 'on_date', end_date: '2027-05-31T00:00:00Z' }
      })
      const monthlySeries = (await getJson(t, alice, `/api/v1/events/${monthly.event.id as number}/series`)).series
      // the seed's clamp to the month end is the last of 28…31
      assert.equal(monthlySeries.rrule, 'FREQ=MONTHLY;UNTIL=20270531T215959Z;BYMONTHDAY=-1')
      assert.deepEqual(
        (await occurrencesOf(t, alice, monthly.event.id as number)).map(o => localOf(o.start_dt as string, zone)),
        ['2027-01-31T09:00', '2027-02-28T09:00', '2027-03-31T09:00', '2027-04-30T09:00', '2027-05-31T09:00']
      )
    })

    void it('a rule is changed by PATCH, edited for one occurrence, and split for this and the following', async () => {
      const alice = await newTenant(t).user('alice')
      const zone = 'America/New_York'
      const at = (local: string) => DateTime.fromISO(local, { zone }).toUTC().toISO() ?? ''
      // the second Tuesday of every month, 8 times
      const created = await withSeries(t, alice, {
        title: 'Board',
        start_dt: at('2027-01-12T18:00'),
        end_dt: at('2027-01-12T19:30'),
        timezone: zone,
        series: { freq: 'weekly', repeat_days: [2], ends_on: 'after_n', end_count: 8 }
      })
      const anchor = created.event.id as number
      const patched = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${anchor}/series`,
        payload: { rrule: 'FREQ=MONTHLY;BYDAY=2TU;COUNT=8' }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json().freq, 'rrule')
      assert.equal(patched.json().repeat_days, null)
      let occ = await occurrencesOf(t, alice, anchor)
      assert.deepEqual(
        occ.map(o => localOf(o.start_dt as string, zone)),
        ['2027-01-12T18:00', '2027-02-09T18:00', '2027-03-09T18:00', '2027-04-13T18:00', '2027-05-11T18:00',
          '2027-06-08T18:00', '2027-07-13T18:00', '2027-08-10T18:00']
      )
      // the March one moves to Wednesday (this occurrence alone)
      const moved = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${occ[2]?.id as number}?scope=this`,
        payload: { start_dt: at('2027-03-10T18:00'), end_dt: at('2027-03-10T19:30'), title: 'Board (moved)' }
      })
      assert.equal(moved.statusCode, 200, moved.body)
      // from May on the meeting is at 17:00: the old series ends with April (UNTIL), a new one takes May on
      const split = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${occ[4]?.id as number}?scope=future`,
        payload: { start_dt: at('2027-05-11T17:00'), end_dt: at('2027-05-11T18:30') }
      })
      assert.equal(split.statusCode, 200, split.body)
      const before = (await getJson(t, alice, `/api/v1/events/${anchor}/series`))
      assert.equal(before.series.rrule, 'FREQ=MONTHLY;UNTIL=20270413T220000Z;BYDAY=2TU')
      assert.equal(before.total, 4)
      occ = await occurrencesOf(t, alice, anchor)
      assert.deepEqual(occ.map(o => o.title), ['Board', 'Board', 'Board (moved)', 'Board'])
      assert.equal(localOf(occ[2]?.start_dt as string, zone), '2027-03-10T18:00')
      const after = (await getJson(t, alice, `/api/v1/events/${split.json().id as number}/series`))
      assert.notEqual(after.series.id, before.series.id)
      assert.equal(after.series.rrule, 'FREQ=MONTHLY;COUNT=4;BYDAY=2TU')
      assert.deepEqual(
        after.occurrences.map((o: Json) => localOf(o.start_dt as string, zone)),
        ['2027-05-11T17:00', '2027-06-08T17:00', '2027-07-13T17:00', '2027-08-10T17:00']
      )
    })

    void it('a rule that is not RFC 5545, sub-daily, unbounded or never recurring is refused, nothing stored',
      async () => {
        const alice = await newTenant(t).user('alice')
        const base = {
          title: 'Bad',
          start_dt: '2027-01-12T18:00:00Z',
          end_dt: '2027-01-12T19:00:00Z',
          timezone: 'UTC'
        }
        const before = await eventCount(t, alice)
        const bad = [
          ...SUB_DAILY,
          'FREQ=FORTNIGHTLY',
          'BYDAY=MO',
          'FREQ=WEEKLY;BYDAY=2MO',
          'FREQ=MONTHLY;BYDAY=6MO',
          'FREQ=DAILY;COUNT=2;UNTIL=20270201T000000Z',
          'FREQ=DAILY;COUNT=501',
          'FREQ=DAILY;UNTIL=20300101T000000Z',
          'FREQ=YEARLY;COUNT=12',
          'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
          'FREQ=YEARLY;BYMONTH=4;BYMONTHDAY=31;COUNT=2',
          'FREQ=MONTHLY;BYSETPOS=1',
          'FREQ=DAILY;X-NAME=1',
          'FREQ=DAILY;UNTIL=2027-02-01'
        ]
        for (const rrule of bad) {
          const res = await t.as(alice, {
            method: 'POST', url: '/api/v1/events/with-series', payload: { ...base, series: { rrule } }
          })
          assertBadRequestAt(res, 'body.series.rrule')
        }
        const both = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/events/with-series',
          payload: { ...base, series: { rrule: 'FREQ=DAILY;COUNT=3', freq: 'daily' } }
        })
        assertBadRequestAt(both, 'body.series.rrule')
        const early = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/events/with-series',
          payload: { ...base, series: { rrule: 'FREQ=DAILY;COUNT=3', rdates: ['2027-01-01T00:00:00Z'] } }
        })
        assertBadRequestAt(early, 'body.series.rdates[0]')
        assert.equal(await eventCount(t, alice), before, 'nothing stored')
      })
  })
}

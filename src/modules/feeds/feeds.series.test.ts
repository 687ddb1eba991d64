/**
 * Series in calendar feeds, read by two calendar parsers (ical.js and node-ical): a series is one recurring VEVENT
 * with its exceptions (EXDATE, RDATE, RECURRENCE-ID overrides, cancelled occurrences), and both parsers show the
 * occurrences the API has; a reader who sees only part of a series gets only that part; series feed tokens; the
 * personal feed of attended events (verified e-mail only). The RFC 5545 examples: feeds.calendar.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import {
  agreedInstances, icalJsInstances, nodeIcalInstances, type Instance
} from '../../../test/helpers/calendar-parsers.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { assertBadRequestAt } from '../../../test/helpers/problem.ts'
import { addContact, insertAttendee } from '../attendees/attendees.fixtures.ts'
import { addManager } from '../events/events.fixtures.ts'

type Json = Record<string, any>

const pathOf = (url: string): string => url.replace(/^https?:\/\/[^/]+/, '')

/** What a calendar app shows of an instance: start (UTC), title, status. */
const shown = (i: Instance): string => `${i.start.toISOString()} ${i.summary} ${i.status}`

async function feedText (t: TestApp, url: string): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: pathOf(url) })
  assert.equal(res.statusCode, 200, res.body)
  return res.body
}

async function seriesFeed (t: TestApp, token: string, seriesId: number): Promise<string> {
  const made = await expectStatus(t, token, 'POST', '/api/v1/feed-tokens', 201,
    { scope: 'series', series_id: seriesId })
  return await feedText(t, made.json().url as string)
}

async function withSeries (t: TestApp, token: string, body: Json): Promise<Json> {
  return (await expectStatus(t, token, 'POST', '/api/v1/events/with-series', 201, body)).json()
}

async function occurrences (t: TestApp, token: string, eventId: number): Promise<Json[]> {
  return (await getJson(t, token, `/api/v1/events/${eventId}/series/occurrences?limit=200`)).items
}

for (const kind of databases()) {
  void describe(`${kind}: series in calendar feeds`, () => {
    const t = useTestApp(kind, { env: { APP_URL: 'https://app.example.test' } })

    void it('a series with exceptions is one recurring entry that two parsers expand to what the API has',
      async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const zone = 'Europe/Berlin'
        const at = (local: string) => DateTime.fromISO(local, { zone }).toUTC().toISO() ?? ''
        // Mondays at 09:00 across the change to summer time (28 March 2027), with an added Wednesday
        const made = await withSeries(t, alice, {
          title: 'Standup',
          start_dt: at('2027-03-08T09:00'),
          end_dt: at('2027-03-08T09:30'),
          timezone: zone,
          series: { rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=8', rdates: [at('2027-03-24T09:00')] }
        })
        const anchor = made.event.id as number
        const seriesId = made.event.series_id as number
        await expectStatus(t, alice, 'POST', `/api/v1/events/${anchor}/series/publish`, 204)
        let occ = await occurrences(t, alice, anchor)
        assert.equal(occ.length, 9)
        const id = (i: number): number => occ[i]?.id as number
        await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id(1)}?scope=this`, 200, { title: 'Standup (demo)' })
        await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id(3)}?scope=this`, 200, {
          start_dt: at('2027-03-23T11:00'), end_dt: at('2027-03-23T11:30')
        })
        await expectStatus(t, alice, 'DELETE', `/api/v1/events/${id(5)}/series?scope=this`, 204)
        await expectStatus(t, alice, 'POST', `/api/v1/events/${id(7)}/cancel`, 200, { reason: 'Holiday' })
        occ = await occurrences(t, alice, anchor)

        const raw = await seriesFeed(t, alice, seriesId)
        const uid = `series-${seriesId}@localhost`
        // one master with the rule, overrides for the changed ones; no VEVENT per occurrence
        // the added date (RDATE) is a VEVENT of its own: Outlook and node-ical read no RDATE
        const blocks = raw.split('BEGIN:VEVENT').slice(1)
        assert.equal(blocks.length, 5, raw)
        assert.equal(blocks.filter(b => b.includes(`UID:${uid}`)).length, 4)
        assert.equal(blocks.filter(b => b.includes(`UID:event-${id(3)}@localhost`)).length, 1)
        assert.equal(blocks.filter(b => b.includes('\r\nRRULE:')).length, 1)
        assert.equal(blocks.filter(b => b.includes('\r\nRECURRENCE-ID;TZID=Europe/Berlin:')).length, 3)
        assert.doesNotMatch(raw, /RDATE/)

        // what a calendar app shows: every live occurrence at its time and title; the deleted and the cancelled one
        // cancelled
        const live = occ.map(o => `${new Date(o.start_dt as string).toISOString()} ${o.title as string} ` +
          (o.cancelled_at !== null ? 'CANCELLED' : 'CONFIRMED'))
        const deleted = `${new Date(at('2027-04-05T09:00')).toISOString()} Standup CANCELLED`
        const expected = [...live, deleted].sort()
        for (const [parser, instances] of [['ical.js', icalJsInstances(raw)], ['node-ical', nodeIcalInstances(raw)]]) {
          const got = instances as Instance[]
          assert.deepEqual(got.map(shown).sort(), expected, `${parser as string}:\n${raw}`)
          // the instants of both sides of the change of time: 09:00 local, 08:00Z then 07:00Z
          assert.ok(got.some(i => i.start.toISOString() === '2027-03-15T08:00:00.000Z'))
          assert.ok(got.some(i => i.start.toISOString() === '2027-04-05T07:00:00.000Z'))
        }

        // the personal feed writes the series the same way
        const personal = await expectStatus(t, alice, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })
        const mine = await feedText(t, personal.json().url as string)
        assert.deepEqual(agreedInstances(mine).map(shown).sort(), expected)
      })

    void it('a reader who sees one occurrence of a series gets that one, not the series', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const carol = await tenant.user('carol')
      const start = DateTime.now().setZone('UTC').plus({ days: 10 }).startOf('day').set({ hour: 18 })
      const made = await withSeries(t, alice, {
        title: 'Private dinner',
        start_dt: start.toISO(),
        end_dt: start.plus({ hours: 2 }).toISO(),
        visibility: 10,
        series: { rrule: 'FREQ=DAILY;COUNT=5' }
      })
      const anchor = made.event.id as number
      await expectStatus(t, alice, 'POST', `/api/v1/events/${anchor}/series/publish`, 204)
      const occ = await occurrences(t, alice, anchor)
      // bob manages the third evening only
      await addManager(t, tenant.id, occ[2]?.id as number, 'bob', { role: 'event_manager:full' })
      const seriesId = made.event.series_id as number
      const raw = await seriesFeed(t, bob, seriesId)
      for (const instances of [icalJsInstances(raw), nodeIcalInstances(raw)]) {
        assert.deepEqual(instances.map(i => i.start.toISOString()),
          [new Date(occ[2]?.start_dt as string).toISOString()])
      }
      const personal = await expectStatus(t, bob, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })
      const bobs = await feedText(t, personal.json().url as string)
      assert.equal(agreedInstances(bobs).length, 1)
      // carol sees no occurrence: no token for the series
      await expectStatus(t, carol, 'POST', '/api/v1/feed-tokens', 404, { scope: 'series', series_id: seriesId })
      // the token's scope is checked: a series token for another series, a space_id with scope series
      const bobsToken = await expectStatus(t, bob, 'POST', '/api/v1/feed-tokens', 201,
        { scope: 'series', series_id: seriesId })
      const other = (await t.app.inject({
        method: 'GET', url: `/api/v1/series/${seriesId + 1}/calendar.ics?token=${bobsToken.json().token as string}`
      }))
      assert.equal(other.statusCode, 404)
      assertBadRequestAt(await t.as(bob, {
        method: 'POST', url: '/api/v1/feed-tokens', payload: { scope: 'series' }
      }), 'body.series_id')
      assertBadRequestAt(await t.as(bob, {
        method: 'POST', url: '/api/v1/feed-tokens', payload: { scope: 'personal', series_id: seriesId }
      }), 'body.series_id')
    })

    void it('the personal feed shows the events the user attends, by a verified e-mail address only', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const start = DateTime.now().setZone('UTC').plus({ days: 7 }).startOf('day').set({ hour: 19 })
      const create = async (title: string): Promise<number> => {
        const e = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
          title, start_dt: start.toISO(), visibility: 40
        })).json()
        await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id as number}/publish`, 204)
        return e.id as number
      }
      const concert = await create('Concert')
      const declined = await create('Declined talk')
      const contact = await addContact(t, alice, 'Dana@Example.test')
      await insertAttendee(t, tenant.id, { event_id: concert, contact_id: contact, status: 'confirmed' })
      await insertAttendee(t, tenant.id, { event_id: declined, contact_id: contact, status: 'declined' })

      // dana's token says her address, unverified: nothing of hers yet
      const unverified = await tenant.user('dana', ['member'], { email: 'dana@example.test' })
      const token = (await expectStatus(t, unverified, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' }))
        .json()
      assert.deepEqual(agreedInstances(await feedText(t, token.url as string)).map(i => i.summary), [])
      // once a token says it is verified, the event she is confirmed for shows (not the one she declined)
      const verified = await tenant.user('dana', ['member'], { email: 'dana@example.test', emailVerified: true })
      await expectStatus(t, verified, 'GET', '/api/v1/auth/me', 200)
      assert.deepEqual(agreedInstances(await feedText(t, token.url as string)).map(i => i.summary), ['Concert'])
    })
  })
}

/**
 * A feed exported by one tenant and imported by another gives the same events and series: the occurrences the API
 * lists (times and titles, the changed, moved and removed ones), the UIDs kept, and the second tenant's own feed
 * shows what the first one's showed, read by ical.js. A second import of the same feed changes nothing.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { agreedInstances, type Instance } from '../../../test/helpers/calendar-parsers.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { createSpace } from '../spaces/spaces.fixtures.ts'

type Json = Record<string, any>

const ZONE = 'Europe/Berlin'
const at = (local: string): string => DateTime.fromISO(local, { zone: ZONE }).toUTC().toISO() ?? ''

async function personalFeed (t: TestApp, token: string): Promise<string> {
  const made = (await expectStatus(t, token, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })).json()
  const res = await t.app.inject({ method: 'GET', url: (made.url as string).replace(/^https?:\/\/[^/]+/, '') })
  assert.equal(res.statusCode, 200, res.body)
  return res.body
}

async function importFeed (t: TestApp, token: string, spaceId: number, ics: string): Promise<Json> {
  const res = await t.as(token, {
    method: 'POST',
    url: `/api/v1/spaces/${spaceId}/calendar-import`,
    headers: { 'content-type': 'text/calendar' },
    payload: ics
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/** What the API lists of a series: each live occurrence's times and title. */
async function occurrences (t: TestApp, token: string, eventId: number): Promise<string[]> {
  const items = (await getJson(t, token, `/api/v1/events/${eventId}/series/occurrences?limit=200`)).items as Json[]
  return items.map(o => `${o.start_dt as string} ${o.end_dt as string} ${o.title as string}`)
}

/** What a calendar app shows of a feed, cancelled entries left out (an import leaves them out as EXDATEs). */
const shown = (raw: string): string[] => agreedInstances(raw).filter(i => i.status !== 'CANCELLED')
  .map((i: Instance) => `${i.start.toISOString()} ${i.end.toISOString()} ${i.summary} ${i.uid}`)

for (const kind of databases()) {
  void describe(`${kind}: calendar round trip`, () => {
    const t = useTestApp(kind)

    void it('an exported feed imported elsewhere gives the same events and series, and the same feed', async () => {
      // tenant one: a single event and a weekly series across the change of summer time, with exceptions
      const alice = await newTenant(t).user('alice')
      const launch = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: 'Launch',
        description: 'Doors at 18:30',
        address: 'Main street 1',
        start_dt: at('2027-03-12T19:00'),
        end_dt: at('2027-03-12T22:00'),
        timezone: ZONE
      })).json()
      await expectStatus(t, alice, 'POST', `/api/v1/events/${launch.id as number}/publish`, 204)
      const made = (await expectStatus(t, alice, 'POST', '/api/v1/events/with-series', 201, {
        title: 'Standup',
        start_dt: at('2027-03-08T09:00'),
        end_dt: at('2027-03-08T09:30'),
        timezone: ZONE,
        series: { rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=8' }
      })).json()
      const anchor = made.event.id as number
      await expectStatus(t, alice, 'POST', `/api/v1/events/${anchor}/series/publish`, 204)
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${ids[1] as number}?scope=this`, 200,
        { title: 'Standup (demo)' })
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${ids[3] as number}?scope=this`, 200,
        { start_dt: at('2027-03-30T11:00'), end_dt: at('2027-03-30T11:30') })
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${ids[5] as number}/series?scope=this`, 204)
      const exported = await personalFeed(t, alice)

      // tenant two imports it into a space
      const bob = await newTenant(t).user('bob', ['admin'])
      const space = await createSpace(t, bob)
      const report = await importFeed(t, bob, space.id as number, exported)
      // the series, its two changed occurrences (edits of this one), its removed one (an EXDATE), the single event
      assert.deepEqual((report.items as Json[]).map(i => [i.kind, i.action]), [
        ['series', 'create'], ['event', 'update'], ['event', 'update'], ['event', 'skip'], ['event', 'create']
      ], JSON.stringify(report))
      const imported = report.items as Json[]
      const series = imported.find(i => i.kind === 'series')
      const single = imported.find(i => i.kind === 'event' && i.recurrence_id === null)
      assert.ok(series !== undefined && single !== undefined)
      // the same occurrences: times, titles, the moved one, the removed one gone
      assert.deepEqual(await occurrences(t, bob, series.event_id as number), await occurrences(t, alice, anchor))
      const copy = await getJson(t, bob, `/api/v1/events/${single.id as number}`)
      assert.deepEqual(
        [copy.title, copy.description, copy.address, copy.start_dt, copy.end_dt, copy.timezone, copy.status],
        ['Launch', 'Doors at 18:30', 'Main street 1', launch.start_dt, launch.end_dt, ZONE, 'draft'])

      // published there, tenant two's feed shows what tenant one's showed, under the same UIDs
      await expectStatus(t, bob, 'POST', `/api/v1/events/${series.event_id as number}/series/publish`, 204)
      await expectStatus(t, bob, 'POST', `/api/v1/events/${single.id as number}/publish`, 204)
      const again = await personalFeed(t, bob)
      assert.deepEqual(shown(again), shown(exported))

      // the same feed imported a second time: everything unchanged, nothing more
      const second = await importFeed(t, bob, space.id as number, exported)
      assert.deepEqual([second.created, second.updated, second.unchanged], [0, 0, 4], JSON.stringify(second))
      const listed = await getJson(t, bob, '/api/v1/events?size=100')
      assert.equal(listed.total, 1 + 7)
    })
  })
}

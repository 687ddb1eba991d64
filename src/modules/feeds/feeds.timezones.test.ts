/**
 * The VTIMEZONE blocks and the line ends of a feed as calendar apps read them (docs/integrations.md, "Time zones in
 * feeds"): a public space's feed with events in Europe/Berlin, America/New_York and Asia/Tokyo, each at a time with
 * seconds, in winter and in summer. ical.js converts every event to the instant the API holds through the feed's own
 * VTIMEZONE (it knows no zone of its own), node-ical agrees; the transitions are at the zone's exact times (Berlin's
 * of 2027 at 02:00:00 local), with the zone database's names (CET/CEST, EST/EDT, JST); the bytes end with CRLF and
 * hold no bare LF.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import ICAL from 'ical.js'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { agreedInstances } from '../../../test/helpers/calendar-parsers.ts'
import { assertIcsLines } from '../../../test/helpers/ics-lines.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { createSpace, publish } from '../spaces/spaces.fixtures.ts'

/** The events of the feed: local wall time with seconds, and the instant it is (checked with the zone's offset). */
const EVENTS = [
  { title: 'Berlin winter', zone: 'Europe/Berlin', utc: '2027-01-14T09:00:15Z', local: '2027-01-14T10:00:15' },
  { title: 'Berlin summer', zone: 'Europe/Berlin', utc: '2027-07-15T08:00:15Z', local: '2027-07-15T10:00:15' },
  { title: 'New York winter', zone: 'America/New_York', utc: '2027-02-10T14:30:15Z', local: '2027-02-10T09:30:15' },
  { title: 'New York summer', zone: 'America/New_York', utc: '2027-06-10T13:30:15Z', local: '2027-06-10T09:30:15' },
  { title: 'Tokyo spring', zone: 'Asia/Tokyo', utc: '2027-04-01T10:00:15Z', local: '2027-04-01T19:00:15' }
] as const

/** A property's value as written (`20270328T020000`, `+0100`). */
const textOf = (c: ICAL.Component, name: string): string =>
  (c.getFirstProperty(name)?.toICALString() ?? '').replace(/^[^:]*:/, '')

/** The observances of each VTIMEZONE: kind, DTSTART, offsets and TZNAME, by TZID. */
function observances (cal: ICAL.Component): Map<string, string[][]> {
  const out = new Map<string, string[][]>()
  for (const tz of cal.getAllSubcomponents('vtimezone')) {
    const rows = tz.getAllSubcomponents().map(o => [
      o.name.toUpperCase(),
      textOf(o, 'dtstart'),
      textOf(o, 'tzoffsetfrom'),
      textOf(o, 'tzoffsetto'),
      String(o.getFirstPropertyValue('tzname') ?? '')
    ])
    out.set(String(tz.getFirstPropertyValue('tzid')), rows)
  }
  return out
}

for (const kind of databases()) {
  void describe(`${kind}: time zones and line ends of calendar feeds`, () => {
    const t = useTestApp(kind)

    void it('converts winter and summer events of three zones through the feed\'s VTIMEZONEs, whose transitions ' +
      'are exact and named from the zone database', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const space = await createSpace(t, alice, { title: 'Zones', visibility: 40 })
      await publish(t, alice, space.id)
      for (const e of EVENTS) {
        const made = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
          title: e.title,
          start_dt: e.utc,
          end_dt: new Date(Date.parse(e.utc) + 3_600_000).toISOString(),
          timezone: e.zone,
          visibility: 40
        })).json()
        await expectStatus(t, alice, 'POST', `/api/v1/events/${made.id as number}/publish`, 204)
        await expectStatus(t, alice, 'POST', `/api/v1/events/${made.id as number}/spaces`, 201, { space_id: space.id })
      }
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/spaces/${space.id as number}/calendar.ics` })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers['content-type'], 'text/calendar; charset=utf-8')
      const lines = assertIcsLines(res.rawPayload)
      const raw = res.body

      // the events keep their wall time with its seconds, in their zone
      for (const e of EVENTS) {
        assert.ok(lines.includes(`DTSTART;TZID=${e.zone}:${e.local.replace(/[-:]/g, '')}`), `${e.title}\n${raw}`)
      }
      // ical.js (no zone of its own: only the feed's VTIMEZONEs) and node-ical give the instants the API holds
      const instances = agreedInstances(raw)
      assert.deepEqual(instances.map(i => [i.summary, i.start.toISOString()]),
        [...EVENTS].sort((a, b) => a.utc.localeCompare(b.utc)).map(e => [e.title, new Date(e.utc).toISOString()]))

      const cal = new ICAL.Component(ICAL.parse(raw))
      const zones = observances(cal)
      assert.deepEqual([...zones.keys()].sort(), ['America/New_York', 'Asia/Tokyo', 'Europe/Berlin'])
      for (const [tzid, rows] of zones) {
        for (const [part, dtstart] of rows) {
          assert.match(dtstart ?? '', /^\d{8}T\d{4}00$/, `${tzid} ${part ?? ''}: no seconds of an event\n${raw}`)
        }
      }
      const names = (tzid: string) => [...new Set((zones.get(tzid) ?? []).map(r => `${r[0] ?? ''} ${r[4] ?? ''}`))]
      assert.deepEqual(names('Europe/Berlin').sort(), ['DAYLIGHT CEST', 'STANDARD CET'])
      assert.deepEqual(names('America/New_York').sort(), ['DAYLIGHT EDT', 'STANDARD EST'])
      assert.deepEqual(names('Asia/Tokyo'), ['STANDARD JST'])
      // the changes of 2027 at their local times: Berlin 28 March 02:00 and 31 October 03:00, New York 14 March
      const berlin = zones.get('Europe/Berlin') ?? []
      assert.ok(berlin.some(r => r.join(' ') === 'DAYLIGHT 20270328T020000 +0100 +0200 CEST'), raw)
      assert.ok(!berlin.some(r => r[1]?.startsWith('20271031') === true), 'the span ends with the summer event')
      const ny = zones.get('America/New_York') ?? []
      assert.ok(ny.some(r => r.join(' ') === 'DAYLIGHT 20270314T020000 -0500 -0400 EDT'), raw)

      // an observance's own times, converted by ical.js: the instant of Berlin's change is 01:00:00 UTC
      const berlinZone = cal.getAllSubcomponents('vtimezone')
        .find(z => z.getFirstPropertyValue('tzid') === 'Europe/Berlin')
      assert.ok(berlinZone !== undefined)
      const zone = new ICAL.Timezone({ component: berlinZone })
      const at = (local: string) => {
        const time = ICAL.Time.fromDateTimeString(local)
        time.zone = zone
        return time.toJSDate().toISOString()
      }
      assert.equal(at('2027-03-28T01:59:59'), '2027-03-28T00:59:59.000Z')
      assert.equal(at('2027-03-28T03:00:00'), '2027-03-28T01:00:00.000Z')
    })
  })
}

/**
 * Calendar feeds (RFC 5545): every feed is parsed with ical.js (and node-ical must read the same instances). Times
 * across daylight-saving changes, a series as one recurring entry with an override, a cancelled event, text escaping
 * and line folding, 304, and the token rules (revoked, rotated, another tenant's, a removed user, a private space
 * without token).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import ICAL from 'ical.js'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { createSpace, publish } from '../spaces/spaces.fixtures.ts'
import { addManager } from '../events/events.fixtures.ts'
import { agreedInstances } from '../../../test/helpers/calendar-parsers.ts'
import { assertIcsLines } from '../../../test/helpers/ics-lines.ts'

type Json = Record<string, any>

/** 10:00 local on the day after the zone's next offset change (at least a month ahead), and two days before it. */
function aroundChange (zone: string): { before: DateTime, after: DateTime } {
  let day = DateTime.now().setZone(zone).plus({ days: 30 }).startOf('day')
  const offset = day.offset
  while (day.plus({ days: 1 }).offset === offset) day = day.plus({ days: 1 })
  const changeDay = day.plus({ days: 1 })
  return {
    before: changeDay.minus({ days: 2 }).set({ hour: 10 }),
    after: changeDay.plus({ days: 1 }).set({ hour: 10 })
  }
}

interface Parsed {
  raw: string
  name: string
  events: Map<string, ICAL.Event>
  vevents: ICAL.Component[]
}

/**
 * Parses a feed with ical.js, registering its VTIMEZONEs, and checks its line ends and lengths and that node-ical
 * reads the same instances.
 */
function parse (raw: string): Parsed {
  // CRLF after every line, the last one too, no bare LF, at most 75 octets a line
  assertIcsLines(raw)
  agreedInstances(raw)
  const cal = new ICAL.Component(ICAL.parse(raw))
  for (const tz of cal.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(tz)
  const vevents = cal.getAllSubcomponents('vevent')
  const events = new Map(vevents.map(v => {
    const e = new ICAL.Event(v)
    return [e.summary, e] as const
  }))
  // ical.js reads an X- property as is: its TEXT escapes undone here
  const name = String(cal.getFirstPropertyValue('x-wr-calname'))
    .replace(/\\([\\;,nN])/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c))
  return { raw, name, events, vevents }
}

async function feed (t: TestApp, url: string, headers: Record<string, string> = {}) {
  return await t.app.inject({ method: 'GET', url, headers })
}

async function publishedEvent (t: TestApp, token: string, body: Json, spaceId?: number): Promise<Json> {
  const e = (await expectStatus(t, token, 'POST', '/api/v1/events', 201, body)).json()
  await expectStatus(t, token, 'POST', `/api/v1/events/${e.id as number}/publish`, 204)
  if (spaceId !== undefined) {
    await expectStatus(t, token, 'POST', `/api/v1/events/${e.id as number}/spaces`, 201, { space_id: spaceId })
  }
  return e
}

async function newToken (t: TestApp, token: string, body: Json): Promise<Json> {
  return (await expectStatus(t, token, 'POST', '/api/v1/feed-tokens', 201, body)).json()
}

const pathOf = (url: string): string => url.replace(/^https?:\/\/[^/]+/, '')

const LONG = `${'Très long texte, avec des virgules; et des points-virgules. '.repeat(6)}Fin`

for (const kind of databases()) {
  void describe(`${kind}: calendar feeds`, () => {
    const t = useTestApp(kind, { env: { APP_URL: 'https://app.example.test' } })

    void it('a public space: anonymous, local times kept across DST, escaping, folding, 304', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const space = await createSpace(t, alice, { title: 'Open, garden; club', visibility: 40 })
      await publish(t, alice, space.id)
      const berlin = aroundChange('Europe/Berlin')
      const ny = aroundChange('America/New_York')
      const iso = (d: DateTime) => d.toUTC().toISO() ?? ''
      const e1 = await publishedEvent(t, alice, {
        title: 'Berlin after, the change; yes',
        description: `Line one\nLine two; with, commas\\ and a backslash\n${LONG}`,
        address: 'Main street 1, 10115 Berlin',
        latitude: 52.52,
        longitude: 13.405,
        start_dt: iso(berlin.after),
        end_dt: iso(berlin.after.plus({ hours: 1 })),
        timezone: 'Europe/Berlin',
        visibility: 40
      }, space.id)
      await publishedEvent(t, alice, {
        title: 'Berlin before',
        start_dt: iso(berlin.before),
        end_dt: iso(berlin.before.plus({ hours: 1 })),
        timezone: 'Europe/Berlin',
        visibility: 40
      }, space.id)
      await publishedEvent(t, alice, {
        title: 'New York after',
        start_dt: iso(ny.after),
        end_dt: iso(ny.after.plus({ hours: 2 })),
        timezone: 'America/New_York',
        visibility: 40
      }, space.id)
      // not in the anonymous feed: members-only, and a draft
      await publishedEvent(t, alice, { title: 'Members only', start_dt: iso(berlin.after), visibility: 20 }, space.id)
      await expectStatus(t, alice, 'POST', '/api/v1/events', 201, { title: 'Draft', start_dt: iso(berlin.after) })

      const url = `/api/v1/spaces/${space.id as number}/calendar.ics`
      const res = await feed(t, url)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers['content-type'], 'text/calendar; charset=utf-8')
      // the same for every reader without a token: any cache may share it (docs/integrations.md)
      assert.equal(res.headers['cache-control'], 'public, max-age=300')
      const cal = parse(res.body)
      assert.equal(cal.name, 'Open, garden; club')
      assert.match(cal.raw, /X-WR-CALNAME:Open\\, garden\\; club/)
      assert.deepEqual([...cal.events.keys()].sort(),
        ['Berlin after, the change; yes', 'Berlin before', 'New York after'])

      const after = cal.events.get('Berlin after, the change; yes')
      const before = cal.events.get('Berlin before')
      const nyAfter = cal.events.get('New York after')
      assert.ok(after !== undefined && before !== undefined && nyAfter !== undefined)
      for (const [e, zone, expected] of [
        [after, 'Europe/Berlin', berlin.after], [before, 'Europe/Berlin', berlin.before],
        [nyAfter, 'America/New_York', ny.after]
      ] as const) {
        assert.equal(e.startDate.zone?.tzid, zone)
        assert.equal(e.startDate.hour, 10, 'the wall clock of the zone')
        assert.equal(e.startDate.toJSDate().toISOString(), expected.toUTC().toISO(), 'the instant, through VTIMEZONE')
      }
      assert.notEqual(after.startDate.toJSDate().getUTCHours(), before.startDate.toJSDate().getUTCHours())
      assert.equal(nyAfter.endDate.toJSDate().toISOString(), ny.after.plus({ hours: 2 }).toUTC().toISO())

      // escaping and folding round-trip
      assert.equal(after.description, `Line one\nLine two; with, commas\\ and a backslash\n${LONG}`)
      assert.equal(after.location, 'Main street 1, 10115 Berlin')
      assert.match(cal.raw, /SUMMARY:Berlin after\\, the change\\; yes/)
      const v = after.component
      assert.deepEqual(v.getFirstPropertyValue('geo'), [52.52, 13.405])
      assert.equal(v.getFirstPropertyValue('uid'), `event-${e1.id as number}@localhost`)
      assert.equal(v.getFirstPropertyValue('url'), `https://app.example.test/events/${e1.id as number}`)
      assert.equal(v.getFirstPropertyValue('status'), 'CONFIRMED')
      assert.ok(Number(v.getFirstPropertyValue('sequence')) >= 1)
      assert.ok(v.getFirstPropertyValue('dtstamp') !== null)

      // the same text, the same ETag: 304
      const etag = res.headers.etag as string
      assert.ok(etag.length > 10)
      const again = await feed(t, url, { 'if-none-match': etag })
      assert.equal(again.statusCode, 304)
      assert.equal(again.body, '')
      // asked again without If-None-Match: the same text under the same ETag (kept, not rendered again)
      const kept = await feed(t, url)
      assert.equal(kept.statusCode, 200)
      assert.equal(kept.headers.etag, etag)
      assert.equal(kept.body, res.body)
      // an event taken out of the space leaves the feed, though no row of the feed changed
      const nyId = [...cal.events.values()].find(e => e.summary === 'New York after')?.component
        .getFirstPropertyValue('uid') as string
      await expectStatus(t, alice, 'DELETE',
        `/api/v1/events/${nyId.replace(/^event-(\d+)@.*$/, '$1')}/spaces/${space.id as number}`, 204)
      const fewer = await feed(t, url, { 'if-none-match': etag })
      assert.equal(fewer.statusCode, 200)
      assert.notEqual(fewer.headers.etag, etag)
      assert.deepEqual([...parse(fewer.body).events.keys()].sort(), ['Berlin after, the change; yes', 'Berlin before'])
      // a published change changes the feed, and grows the event's SEQUENCE
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e1.id as number}`, 200, { title: 'Renamed' })
      const changed = await feed(t, url, { 'if-none-match': etag })
      assert.equal(changed.statusCode, 200)
      const renamed = parse(changed.body).events.get('Renamed')
      assert.ok(renamed !== undefined)
      assert.ok(
        Number(renamed.component.getFirstPropertyValue('sequence')) > Number(v.getFirstPropertyValue('sequence')))
    })

    void it('a personal feed: created and managed events, series occurrences, an override, ' +
      'a cancellation', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const start = DateTime.now().setZone('Europe/Berlin').plus({ days: 14 }).startOf('day').set({ hour: 9 })
      const made = (await expectStatus(t, alice, 'POST', '/api/v1/events/with-series', 201, {
        title: 'Standup',
        start_dt: start.toUTC().toISO(),
        end_dt: start.plus({ minutes: 30 }).toUTC().toISO(),
        timezone: 'Europe/Berlin',
        series: { freq: 'weekly', interval: 1, repeat_days: [start.weekday], ends_on: 'after_n', end_count: 4 }
      })).json()
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      assert.equal(ids.length, 4)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${ids[0] as number}/series/publish`, 204)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${ids[1] as number}?scope=this`, 200, {
        title: 'Standup (special)'
      })
      const party = await publishedEvent(t, alice, {
        title: 'Party', start_dt: start.plus({ days: 2 }).toUTC().toISO(), timezone: 'Europe/Berlin'
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${party.id as number}/cancel`, 200, { reason: 'Rain' })
      // a deleted event still in the window stays, cancelled
      const gone = await publishedEvent(t, alice, { title: 'Gone', start_dt: start.plus({ days: 3 }).toUTC().toISO() })
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${gone.id as number}`, 204)
      // bob's event is not alice's, and an event long gone is outside the window
      await publishedEvent(t, bob, { title: "Bob's", start_dt: start.toUTC().toISO(), visibility: 40 })
      await publishedEvent(t, alice, { title: 'Old', start_dt: DateTime.now().minus({ days: 200 }).toUTC().toISO() })

      const created = await newToken(t, alice, { scope: 'personal' })
      assert.equal(created.scope, 'personal')
      assert.match(created.token, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(created.url, `http://localhost:8080/api/v1/me/calendar.ics?token=${created.token as string}`)
      const res = await feed(t, pathOf(created.url))
      assert.equal(res.statusCode, 200, res.body)
      const cal = parse(res.body)
      const summaries = cal.vevents.map(v => String(v.getFirstPropertyValue('summary')))
      assert.deepEqual(summaries.sort(), ['Gone', 'Party', 'Standup', 'Standup (special)'])
      // the series is one recurring VEVENT and its changed occurrence one with RECURRENCE-ID, both at 09:00 Berlin
      const standup = cal.vevents.filter(x => String(x.getFirstPropertyValue('summary')).startsWith('Standup'))
      const seriesUid = `series-${made.event.series_id as number}@localhost`
      assert.deepEqual(standup.map(v => v.getFirstPropertyValue('uid')), [seriesUid, seriesUid])
      assert.match(String(standup[0]?.getFirstPropertyValue('rrule')), /FREQ=WEEKLY/)
      assert.equal(standup[1]?.getFirstPropertyValue('recurrence-id')?.toString().slice(0, 10),
        start.plus({ weeks: 1 }).toISODate())
      for (const v of standup) assert.equal(new ICAL.Event(v).startDate.hour, 9)
      assert.equal(cal.events.get('Party')?.component.getFirstPropertyValue('status'), 'CANCELLED')
      assert.equal(cal.events.get('Gone')?.component.getFirstPropertyValue('status'), 'CANCELLED')
      assert.equal(cal.events.get('Standup (special)')?.component.getFirstPropertyValue('status'), 'CONFIRMED')

      // bob's personal feed: his own event, and alice's private event he manages (an active grant), not the others
      const managed = await publishedEvent(t, alice, {
        title: 'Managed by bob', start_dt: start.plus({ days: 4 }).toUTC().toISO(), visibility: 10
      })
      await addManager(t, tenant.id, managed.id, 'bob', { role: 'event_manager:full' })
      const mine = await newToken(t, bob, { scope: 'personal' })
      const bobs = parse((await feed(t, pathOf(mine.url))).body)
      assert.deepEqual([...bobs.events.keys()].sort(), ["Bob's", 'Managed by bob'])

      // listed without the secret; used once (last_used_at)
      const list = (await expectStatus(t, alice, 'GET', '/api/v1/feed-tokens', 200)).json()
      assert.equal(list.items.length, 1)
      assert.equal(list.items[0].id, created.id)
      assert.equal(list.items[0].token, undefined)
      assert.ok(list.items[0].last_used_at !== null)
      assert.ok(!JSON.stringify(list).includes(created.token))

      // rotation: the old token stops, the new one works; revocation: 404
      const rotated = (await expectStatus(t, alice, 'POST', `/api/v1/feed-tokens/${created.id as number}/rotate`, 200))
        .json()
      assert.equal(rotated.id, created.id)
      assert.notEqual(rotated.token, created.token)
      assert.equal((await feed(t, pathOf(created.url))).statusCode, 404)
      assert.equal((await feed(t, pathOf(rotated.url))).statusCode, 200)
      await expectStatus(t, bob, 'POST', `/api/v1/feed-tokens/${created.id as number}/rotate`, 404)
      await expectStatus(t, bob, 'DELETE', `/api/v1/feed-tokens/${created.id as number}`, 404)
      await expectStatus(t, alice, 'DELETE', `/api/v1/feed-tokens/${created.id as number}`, 204)
      assert.equal((await feed(t, pathOf(rotated.url))).statusCode, 404)
      await expectStatus(t, alice, 'DELETE', `/api/v1/feed-tokens/${created.id as number}`, 404)
      // a personal token does not open a space feed
      assert.equal((await feed(t, `/api/v1/spaces/1/calendar.ics?token=${mine.token as string}`)).statusCode, 404)
    })

    void it('a private space: 404 without a token; a space token reads as its user sees it now', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const space = await createSpace(t, alice, { title: 'Inner circle', visibility: 10 })
      await publish(t, alice, space.id)
      const at = DateTime.now().plus({ days: 3 }).toUTC().toISO()
      await publishedEvent(t, alice, { title: 'Secret', start_dt: at, visibility: 10 }, space.id)
      const url = `/api/v1/spaces/${space.id as number}/calendar.ics`
      assert.equal((await feed(t, url)).statusCode, 404)
      assert.equal((await feed(t, `${url}?token=nope`)).statusCode, 404)
      // a space the caller does not see: no token for it
      await expectStatus(t, bob, 'POST', '/api/v1/feed-tokens', 404, { scope: 'space', space_id: space.id })
      await expectStatus(t, bob, 'POST', '/api/v1/feed-tokens', 400, { scope: 'space' })
      await expectStatus(t, bob, 'POST', '/api/v1/feed-tokens', 400, { scope: 'personal', space_id: space.id })

      const token = await newToken(t, alice, { scope: 'space', space_id: space.id })
      assert.equal(pathOf(token.url), `${url}?token=${token.token as string}`)
      const ok = await feed(t, pathOf(token.url))
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([...parse(ok.body).events.keys()], ['Secret'])
      // the token of a space does not open another space
      const other = await createSpace(t, alice, { title: 'Other', visibility: 40 })
      await publish(t, alice, other.id)
      assert.equal((await feed(t, `/api/v1/spaces/${other.id as number}/calendar.ics?token=${token.token as string}`))
        .statusCode, 404)

      // another tenant's space id with this token: 404; another tenant's token for this space: 404
      const tenantB = newTenant(t)
      const carol = await tenantB.user('carol')
      const spaceB = await createSpace(t, carol, { title: 'B', visibility: 40 })
      await publish(t, carol, spaceB.id)
      const tokenB = await newToken(t, carol, { scope: 'space', space_id: spaceB.id })
      assert.equal((await feed(t, `${url}?token=${tokenB.token as string}`)).statusCode, 404)
      assert.equal((await feed(t, pathOf(tokenB.url))).statusCode, 200)
      await expectStatus(t, carol, 'DELETE', `/api/v1/feed-tokens/${token.id as number}`, 404)

      // the identity provider removes alice: her token stops
      await t.ctx.db.insertInto('users').values({ tenant_id: tenant.id, id: 'alice', state: 'removed' }).execute()
      assert.equal((await feed(t, pathOf(token.url))).statusCode, 404)
    })
  })

  /** A published public space with one public event a week ahead; its anonymous feed's address. */
  async function publicFeed (t: TestApp) {
    const tenant = newTenant(t)
    const alice = await tenant.user('alice')
    const space = await createSpace(t, alice, { title: 'Open', visibility: 40 })
    await publish(t, alice, space.id)
    const at = DateTime.now().plus({ days: 7 }).toUTC().toISO()
    const e = await publishedEvent(t, alice, { title: 'Before', start_dt: at, visibility: 40 }, space.id)
    const url = `/api/v1/spaces/${space.id as number}/calendar.ics`
    const titles = async () => [...parse((await feed(t, url)).body).events.keys()]
    /** A change written by another instance (here: straight to the database). */
    const retitleElsewhere = async (title: string) => {
      await t.ctx.db.updateTable('events').set({ title })
        .where('tenant_id', '=', tenant.id).where('id', '=', e.id as number).execute()
    }
    return { alice, space, e, url, titles, retitleElsewhere }
  }

  void describe(`${kind}: a public space's anonymous feed kept in memory (PUBLIC_PAGE_CACHE_MS=1000)`, () => {
    const t = useTestApp(kind, { env: { PUBLIC_PAGE_CACHE_MS: '1000' } })

    void it('a write answered here shows at once, one made elsewhere within PUBLIC_PAGE_CACHE_MS; ' +
      'a token\'s feed is never the kept one', async () => {
      const { alice, space, e, url, titles, retitleElsewhere } = await publicFeed(t)
      assert.deepEqual(await titles(), ['Before'])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id as number}`, 200, { title: 'After' })
      assert.deepEqual(await titles(), ['After'])
      const etag = (await feed(t, url)).headers.etag as string
      assert.equal((await feed(t, url, { 'if-none-match': etag })).statusCode, 304)

      await retitleElsewhere('Elsewhere')
      assert.deepEqual(await titles(), ['After'], 'kept: the write was not answered by this process')
      assert.equal((await feed(t, url, { 'if-none-match': etag })).statusCode, 304)
      const token = await newToken(t, alice, { scope: 'space', space_id: space.id })
      assert.deepEqual([...parse((await feed(t, pathOf(token.url))).body).events.keys()], ['Elsewhere'])
      await new Promise(resolve => setTimeout(resolve, t.config.publicPageCacheMs + 50))
      assert.deepEqual(await titles(), ['Elsewhere'])
      const changed = await feed(t, url, { 'if-none-match': etag })
      assert.equal(changed.statusCode, 200)
      assert.notEqual(changed.headers.etag, etag)

      // unpublished here: gone at once
      await expectStatus(t, alice, 'PATCH', `/api/v1/spaces/${space.id as number}`, 200, { visibility: 10 })
      await publish(t, alice, space.id)
      assert.equal((await feed(t, url)).statusCode, 404)
    })
  })

  void describe(`${kind}: a public space's anonymous feed without the memory (PUBLIC_PAGE_CACHE_MS=0)`, () => {
    const t = useTestApp(kind, { env: { PUBLIC_PAGE_CACHE_MS: '0' } })

    void it('reads every feed from the database', async () => {
      const { titles, retitleElsewhere } = await publicFeed(t)
      assert.deepEqual(await titles(), ['Before'])
      await retitleElsewhere('Elsewhere')
      assert.deepEqual(await titles(), ['Elsewhere'])
    })
  })
}

/**
 * POST /api/v1/spaces/{id}/calendar-import (docs/calendar-import.md), on PGlite and PostgreSQL: a file with a single
 * event and a recurring one (EXDATE, RDATE, an override, a cancelled override) read back through the events and
 * series routes; a second import of the same UIDs updates and does not duplicate; a dry run stores nothing; the
 * bounds (not iCalendar, too large, a rule the series module refuses, too many VEVENTs) store nothing either; a URL
 * fetched once through the outbound client, a private address refused; who may import (403, 404); a series older
 * than 12 months re-anchored; all-day events, a zone that is not IANA.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxTopics } from '../../../test/helpers/outbox.ts'
import { problemIssues } from '../../../test/helpers/problem.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { createSpace, publish } from '../spaces/spaces.fixtures.ts'

type Json = Record<string, any>

const BERLIN = 'Europe/Berlin'
/** A wall time as iCalendar writes it (`20270301T090000`). */
const wall = (d: DateTime): string => d.toFormat("yyyyMMdd'T'HHmmss")
const berlin = (d: DateTime): string => `;TZID=${BERLIN}:${wall(d)}`
/** An instant as the API answers it, read in Berlin (`2027-03-01T09:00`). */
const local = (iso: string, zone = BERLIN): string =>
  DateTime.fromISO(iso, { zone: 'UTC' }).setZone(zone).toFormat("yyyy-MM-dd'T'HH:mm")
const at = (d: DateTime): string => d.toFormat("yyyy-MM-dd'T'HH:mm")

const vevent = (...lines: string[]): string[] => ['BEGIN:VEVENT', ...lines, 'END:VEVENT']
const calendar = (...events: string[][]): string =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Example//Import test//EN', `X-WR-TIMEZONE:${BERLIN}`,
    ...events.flat(), 'END:VCALENDAR', ''].join('\r\n')
/** The line (1-based) of the first line of `text` that starts with `start`, after `after` if given. */
const lineOf = (text: string, start: string, after = 0): number =>
  text.split('\r\n').findIndex((l, i) => i >= after && l.startsWith(start)) + 1

async function importIcs (t: TestApp, token: string, spaceId: number, body: string | Json, query = '') {
  return await t.as(token, {
    method: 'POST',
    url: `/api/v1/spaces/${spaceId}/calendar-import${query}`,
    headers: { 'content-type': typeof body === 'string' ? 'text/calendar' : 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body)
  })
}

/** Imports and asserts the status (and, for an error, a proper ErrorModel); the JSON body. */
async function expectImport (
  t: TestApp, token: string, spaceId: number, status: number, body: string | Json, query = ''
): Promise<Json> {
  const res = await importIcs(t, token, spaceId, body, query)
  assert.equal(res.statusCode, status, res.body)
  if (status >= 400) assert.deepEqual(problemIssues(res as LightMyRequestResponse), [])
  return res.json()
}

/** The events linked to a space, as the caller sees them. */
async function spaceEvents (t: TestApp, token: string, spaceId: number): Promise<Json[]> {
  const page = await getJson(t, token, `/api/v1/events?space_ids=${spaceId}&size=100`)
  assert.ok(page.total <= 100)
  return page.items
}

/** The domain events of events and series the tenant's writes queued. */
const writtenTopics = async (t: TestApp, tenantId: string): Promise<string[]> =>
  [...await outboxTopics(t, tenantId, 'event.'), ...await outboxTopics(t, tenantId, 'series.')]

const occurrencesOf = async (t: TestApp, token: string, eventId: number): Promise<Json[]> =>
  (await getJson(t, token, `/api/v1/events/${eventId}/series/occurrences?limit=200`)).items

/** Mondays and Wednesdays 09:00 Berlin from a Monday about two months ahead, and the story's file. */
function story (names: { kickoff?: string, standup?: string, moved?: string } = {}, cancel: number[] = []) {
  const mo0 = DateTime.now().setZone(BERLIN).plus({ months: 2 }).startOf('week').set({ hour: 9 })
  const we0 = mo0.plus({ days: 2 })
  const mo1 = mo0.plus({ weeks: 1 })
  const we1 = we0.plus({ weeks: 1 })
  const fr1 = mo1.plus({ days: 4 })
  const kickoff = mo0.minus({ days: 7 }).set({ hour: 14 })
  const text = calendar(
    vevent('UID:kickoff@example.org', `SUMMARY:${names.kickoff ?? 'Kick-off'}`,
      'DESCRIPTION:First meeting\\, all hands', 'LOCATION:Room 1', 'GEO:52.52;13.405',
      `DTSTART${berlin(kickoff)}`, `DTEND${berlin(kickoff.plus({ hours: 2 }))}`),
    vevent('UID:standup@example.org', `SUMMARY:${names.standup ?? 'Standup'}`,
      `DTSTART${berlin(mo0)}`, `DTEND${berlin(mo0.plus({ minutes: 15 }))}`,
      'RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6', `EXDATE${berlin(we0)}`, `RDATE${berlin(fr1)}`),
    vevent('UID:standup@example.org', `RECURRENCE-ID${berlin(mo1)}`, `SUMMARY:${names.moved ?? 'Standup (moved)'}`,
      `DTSTART${berlin(mo1.set({ hour: 11 }))}`, `DTEND${berlin(mo1.set({ hour: 11, minute: 30 }))}`),
    vevent('UID:standup@example.org', `RECURRENCE-ID${berlin(we1)}`, 'STATUS:CANCELLED', `DTSTART${berlin(we1)}`),
    // more cancelled Mondays, by week
    ...cancel.map(week => vevent('UID:standup@example.org', `RECURRENCE-ID${berlin(mo0.plus({ weeks: week }))}`,
      'STATUS:CANCELLED'))
  )
  return { text, mo0, we0, mo1, we1, fr1, kickoff }
}

/** A local server answering `GET /cal.ics` with `body` (and 404 elsewhere), counting the requests. */
function calendarServer (body: () => string) {
  const requests: string[] = []
  const server = http.createServer((req, res) => {
    requests.push(`${req.method ?? ''} ${req.url ?? ''}`)
    if (req.url === '/cal.ics') {
      res.writeHead(200, { 'content-type': 'text/calendar; charset=utf-8' }).end(body())
    } else if (req.url === '/moved.ics') {
      res.writeHead(302, { location: '/cal.ics' }).end()
    } else {
      res.writeHead(404).end()
    }
  })
  return { server, requests, url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}` }
}

for (const kind of databases()) {
  void describe(`${kind}: POST /api/v1/spaces/{id}/calendar-import`, () => {
    // the local calendar server is allow-listed as webhook receivers are in their tests
    const t = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })

    void it('makes a single event and a series with its EXDATE, RDATE, a moved occurrence and a cancelled one, ' +
      'drafts linked to the space; a second import of the same file changes nothing, a changed SUMMARY updates ' +
      'without duplicating', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const space = await createSpace(t, alice)
      const s = story()
      const report = await expectImport(t, alice, space.id, 200, s.text)
      assert.equal(report.$schema, 'http://localhost:8080/schemas/CalendarImportReport.json')
      assert.deepEqual([report.dry_run, report.created, report.updated, report.unchanged, report.skipped],
        [false, 2, 1, 0, 1])
      assert.deepEqual(report.items.map((i: Json) => [i.uid, i.kind, i.action, i.line]), [
        ['kickoff@example.org', 'event', 'create', lineOf(s.text, 'BEGIN:VEVENT')],
        ['standup@example.org', 'series', 'create', lineOf(s.text, 'UID:standup') - 1],
        ['standup@example.org', 'event', 'update', lineOf(s.text, 'RECURRENCE-ID') - 2],
        ['standup@example.org', 'event', 'skip', lineOf(s.text, 'STATUS:CANCELLED') - 3]
      ])
      const [kickoffItem, seriesItem, movedItem, cancelledItem] = report.items as Json[]
      assert.match(String(cancelledItem?.reason), /CANCELLED/)
      assert.equal(local(String(movedItem?.recurrence_id)), at(s.mo1))

      const kickoff = await getJson(t, alice, `/api/v1/events/${String(kickoffItem?.id)}`)
      assert.deepEqual(
        [kickoff.title, kickoff.description, kickoff.address, kickoff.latitude, kickoff.longitude, kickoff.timezone,
          kickoff.status, local(kickoff.start_dt), local(kickoff.end_dt), kickoff.spaces.map((x: Json) => x.id)],
        ['Kick-off', 'First meeting, all hands', 'Room 1', 52.52, 13.405, BERLIN, 'draft', at(s.kickoff),
          at(s.kickoff.plus({ hours: 2 })), [space.id]]
      )
      const anchorId = Number(seriesItem?.event_id)
      const series = (await getJson(t, alice, `/api/v1/events/${anchorId}/series`)).series
      assert.equal(series.id, seriesItem?.id)
      assert.match(series.rrule, /^FREQ=WEEKLY;COUNT=6;BYDAY=MO,WE/)
      assert.deepEqual(series.exdates.map((d: string) => local(d)).sort(), [at(s.we0), at(s.we1)])
      const occurrences = await occurrencesOf(t, alice, anchorId)
      assert.deepEqual(occurrences.map(o => [local(o.start_dt), local(o.end_dt), o.title, o.status]), [
        [at(s.mo0), at(s.mo0.plus({ minutes: 15 })), 'Standup', 'draft'],
        [at(s.mo1.set({ hour: 11 })), at(s.mo1.set({ hour: 11, minute: 30 })), 'Standup (moved)', 'draft'],
        [at(s.fr1), at(s.fr1.plus({ minutes: 15 })), 'Standup', 'draft'],
        [at(s.mo0.plus({ weeks: 2 })), at(s.mo0.plus({ weeks: 2, minutes: 15 })), 'Standup', 'draft'],
        [at(s.we0.plus({ weeks: 2 })), at(s.we0.plus({ weeks: 2, minutes: 15 })), 'Standup', 'draft']
      ])
      assert.equal(movedItem?.id, occurrences[1]?.id)
      // every event of the file is in the space: the single one and the five occurrences
      const inSpace = await spaceEvents(t, alice, space.id)
      assert.deepEqual(inSpace.map(e => e.id).sort((a, b) => a - b),
        [kickoffItem?.id, ...occurrences.map(o => o.id)].sort((a, b) => a - b))
      // the services' own domain events
      const topics = await outboxTopics(t, tenant.id)
      assert.ok(topics.includes('series.created') && topics.includes('event.updated'))
      assert.equal(topics.filter(x => x === 'event.space_added').length, 6)

      const again = await expectImport(t, alice, space.id, 200, s.text)
      assert.deepEqual([again.created, again.updated, again.unchanged, again.skipped], [0, 0, 3, 1])
      assert.deepEqual(again.items.map((i: Json) => i.id), report.items.map((i: Json) => i.id))
      assert.equal((await outboxTopics(t, tenant.id)).length, topics.length, 'an unchanged import writes nothing')

      const renamed = story({ kickoff: 'Kick-off (new room)', standup: 'Daily standup', moved: 'Standup (later)' })
      const third = await expectImport(t, alice, space.id, 200, renamed.text)
      assert.deepEqual([third.created, third.updated, third.unchanged, third.skipped], [0, 3, 0, 1])
      assert.equal((await getJson(t, alice, `/api/v1/events/${String(kickoffItem?.id)}`)).title, 'Kick-off (new room)')
      assert.deepEqual((await occurrencesOf(t, alice, anchorId)).map(o => [o.id, o.title]), [
        [occurrences[0]?.id, 'Daily standup'],
        [occurrences[1]?.id, 'Standup (later)'],
        [occurrences[2]?.id, 'Daily standup'],
        [occurrences[3]?.id, 'Daily standup'],
        [occurrences[4]?.id, 'Daily standup']
      ])
      assert.equal((await spaceEvents(t, alice, space.id)).length, 6, 'nothing duplicated')
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 6)

      // a later file cancels the Monday of week 2: that occurrence is deleted (scope=this)
      const cancelling = story({ kickoff: 'Kick-off (new room)', standup: 'Daily standup', moved: 'Standup (later)' },
        [2])
      const fourth = await expectImport(t, alice, space.id, 200, cancelling.text)
      assert.deepEqual([fourth.created, fourth.updated, fourth.unchanged, fourth.skipped], [0, 1, 3, 1])
      const deleted = (fourth.items as Json[]).find(i => i.action === 'update')
      assert.deepEqual([deleted?.id, local(String(deleted?.recurrence_id))],
        [occurrences[3]?.id, at(s.mo0.plus({ weeks: 2 }))])
      assert.match(String(deleted?.reason), /deleted \(scope=this\)/)
      await expectStatus(t, alice, 'GET', `/api/v1/events/${String(occurrences[3]?.id)}`, 404)
      assert.equal((await occurrencesOf(t, alice, anchorId)).length, 4)
      const fifth = await expectImport(t, alice, space.id, 200, cancelling.text)
      assert.deepEqual([fifth.created, fifth.updated, fifth.unchanged, fifth.skipped], [0, 0, 3, 2])

      // the same file into another space: what it made is linked there too, nothing made twice
      const other = await createSpace(t, alice, { title: 'Other space' })
      const linked = await expectImport(t, alice, other.id, 200, cancelling.text)
      assert.deepEqual(linked.items.map((i: Json) => [i.action, i.reason]).slice(0, 3), [
        ['update', 'linked to this space'], ['update', '4 occurrences linked to this space'], ['unchanged', null]
      ])
      assert.equal((await spaceEvents(t, alice, other.id)).length, 5)
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 5)
    })

    void it('a dry run answers the same report and stores nothing, by query or in a URL body', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const space = await createSpace(t, alice)
      const s = story()
      const report = await expectImport(t, alice, space.id, 200, s.text, '?dry_run=true')
      assert.deepEqual([report.dry_run, report.created, report.updated, report.unchanged, report.skipped],
        [true, 2, 1, 0, 1])
      assert.ok(report.items.every((i: Json) => i.id === null && i.event_id === null),
        'nothing made by a dry run has an id')
      assert.deepEqual(await spaceEvents(t, alice, space.id), [])
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 0)
      assert.deepEqual(await writtenTopics(t, tenant.id), [])

      const { server, requests, url } = calendarServer(() => s.text)
      await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
      try {
        const byUrl = await expectImport(t, alice, space.id, 200, { url: url('/cal.ics'), dry_run: true })
        assert.deepEqual(byUrl.items.map((i: Json) => i.action), report.items.map((i: Json) => i.action))
        assert.equal(byUrl.dry_run, true)
        assert.deepEqual(requests, ['GET /cal.ics'])
      } finally {
        server.close()
      }
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 0)
    })

    void describe('a URL', () => {
      const { server, requests, url } = calendarServer(() => story().text)
      before(async () => { await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve)) })
      after(() => { server.close() })

      void it('is fetched once through the outbound client; a redirect, a 404 and a private address are refused, ' +
        'nothing stored', async () => {
        const alice = await newTenant(t).user('alice')
        const space = await createSpace(t, alice)
        requests.length = 0
        const report = await expectImport(t, alice, space.id, 200, { url: url('/cal.ics') })
        assert.deepEqual([report.created, report.updated, report.skipped], [2, 1, 1])
        assert.deepEqual(requests, ['GET /cal.ics'], 'one GET')
        assert.equal((await spaceEvents(t, alice, space.id)).length, 6)

        const other = await createSpace(t, alice, { title: 'Other' })
        const redirect = await expectImport(t, alice, other.id, 502, { url: url('/moved.ics') })
        assert.equal(redirect.errors[0].location, 'body.url')
        assert.match(redirect.errors[0].message, /302: redirects are not followed/)
        const missing = await expectImport(t, alice, other.id, 502, { url: url('/nothing.ics') })
        assert.match(missing.errors[0].message, /404/)
        assert.deepEqual(requests, ['GET /cal.ics', 'GET /moved.ics', 'GET /nothing.ics'], 'no redirect followed')
        for (const refused of ['https://169.254.169.254/latest/meta-data', 'https://10.0.0.1/cal.ics',
          'https://[::1]/cal.ics', 'http://example.org/cal.ics',
          'https://user:secret@example.org/cal.ics', 'not a url']) {
          const res = await expectImport(t, alice, other.id, 400, { url: refused })
          assert.equal(res.errors[0].location, 'body.url', refused)
        }
        const unexpected = await expectImport(t, alice, other.id, 400, { url: url('/cal.ics'), since: 'now' })
        assert.equal(unexpected.errors[0].location, 'body.since')
        // a caller who may not import into the space makes the service call nobody
        await expectImport(t, await newTenant(t).user('mallory', ['admin']), other.id, 404, { url: url('/cal.ics') })
        assert.equal(requests.length, 3, 'a refused address or caller is never called')
        assert.deepEqual(await spaceEvents(t, alice, other.id), [])
      })
    })

    void it('refuses what is not iCalendar, a file over 1 MiB or 500 VEVENTs, a missing DTSTART or UID, and ' +
      'another charset, naming the line; nothing stored', async () => {
      const alice = await newTenant(t).user('alice')
      const space = await createSpace(t, alice)
      const cases: Array<[string, number, string, RegExp]> = [
        ['hello world\r\n', 400, 'body.line[1]', /NAME:value/],
        ['BEGIN:VCARD\r\nVERSION:4.0\r\nEND:VCARD\r\n', 400, 'body.line[1]', /BEGIN:VCALENDAR/],
        ['', 400, 'body', /iCalendar/],
        ['BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20270101T100000Z\r\nEND:VCALENDAR\r\n', 400,
          'body.line[5]', /does not close BEGIN:VEVENT of line 2/],
        ['BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20270101T100000Z\r\nEND:VEVENT\r\n', 400,
          'body.line[1]', /not closed/],
        [calendar(vevent('UID:x', 'SUMMARY:No start')), 400, 'body.line[5]', /no DTSTART/],
        [calendar(vevent('SUMMARY:No UID', 'DTSTART:20270101T100000Z')), 400, 'body.line[5]', /no UID/],
        [calendar(vevent('UID:x', 'DTSTART:2027xx01T100000Z')), 400, 'body.line[7]', /DTSTART: expected a date/],
        [calendar(vevent('UID:x', 'DTSTART;TZID=Mars/Olympus:20270101T100000')), 400, 'body.line[7]', /Mars/],
        [calendar(vevent('UID:x', 'DTSTART:20270101T100000Z', 'DTEND:20261231T100000Z')), 400, 'body.line[8]',
          /DTEND is before DTSTART/],
        [calendar(vevent('UID:x', 'DTSTART:20270101T100000Z', `SUMMARY:${'x'.repeat(256)}`)), 400, 'body.line[8]',
          /SUMMARY: expected at most 255/],
        [calendar(vevent('UID:x', 'DTSTART:20270101T100000Z'), vevent('UID:x', 'DTSTART:20270102T100000Z')), 400,
          'body.line[9]', /already the UID of the VEVENT of line 5/]
      ]
      for (const [text, status, location, message] of cases) {
        const res = await expectImport(t, alice, space.id, status, text)
        assert.equal(res.errors[0].location, location, text)
        assert.match(res.errors[0].message, message, text)
      }
      const many = calendar(...Array.from({ length: 501 }, (_v, i) => vevent(`UID:e${i}`, 'DTSTART:20270101T100000Z')))
      const tooMany = await expectImport(t, alice, space.id, 400, many)
      assert.deepEqual([tooMany.errors[0].location, tooMany.errors[0].value], ['body', 501])
      const big = calendar(vevent('UID:big', 'DTSTART:20270101T100000Z', `DESCRIPTION:${'x'.repeat(1024 * 1024)}`))
      const tooLarge = await expectImport(t, alice, space.id, 413, big)
      assert.equal(tooLarge.errors[0].location, 'body')
      const latin1 = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${space.id}/calendar-import`,
        headers: { 'content-type': 'text/calendar; charset=iso-8859-1' },
        payload: story().text
      })
      assert.equal(latin1.statusCode, 415, latin1.body)
      const xml = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${space.id}/calendar-import`,
        headers: { 'content-type': 'application/xml' },
        payload: '<calendar/>'
      })
      assert.equal(xml.statusCode, 415, xml.body)
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 0)
    })

    void it('refuses a rule the series module refuses (FREQ=HOURLY, COUNT=100000, BYHOUR) with 400 naming the ' +
      'line of the RRULE and its message; the events before it are not stored', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const space = await createSpace(t, alice)
      for (const [rule, message] of [
        ['FREQ=HOURLY', /RRULE: FREQ: HOURLY repeats within a day/],
        ['FREQ=DAILY;COUNT=100000', /RRULE: COUNT/],
        ['FREQ=DAILY;BYHOUR=9,17', /RRULE: BYHOUR/],
        ['FREQ=DAILY;COUNT=501', /RRULE: COUNT/],
        ['FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30', /RRULE: the rule never yields a date/]
      ] as const) {
        const text = calendar(
          vevent('UID:fine', 'SUMMARY:Fine', 'DTSTART:20270101T100000Z'),
          vevent('UID:bad', 'SUMMARY:Bad', 'DTSTART;TZID=Europe/Berlin:20270105T100000', `RRULE:${rule}`)
        )
        const res = await expectImport(t, alice, space.id, 400, text)
        const line = lineOf(text, 'RRULE:')
        assert.equal(res.errors[0].location, `body.line[${line}]`, rule)
        assert.match(res.errors[0].message, new RegExp(`^line ${line}: `), rule)
        assert.match(res.errors[0].message, message, rule)
      }
      // three series of 400 dates: more events than an import makes
      const large = calendar(...[1, 2, 3].map(i =>
        vevent(`UID:large${i}`, `DTSTART:2027010${i}T100000Z`, 'RRULE:FREQ=DAILY;COUNT=400')))
      const tooMany = await expectImport(t, alice, space.id, 400, large)
      assert.deepEqual([tooMany.errors[0].location, tooMany.errors[0].value], ['body', 1200])
      assert.match(tooMany.errors[0].message, /at most 1000 events and occurrences/)
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 0)
      assert.deepEqual(await writtenTopics(t, tenant.id), [])
    })

    void it('who may import: 403 to a viewer and to a member who sees the space without space:events, 404 for a ' +
      "space the caller cannot see or another tenant's; updating another's imported event is 403 naming the UID; " +
      'nothing stored', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vic', ['viewer'])
      const stranger = await newTenant(t).user('mallory', ['admin'])
      const space = await createSpace(t, alice, { visibility: 40 })
      const s = story()
      assert.equal((await expectImport(t, bob, space.id, 404, s.text)).title, 'Not Found', 'a draft space of alice')
      await publish(t, alice, space.id)
      await expectStatus(t, bob, 'GET', `/api/v1/spaces/${space.id}`, 200)
      const refused = await expectImport(t, bob, space.id, 403, s.text)
      assert.match(refused.detail, /space:events/)
      await expectImport(t, viewer, space.id, 403, s.text)
      await expectImport(t, stranger, space.id, 404, s.text)
      await expectImport(t, alice, 999_999_999, 404, s.text)
      assert.equal((await getJson(t, alice, '/api/v1/events?size=100')).total, 0)

      await expectImport(t, alice, space.id, 200, s.text)
      const before = await spaceEvents(t, alice, space.id)
      // bob may now add events to the space, but not change alice's
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${space.id}/managers`, 201,
        { user_id: 'bob', permissions: ['space:events'] })
      const renamed = story({ kickoff: 'Taken over' })
      const notHis = await expectImport(t, bob, space.id, 403, renamed.text)
      assert.equal(notHis.errors[0].location, `body.line[${lineOf(renamed.text, 'BEGIN:VEVENT')}]`)
      assert.match(notHis.errors[0].message, /UID kickoff@example.org/)
      assert.deepEqual(await spaceEvents(t, alice, space.id), before, 'nothing changed')
      // a file of his own is his to import
      const own = await expectImport(t, bob, space.id, 200,
        calendar(vevent('UID:bob@example.org', 'SUMMARY:Bob', 'DTSTART:20270101T100000Z')))
      assert.equal(own.created, 1)
    })

    void it('an imported series can be split (scope=future); its UID stays with the first part', async () => {
      const alice = await newTenant(t).user('alice')
      const space = await createSpace(t, alice)
      const report = await expectImport(t, alice, space.id, 200, story().text)
      const anchorId = Number(report.items[1].event_id)
      const third = (await occurrencesOf(t, alice, anchorId))[2]
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${String(third?.id)}?scope=future`, 200, { title: 'Later' })
      const again = await expectImport(t, alice, space.id, 200, story().text)
      assert.equal(again.items[1].id, report.items[1].id, 'the first part keeps the UID')
    })

    void it('re-anchors a series whose DTSTART is more than 12 months back at its first date since, COUNT reduced; ' +
      'skips one that ended before', async () => {
      const alice = await newTenant(t).user('alice')
      const space = await createSpace(t, alice)
      const first = DateTime.now().setZone(BERLIN).minus({ years: 2 }).startOf('week').set({ hour: 10 })
      const text = calendar(
        vevent('UID:weekly@example.org', 'SUMMARY:Weekly', `DTSTART${berlin(first)}`,
          `DTEND${berlin(first.plus({ hours: 1 }))}`, 'RRULE:FREQ=WEEKLY;COUNT=150'),
        vevent('UID:over@example.org', 'SUMMARY:Over', `DTSTART${berlin(first)}`, 'RRULE:FREQ=DAILY;COUNT=3')
      )
      const report = await expectImport(t, alice, space.id, 200, text)
      const [weekly, over] = report.items as Json[]
      assert.deepEqual([weekly?.action, over?.action], ['create', 'skip'])
      assert.match(String(over?.reason), /more than 12 months in the past/)
      const earliest = DateTime.now().minus({ months: 12 })
      let k = 0
      while (first.plus({ weeks: k }) < earliest) k++
      assert.match(String(weekly?.notes.join(' ')),
        new RegExp(`${k} earlier dates are left out \\(COUNT 150 → ${150 - k}\\)`))
      const occurrences = (await getJson(t, alice,
        `/api/v1/events/${String(weekly?.event_id)}/series/occurrences?limit=1`)) as Json
      assert.equal(occurrences.total, 150 - k)
      assert.equal(local(occurrences.items[0].start_dt), at(first.plus({ weeks: k })))
      // the same file again: the series is as the file says
      const again = await expectImport(t, alice, space.id, 200, text)
      assert.deepEqual(again.items.map((i: Json) => i.action), ['unchanged', 'skip'])
    })

    void it('reads all-day events in X-WR-TIMEZONE, a floating time, and a TZID that is not IANA by its VTIMEZONE ' +
      '(the event in UTC, said in the notes)', async () => {
      const alice = await newTenant(t).user('alice')
      const space = await createSpace(t, alice)
      const windows = ['BEGIN:VTIMEZONE', 'TZID:W. Europe Standard Time',
        'BEGIN:STANDARD', 'DTSTART:16010101T030000', 'TZOFFSETFROM:+0200', 'TZOFFSETTO:+0100',
        'RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10', 'END:STANDARD',
        'BEGIN:DAYLIGHT', 'DTSTART:16010101T020000', 'TZOFFSETFROM:+0100', 'TZOFFSETTO:+0200',
        'RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3', 'END:DAYLIGHT', 'END:VTIMEZONE']
      const text = calendar(windows,
        vevent('UID:day@example.org', 'SUMMARY:Holiday', 'DTSTART;VALUE=DATE:20270401'),
        vevent('UID:trip@example.org', 'SUMMARY:Trip', 'DTSTART;VALUE=DATE:20270405', 'DTEND;VALUE=DATE:20270408'),
        vevent('UID:floating@example.org', 'SUMMARY:Floating', 'DTSTART:20270710T100000', 'DURATION:PT90M'),
        vevent('UID:summer@example.org', 'SUMMARY:Summer', 'DTSTART;TZID=W. Europe Standard Time:20270715T100000'),
        vevent('UID:winter@example.org', 'SUMMARY:Winter', 'DTSTART;TZID=W. Europe Standard Time:20270115T100000'),
        vevent('UID:mozilla@example.org', 'SUMMARY:Mozilla',
          'DTSTART;TZID=/mozilla.org/20050126_1/Europe/Berlin:20270115T100000')
      )
      const report = await expectImport(t, alice, space.id, 200, text)
      const byUid = new Map((report.items as Json[]).map(i => [i.uid, i]))
      const event = async (uid: string): Promise<Json> =>
        await getJson(t, alice, `/api/v1/events/${String(byUid.get(uid)?.id)}`)
      const times = (e: Json) => [e.start_dt, e.end_dt, e.timezone]
      assert.deepEqual(times(await event('day@example.org')),
        ['2027-03-31T22:00:00.000Z', '2027-04-01T22:00:00.000Z', BERLIN])
      assert.deepEqual(times(await event('trip@example.org')),
        ['2027-04-04T22:00:00.000Z', '2027-04-07T22:00:00.000Z', BERLIN])
      assert.deepEqual(times(await event('floating@example.org')),
        ['2027-07-10T08:00:00.000Z', '2027-07-10T09:30:00.000Z', BERLIN])
      assert.match(byUid.get('floating@example.org')?.notes.join(' '), /floating time/)
      assert.deepEqual(times(await event('summer@example.org')),
        ['2027-07-15T08:00:00.000Z', '2027-07-15T08:00:00.000Z', 'UTC'])
      assert.deepEqual(times(await event('winter@example.org')),
        ['2027-01-15T09:00:00.000Z', '2027-01-15T09:00:00.000Z', 'UTC'])
      assert.match(byUid.get('winter@example.org')?.notes.join(' '), /not an IANA time zone/)
      assert.deepEqual(times(await event('mozilla@example.org')),
        ['2027-01-15T09:00:00.000Z', '2027-01-15T09:00:00.000Z', BERLIN])
      assert.deepEqual(byUid.get('mozilla@example.org')?.notes, [])
    })
  })
}

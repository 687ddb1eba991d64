import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { pagesByCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { assertBadRequestAt, problemIssues } from '../../../test/helpers/problem.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { createEvent, type Json } from '../events/events.fixtures.ts'
import { addContact, insertAttendee } from '../attendees/attendees.fixtures.ts'
import { withSeries } from './series.fixtures.ts'
import { extendSeriesWindows } from './series.service.ts'

const BERLIN = 'Europe/Berlin'
const at = (iso: string, zone = BERLIN): string => DateTime.fromISO(iso, { zone }).toUTC().toISO() ?? ''
const local = (utc: string, zone = BERLIN): string =>
  DateTime.fromISO(utc, { zone: 'UTC' }).setZone(zone).toFormat("yyyy-MM-dd'T'HH:mm")

async function occurrencesOf (t: TestApp, token: string, eventId: number): Promise<Json[]> {
  return (await getJson(t, token, `/api/v1/events/${eventId}/series/occurrences?limit=200`)).items
}

const weeklyStandup = {
  title: 'Standup',
  start_dt: at('2027-03-15T09:00'),
  end_dt: at('2027-03-15T09:30'),
  timezone: BERLIN,
  series: { freq: 'weekly', interval: 1, repeat_days: [1, 3], ends_on: 'after_n', end_count: 10 }
}

for (const kind of databases()) {
  void describe(`${kind}: series`, () => {
    const t = useTestApp(kind)

    void it('the story: weekly Mon/Wed × 10 across DST, paged with attendee counts, moved, renamed, split, ' +
      'future deleted, published', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const created = await withSeries(t, alice, weeklyStandup)
      assert.equal(created.$schema, 'http://localhost:8080/schemas/EventWithSeries.json')
      assert.equal(created.event.series_index, 0)
      assert.equal(created.event.series_title, 'Standup')
      const occ = created.occurrences as Json[]
      const plainRead = await t.as(alice, { method: 'GET', url: `/api/v1/events/${String(occ[3]?.id)}` })
      assert.equal(plainRead.json().series_title, 'Standup', 'a plain event read names its series')
      const listed = await t.as(alice, { method: 'GET', url: '/api/v1/events?size=100' })
      assert.ok(
        (listed.json().items as Json[])
          .filter(e => e.series_id === created.event.series_id)
          .every(e => e.series_title === 'Standup')
      )
      assert.deepEqual(
        occ.map(o => local(o.start_dt)),
        [
          '2027-03-15T09:00',
          '2027-03-17T09:00',
          '2027-03-22T09:00',
          '2027-03-24T09:00',
          '2027-03-29T09:00',
          '2027-03-31T09:00',
          '2027-04-05T09:00',
          '2027-04-07T09:00',
          '2027-04-12T09:00',
          '2027-04-14T09:00'
        ]
      )
      // the wall clock is kept, so the UTC hour moves with summer time (28 March 2027)
      assert.equal(occ[3]?.start_dt, '2027-03-24T08:00:00.000Z')
      assert.equal(occ[4]?.start_dt, '2027-03-29T07:00:00.000Z')
      assert.ok(
        occ.every(
          o => local(o.end_dt).endsWith('09:30') && o.series_id === created.event.series_id && o.status === 'draft'
        )
      )
      assert.deepEqual(
        occ.map(o => o.series_index),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
      )
      const anchorId = created.event.id as number
      const ids = occ.map(o => o.id as number)

      // attendees: two on occurrences, one for the whole series
      const ann = await addContact(t, alice, 'ann@example.test')
      const bob = await addContact(t, alice, 'bob@example.test')
      await insertAttendee(t, tenant.id, { event_id: ids[1], contact_id: ann, status: 'confirmed' })
      await insertAttendee(t, tenant.id, { event_id: ids[2], contact_id: ann, status: 'invited' })
      await insertAttendee(t, tenant.id, { series_id: created.event.series_id, contact_id: bob, status: 'tentative' })

      const page1 = await getJson(t, alice, `/api/v1/events/${ids[5]}/series?page=1&limit=4`)
      assert.equal(page1.$schema, 'http://localhost:8080/schemas/SeriesWithOccurrences.json')
      assert.deepEqual(
        { total: page1.total, page: page1.page, limit: page1.limit, total_pages: page1.total_pages },
        { total: 10, page: 1, limit: 4, total_pages: 3 }
      )
      assert.deepEqual(
        page1.occurrences.map((o: Json) => o.id),
        ids.slice(0, 4)
      )
      assert.deepEqual(page1.attendee_counts, {
        invited: 1,
        confirmed: 1,
        declined: 0,
        tentative: 1,
        checked_in: 0,
        pending: 0,
        waitlisted: 0,
        no_show: 0,
        awaiting_confirmation: 0
      })
      assert.equal(page1.total_attendees, 2)
      const s = page1.series
      assert.deepEqual(
        {
          id: s.id,
          title: s.title,
          freq: s.freq,
          interval: s.interval,
          repeat_days: s.repeat_days,
          ends_on: s.ends_on,
          end_count: s.end_count,
          duration: s.duration,
          timezone: s.timezone,
          status: s.status
        },
        {
          id: created.event.series_id,
          title: 'Standup',
          freq: 'weekly',
          interval: 1,
          repeat_days: [1, 3],
          ends_on: 'after_n',
          end_count: 10,
          duration: '00:30:00',
          timezone: BERLIN,
          status: 'draft'
        }
      )
      assert.equal('invite_token_hash' in s, false)
      const page3 = await getJson(t, alice, `/api/v1/events/${anchorId}/series/occurrences?page=3&limit=4`)
      assert.deepEqual(
        { ...page3, items: page3.items.map((o: Json) => o.id) },
        { $schema: page3.$schema, items: ids.slice(8), page: 3, limit: 4, total: 10, total_pages: 3, next_cursor: null }
      )
      // the same pages by cursor
      const pages = await pagesByCursor(t, alice, `/api/v1/events/${anchorId}/series/occurrences?limit=4`)
      assert.deepEqual(pages.map(p => p.page), pages.map((_, i) => i + 1))
      assert.deepEqual(pages.flatMap(p => (p.items as Json[]).map(o => o.id)), ids)
      const refused = await t.as(alice, {
        method: 'GET',
        url:
          `/api/v1/events/${anchorId}/series/occurrences?limit=4&cursor=` +
          `${encodeURIComponent(Buffer.from('{"k":[],"p":2,"s":"x"}').toString('base64url'))}`
      })
      assert.equal(refused.statusCode, 400, refused.body)

      // move one occurrence (this only): own times and title
      const moved = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[2]}?scope=this`,
        payload: { title: 'Standup (moved)', start_dt: at('2027-03-22T11:00'), end_dt: at('2027-03-22T11:30') }
      })
      assert.equal(moved.statusCode, 200, moved.body)
      assert.equal(moved.json().title_override, 'Standup (moved)')
      assert.equal(local(moved.json().start_dt), '2027-03-22T11:00')

      // rename the series: cascades, except to the overridden occurrence
      const renamed = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${anchorId}/series`,
        payload: { title: 'Daily sync' }
      })
      assert.equal(renamed.statusCode, 200, renamed.body)
      assert.equal(renamed.json().title, 'Daily sync')
      assert.deepEqual(renamed.json().removed_occurrences, [])
      const items = await occurrencesOf(t, alice, anchorId)
      assert.deepEqual(
        items.map(o => o.title),
        ['Daily sync', 'Daily sync', 'Standup (moved)', ...Array(7).fill('Daily sync')]
      )
      assert.ok(items.every(o => o.series_title === 'Daily sync'))
      assert.equal(local(items[2]?.start_dt), '2027-03-22T11:00')

      // split from 5 April: this and the following move to 10:00
      const split = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[6]}?scope=future`,
        payload: { start_dt: at('2027-04-05T10:00'), end_dt: at('2027-04-05T10:30') }
      })
      assert.equal(split.statusCode, 200, split.body)
      const newSeriesId = split.json().series_id as number
      assert.notEqual(newSeriesId, created.event.series_id)
      assert.equal(split.json().series_index, 0)
      const before = await getJson(t, alice, `/api/v1/events/${anchorId}/series?limit=50`)
      assert.equal(before.total, 6)
      assert.equal(before.series.end_count, 6)
      assert.deepEqual(
        before.occurrences.map((o: Json) => local(o.start_dt)),
        [
          '2027-03-15T09:00', '2027-03-17T09:00', '2027-03-22T11:00',
          '2027-03-24T09:00', '2027-03-29T09:00', '2027-03-31T09:00'
        ]
      )
      const after = await getJson(t, alice, `/api/v1/events/${ids[6]}/series`)
      assert.equal(after.series.id, newSeriesId)
      assert.equal(after.series.end_count, 4)
      assert.deepEqual(
        after.occurrences.map((o: Json) => local(o.start_dt)),
        ['2027-04-05T10:00', '2027-04-07T10:00', '2027-04-12T10:00', '2027-04-14T10:00']
      )
      assert.deepEqual(
        after.occurrences.map((o: Json) => o.id),
        ids.slice(6)
      )
      assert.ok(after.occurrences.every((o: Json) => o.title === 'Daily sync' && o.series_title === 'Daily sync'))
      assert.equal(after.attendee_counts.tentative, 1, 'the series-level attendee follows the split')

      // delete the future from 12 April
      const del = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${ids[8]}/series?scope=future` })
      assert.equal(del.statusCode, 204, del.body)
      const trimmed = await getJson(t, alice, `/api/v1/events/${ids[6]}/series`)
      assert.deepEqual(
        trimmed.occurrences.map((o: Json) => o.id),
        ids.slice(6, 8)
      )
      assert.equal(trimmed.series.end_count, 2)
      await expectStatus(t, alice, 'GET', `/api/v1/events/${ids[9]}`, 404)

      // publish the first series
      const pub = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${ids[3]}/series/publish`,
        payload: { notify: true, channels: ['email'], message: 'Published' }
      })
      assert.equal(pub.statusCode, 204, pub.body)
      const published = await getJson(t, alice, `/api/v1/events/${anchorId}/series`)
      assert.equal(published.series.status, 'published')
      assert.equal(published.series.version, 1)
      assert.ok(
        published.occurrences.every((o: Json) => o.status === 'published' && o.version === 1 && o.published_at !== null)
      )
      assert.equal(
        (await getJson(t, alice, `/api/v1/events/${ids[6]}/series`)).series.status,
        'draft',
        'the split-off series is its own'
      )
      const notes = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx.selectFrom('notification_outbox').select(['channel', 'body']).where('tenant_id', '=', tenant.id).execute()
      )
      assert.deepEqual(notes, [{ channel: 'email', body: 'Published' }])

      // calendar and list show occurrences like any event
      const cal = await getJson(
        t,
        alice,
        '/api/v1/events/calendar?start_date=2027-03-15&end_date=2027-03-21&timezone=Europe/Berlin'
      )
      assert.deepEqual(
        cal.items.map((e: Json) => e.id),
        ids.slice(0, 2)
      )
      const list = await getJson(t, alice, '/api/v1/events?size=100&sort_by=start_dt&sort_dir=asc')
      assert.deepEqual(
        list.items.map((e: Json) => e.id),
        [...ids.slice(0, 8)]
      )
    })

    void it('counts attendees by status over every live occurrence (not only the page) and the series-level rows; ' +
      'each contact once', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const made = await withSeries(t, alice, { ...weeklyStandup, series: { ...weeklyStandup.series, end_count: 30 } })
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      const other = await withSeries(t, alice, { ...weeklyStandup, title: 'Other' })
      const contacts = await Promise.all(
        Array.from({ length: 7 }, async (_, i) => await addContact(t, alice, `c${i}@example.test`))
      )
      const statuses = ['invited', 'confirmed', 'declined', 'tentative', 'checked_in'] as const
      const expected = {
        invited: 0,
        confirmed: 0,
        declined: 0,
        tentative: 0,
        checked_in: 0,
        pending: 0,
        waitlisted: 0,
        no_show: 0,
        awaiting_confirmation: 0
      }
      for (const [i, id] of ids.entries()) {
        const status = statuses[i % 5] ?? 'invited'
        const res = await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${id}/attendees/bulk`,
          payload: { contact_ids: [contacts[i % 6], contacts[(i + 1) % 6]], status }
        })
        assert.equal(res.statusCode, 204, res.body)
        // occurrence 7 is deleted below: its attendees no longer count
        if (i !== 7) expected[status] += 2
      }
      await insertAttendee(t, tenant.id, {
        series_id: made.event.series_id,
        contact_id: contacts[0] ?? '',
        status: 'tentative'
      })
      expected.tentative += 1
      // attendees of another series count there only
      await insertAttendee(t, tenant.id, {
        event_id: other.event.id,
        contact_id: contacts[6] ?? '',
        status: 'confirmed'
      })
      await insertAttendee(t, tenant.id, {
        series_id: other.event.series_id,
        contact_id: contacts[6] ?? '',
        status: 'declined'
      })
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${ids[7]}/series?scope=this`, 204)

      const page = await getJson(t, alice, `/api/v1/events/${ids[12]}/series?page=2&limit=5`)
      assert.equal(page.occurrences.length, 5)
      assert.deepEqual(page.attendee_counts, expected)
      assert.deepEqual(expected, {
        invited: 12,
        confirmed: 12,
        declined: 10,
        tentative: 13,
        checked_in: 12,
        pending: 0,
        waitlisted: 0,
        no_show: 0,
        awaiting_confirmation: 0
      })
      assert.equal(page.total_attendees, 6)
      const elsewhere = await getJson(t, alice, `/api/v1/events/${String(other.event.id)}/series`)
      assert.deepEqual(elsewhere.attendee_counts, {
        invited: 0,
        confirmed: 1,
        declined: 1,
        tentative: 0,
        checked_in: 0,
        pending: 0,
        waitlisted: 0,
        no_show: 0,
        awaiting_confirmation: 0
      })
      assert.equal(elsewhere.total_attendees, 1)
    })

    void it('refuses every bad rule with a 400 naming the field, and creates nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const cases: Array<[Json, string]> = [
        [{ series: { ...weeklyStandup.series, repeat_days: undefined } }, 'body.series.repeat_days'],
        [{ series: { ...weeklyStandup.series, repeat_days: [] } }, 'body.series.repeat_days'],
        [{ series: { ...weeklyStandup.series, repeat_days: [8] } }, 'body.series.repeat_days[0]'],
        [{ series: { ...weeklyStandup.series, freq: 'yearly' } }, 'body.series.freq'],
        [{ series: { ...weeklyStandup.series, interval: 0 } }, 'body.series.interval'],
        [{ series: { ...weeklyStandup.series, end_count: undefined } }, 'body.series.end_count'],
        [{ series: { ...weeklyStandup.series, end_count: 501 } }, 'body.series.end_count'],
        [{ series: { freq: 'daily', ends_on: 'on_date' } }, 'body.series.end_date'],
        [{ series: { freq: 'daily', ends_on: 'on_date', end_date: '2027-03-01T00:00:00Z' } }, 'body.series.end_date'],
        [{ series: { freq: 'daily', ends_on: 'on_date', end_date: '2029-12-31T00:00:00Z' } }, 'body.series.end_date'],
        [{ series: { freq: 'custom', interval: 7, repeat_days: [2], ends_on: 'never' } }, 'body.series.repeat_days'],
        [{ series: { freq: 'daily', ends_on: 'sometimes' } }, 'body.series.ends_on'],
        [{ series: { freq: 'monthly', interval: 366, ends_on: 'after_n', end_count: 500 } }, 'body.series.end_count'],
        [
          { start_dt: '9500-01-01T00:00:00Z', end_dt: '9500-01-01T01:00:00Z', series: { freq: 'daily' } },
          'body.start_dt'
        ],
        [{ end_dt: '2029-01-01T00:00:00Z' }, 'body.end_dt'],
        [{ start_dt: undefined, end_dt: undefined }, 'body.start_dt'],
        [{ timezone: 'Mars/Olympus' }, 'body.timezone']
      ]
      for (const [patch, location] of cases) {
        const res = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/events/with-series',
          payload: { ...weeklyStandup, ...patch }
        })
        assertBadRequestAt(res, location)
      }
      const list = await getJson(t, alice, '/api/v1/events')
      assert.equal(list.total, 0)

      const plain = await withSeries(t, alice, { title: 'One-off', start_dt: at('2027-05-01T10:00') })
      assert.deepEqual(plain.occurrences, [])
      assert.equal(plain.event.series_id, null)
      const id = plain.event.id as number
      assertBadRequestAt(
        await t.as(alice, { method: 'POST', url: `/api/v1/events/${id}/series`, payload: { freq: 'weekly' } }),
        'body.repeat_days'
      )
      assertBadRequestAt(
        await t.as(alice, { method: 'GET', url: `/api/v1/events/${id}/series?limit=201` }),
        'query.limit'
      )
      await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/series`, 404)
      const made = await withSeries(t, alice, weeklyStandup)
      assertBadRequestAt(
        await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${made.event.id}/series` }),
        'query.scope'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${made.event.id}/series`,
          payload: { ends_on: 'after_n', end_count: null }
        }),
        'body.end_count'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${made.event.id}/series`,
          payload: { end_dt: at('2027-03-15T08:00') }
        }),
        'body.end_dt'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${made.event.id}?scope=sometimes`,
          payload: { title: 'x' }
        }),
        'query.scope'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${made.event.id}/series`,
          payload: { metadata: { big: 'x'.repeat(17_000) } }
        }),
        'body.metadata'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${made.event.id}/series`,
          payload: { metadata: { a: { b: 'x\ud800' } } }
        }),
        'body.metadata.a.b'
      )
      const still = await getJson(t, alice, `/api/v1/events/${made.event.id}/series`)
      assert.equal(still.total, 10)
      assert.equal(still.series.revision, 1, 'the refused writes changed nothing')
    })

    void it('turns an existing event into a series; ends_on never keeps a rolling window that ' +
      'the job extends', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, {
        title: 'Tuesday club',
        start_dt: at('2027-01-05T19:00', 'America/New_York'),
        end_dt: at('2027-01-05T21:00', 'America/New_York'),
        timezone: 'America/New_York'
      })
      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${e.id}/series`,
        payload: { freq: 'weekly', interval: 1, repeat_days: [2], ends_on: 'never' }
      })
      assert.equal(res.statusCode, 201, res.body)
      const occ = res.json() as Json[]
      assert.equal(occ[0]?.id, e.id)
      assert.equal(occ[0]?.series_index, 0)
      // window: 12 months from the anchor (it lies in the future)
      assert.equal(occ.length, 53)
      assert.ok(
        occ.every(o => local(o.start_dt, 'America/New_York').endsWith('T19:00')),
        'kept at 19:00 New York across both changes'
      )
      assert.equal(occ[10]?.start_dt, '2027-03-16T23:00:00.000Z')
      const again = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${e.id}/series`,
        payload: { freq: 'daily' }
      })
      assert.equal(again.statusCode, 409, again.body)
      const noStart = await createEvent(t, alice, { title: 'No date' })
      assertBadRequestAt(
        await t.as(alice, { method: 'POST', url: `/api/v1/events/${noStart.id}/series`, payload: { freq: 'daily' } }),
        'path.id'
      )

      const series = (await getJson(t, alice, `/api/v1/events/${e.id}/series`)).series
      assert.equal(series.window_end, '2028-01-06T00:00:00.000Z', '12 months after the anchor')
      const created = await extendSeriesWindows(t.ctx.db, new Date('2027-03-01T00:00:00Z'))
      // Tuesdays 11 January … 22 February 2028 (29 February at 19:00 New York is 1 March 00:00 UTC, the window end)
      assert.equal(created, 7)
      const extended = await getJson(t, alice, `/api/v1/events/${e.id}/series?limit=200`)
      assert.equal(extended.series.window_end, '2028-03-01T00:00:00.000Z')
      assert.equal(extended.total, 60)
      const last = extended.occurrences.at(-1) as Json
      assert.equal(local(last.start_dt, 'America/New_York'), '2028-02-22T19:00')
      assert.equal(last.series_index, 59)
      assert.equal(await extendSeriesWindows(t.ctx.db, new Date('2027-03-01T00:00:00Z')), 0, 'nothing due twice')
    })

    void it('a rule change regenerates future occurrences, ' +
      'keeps attendees of kept ones and reports the removed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const made = await withSeries(t, alice, { ...weeklyStandup, series: { ...weeklyStandup.series, end_count: 6 } })
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      const ann = await addContact(t, alice, 'ann@example.test')
      // Monday 22 March, Wednesday 24 March
      await insertAttendee(t, tenant.id, { event_id: ids[2], contact_id: ann, status: 'confirmed' })
      await insertAttendee(t, tenant.id, { event_id: ids[3], contact_id: ann, status: 'declined' })
      const res = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[0]}/series`,
        payload: { repeat_days: [1] }
      })
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      assert.equal(body.$schema, 'http://localhost:8080/schemas/EventSeriesUpdate.json')
      assert.deepEqual(
        body.removed_occurrences.map((r: Json) => r.id),
        [ids[1], ids[3], ids[5]]
      )
      assert.equal(body.added_occurrences, 3)
      assert.deepEqual(body.repeat_days, [1])
      const after = await getJson(t, alice, `/api/v1/events/${ids[0]}/series`)
      assert.deepEqual(
        after.occurrences.map((o: Json) => local(o.start_dt)),
        [
          '2027-03-15T09:00', '2027-03-22T09:00', '2027-03-29T09:00',
          '2027-04-05T09:00', '2027-04-12T09:00', '2027-04-19T09:00'
        ]
      )
      assert.deepEqual(
        after.occurrences.slice(0, 3).map((o: Json) => o.id),
        [ids[0], ids[2], ids[4]]
      )
      assert.deepEqual(after.attendee_counts, {
        invited: 0,
        confirmed: 1,
        declined: 0,
        tentative: 0,
        checked_in: 0,
        pending: 0,
        waitlisted: 0,
        no_show: 0,
        awaiting_confirmation: 0
      })
      await expectStatus(t, alice, 'GET', `/api/v1/events/${ids[3]}`, 404)

      // moving the time of day keeps every row (and its id)
      const later = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[0]}/series`,
        payload: { start_dt: at('2027-03-15T10:15'), end_dt: at('2027-03-15T11:00') }
      })
      assert.equal(later.statusCode, 200, later.body)
      assert.deepEqual(later.json().removed_occurrences, [])
      assert.equal(later.json().duration, '00:45:00')
      const moved = await occurrencesOf(t, alice, ids[0] ?? 0)
      assert.deepEqual(
        moved.map(o => o.id),
        after.occurrences.map((o: Json) => o.id)
      )
      assert.ok(moved.every(o => local(o.start_dt).endsWith('10:15') && local(o.end_dt).endsWith('11:00')))
    })

    void it('scope this/all on PATCH, delete this (not brought back) and all, metadata overrides', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const made = await withSeries(t, alice, {
        ...weeklyStandup,
        metadata: { room: 'A' },
        series: { freq: 'daily', interval: 2, ends_on: 'after_n', end_count: 5 }
      })
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      const mine = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[1]}?scope=this`,
        payload: { description: 'own', metadata: { room: 'B' } }
      })
      assert.equal(mine.statusCode, 200, mine.body)
      assert.deepEqual(mine.json().metadata_override, { room: 'B' })
      const meta = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[0]}/series`,
        payload: { metadata: { floor: 2 }, description: 'shared' }
      })
      assert.equal(meta.statusCode, 200, meta.body)
      let items = await occurrencesOf(t, alice, ids[0] ?? 0)
      assert.deepEqual(items[1]?.metadata, { room: 'B', floor: 2 })
      assert.deepEqual(items[2]?.metadata, { room: 'A', floor: 2 })
      assert.deepEqual(items.map(o => o.description), ['shared', 'own', 'shared', 'shared', 'shared'])

      const all = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[3]}?scope=all`,
        payload: { description: 'everyone', start_dt: at('2027-03-21T09:30') }
      })
      assert.equal(all.statusCode, 200, all.body)
      items = await occurrencesOf(t, alice, ids[0] ?? 0)
      assert.deepEqual(items.map(o => o.description), Array(5).fill('everyone'))
      assert.deepEqual(
        items.map(o => local(o.start_dt)),
        ['2027-03-15T09:30', '2027-03-17T09:30', '2027-03-19T09:30', '2027-03-21T09:30', '2027-03-23T09:30']
      )

      const one = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${ids[2]}/series?scope=this` })
      assert.equal(one.statusCode, 204, one.body)
      const grown = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[0]}/series`,
        payload: { end_count: 6 }
      })
      assert.equal(grown.statusCode, 200, grown.body)
      assert.equal(grown.json().exdates.length, 1)
      items = await occurrencesOf(t, alice, ids[0] ?? 0)
      assert.deepEqual(
        items.map(o => local(o.start_dt).slice(0, 10)),
        ['2027-03-15', '2027-03-17', '2027-03-21', '2027-03-23', '2027-03-25']
      )

      const plain = await createEvent(t, alice, { title: 'Alone' })
      const scoped = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${plain.id}?scope=all`,
        payload: { title: 'Still alone' }
      })
      assert.equal(scoped.statusCode, 200, scoped.body)
      assert.equal(scoped.json().title, 'Still alone')

      const gone = await t.as(alice, { method: 'DELETE', url: `/api/v1/events/${ids[3]}/series?scope=all` })
      assert.equal(gone.statusCode, 204, gone.body)
      await expectStatus(t, alice, 'GET', `/api/v1/events/${ids[0]}/series`, 404)
      assert.equal((await getJson(t, alice, '/api/v1/events')).total, 1)
    })

    void it('random rules: 201 within the bounds (local time kept, at most 500 rows) ' +
      'or a 400 naming a field, never a 5xx', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'UTC', 'Mars/Olympus']
      const bodyArb = fc.record({
        zone: fc.constantFrom(...zones, 'Europe/Berlin', 'America/New_York'),
        day: fc.integer({ min: 0, max: 2000 }),
        hour: fc.integer({ min: 0, max: 23 }),
        minutes: fc.integer({ min: -10, max: 3 * 24 * 60 }),
        series: fc.record(
          {
            freq: fc.constantFrom('daily', 'weekly', 'monthly', 'custom', 'daily', 'weekly', 'hourly'),
            interval: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: -1, max: 400 })),
            repeat_days: fc.option(
              fc.oneof(
                fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 7 }),
                fc.uniqueArray(fc.integer({ min: 0, max: 8 }), { maxLength: 8 })
              ),
              { nil: undefined }
            ),
            ends_on: fc.constantFrom('never', 'on_date', 'after_n'),
            end_count: fc.option(fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 600 })), {
              nil: undefined
            }),
            end_days: fc.option(fc.integer({ min: -10, max: 5000 }), { nil: undefined })
          },
          { requiredKeys: ['freq'] }
        )
      })
      let made = 0
      await fc.assert(
        fc.asyncProperty(bodyArb, async b => {
          const zone = b.zone === 'Mars/Olympus' ? 'UTC' : b.zone
          const start = DateTime.fromObject({ year: 2027, month: 1, day: 1, hour: b.hour }, { zone }).plus({
            days: b.day
          })
          const { end_days: endDays, ...rule } = b.series
          const payload = {
            title: 'Random',
            start_dt: start.toUTC().toISO(),
            end_dt: start.plus({ minutes: b.minutes }).toUTC().toISO(),
            timezone: b.zone,
            series: {
              ...rule,
              ...(endDays !== undefined ? { end_date: start.plus({ days: endDays }).toUTC().toISO() } : {})
            }
          }
          const res = await t.as(alice, { method: 'POST', url: '/api/v1/events/with-series', payload })
          if (res.statusCode === 400) {
            assert.deepEqual(problemIssues(res), [])
            return
          }
          assert.equal(res.statusCode, 201, res.body)
          made++
          const occ = res.json().occurrences as Json[]
          assert.ok(occ.length >= 1 && occ.length <= 500)
          const time = DateTime.fromISO(occ[0]?.start_dt, { zone }).toFormat('HH:mm')
          for (const o of occ) {
            const l = DateTime.fromISO(o.start_dt, { zone })
            // a wall time inside a spring-forward gap moves forward by the gap
            if (l.toFormat('HH:mm') !== time) {
              assert.equal(
                DateTime.fromISO(o.start_dt).minus({ hours: 1 }).setZone(zone).toFormat('HH:mm'),
                time,
                o.start_dt
              )
            }
          }
        }),
        { numRuns: 60, seed: 20_271_115 }
      )
      assert.ok(made >= 5, `only ${made} series made`)
    })

    void it('invites a series manager who, once accepted, manages every occurrence; ' +
      'other tenants and viewers are refused', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const made = await withSeries(t, alice, { ...weeklyStandup, visibility: 10 })
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      await expectStatus(t, bob, 'GET', `/api/v1/events/${ids[4]}`, 404)

      const res = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${ids[3]}/series/manager`,
        payload: { email: 'bob@example.test' }
      })
      assert.equal(res.statusCode, 200, res.body)
      const s = res.json()
      assert.equal(s.series_manager_status, 'pending')
      assert.equal(s.series_manager_invited_email, 'bob@example.test')
      assert.equal(s.series_manager_invited_by, 'alice')
      const token = s.series_manager_invite_token as string
      assert.match(token, /^[A-Za-z0-9_-]{43}$/)
      const days = (Date.parse(s.series_manager_expires_at) - Date.parse(s.series_manager_invited_at)) / 86_400_000
      assert.equal(days, 7)
      const rows = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx.selectFrom('event_managers').selectAll().where('tenant_id', '=', tenant.id).execute()
      )
      assert.equal(rows.length, 1)
      assert.deepEqual(
        {
          event_id: rows[0]?.event_id,
          series_id: rows[0]?.series_id,
          status: rows[0]?.status,
          hash: rows[0]?.invite_token_hash
        },
        {
          event_id: ids[0],
          series_id: made.event.series_id,
          status: 'pending',
          hash: crypto.createHash('sha256').update(token).digest('hex')
        }
      )
      const read = await getJson(t, alice, `/api/v1/events/${ids[0]}/series`)
      assert.equal(read.series.series_manager_invite_token, undefined)

      // the accept flow of the event managers activates the row
      await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx
          .updateTable('event_managers')
          .set({ status: 'active', user_id: 'bob', accepted_at: new Date() })
          .where('tenant_id', '=', tenant.id)
          .execute()
      )
      assert.equal((await getJson(t, bob, `/api/v1/events/${ids[7]}/series`)).series.series_manager_status, 'active')
      const edit = await t.as(bob, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[7]}?scope=this`,
        payload: { title: 'Bob was here' }
      })
      assert.equal(edit.statusCode, 200, edit.body)

      // a split copies the series manager to the new series
      const split = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[5]}?scope=future`,
        payload: { title: 'Later standup' }
      })
      assert.equal(split.statusCode, 200, split.body)
      assert.notEqual(split.json().series_id, made.event.series_id)
      const later = await t.as(bob, {
        method: 'PATCH',
        url: `/api/v1/events/${ids[8]}?scope=this`,
        payload: { description: 'Bob again' }
      })
      assert.equal(later.statusCode, 200, later.body)
      assert.equal(later.json().title, 'Later standup')

      const bare = await t.as(bob, { method: 'POST', url: `/api/v1/events/${ids[2]}/series/publish` })
      assert.equal(bare.statusCode, 204, bare.body)
      assert.ok((await occurrencesOf(t, alice, ids[0] ?? 0)).every(o => o.status === 'published'))

      const viewer = await tenant.user('vera', ['viewer'])
      await expectStatus(t, viewer, 'POST', '/api/v1/events/with-series', 403, weeklyStandup)
      const stranger = await newTenant(t).user('mallory')
      await expectStatuses(t, [
        [stranger, 'GET', `/api/v1/events/${ids[0]}/series`, 404],
        [stranger, 'DELETE', `/api/v1/events/${ids[0]}/series?scope=all`, 404]
      ])
      assert.equal((await getJson(t, alice, `/api/v1/events/${ids[0]}/series`)).total, 5)
    })
  })
}

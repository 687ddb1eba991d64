/**
 * Attack tests of the series routes: work bounded whatever the rule and dates (no series from
 * 1700, at most MAX_CREATE_PER_REQUEST rows per request and per window run, a page of
 * occurrences in the answer), no storage key taken from a client or copied between events, and
 * series-wide changes only with series-level rights. Every effect is checked through later reads.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DateTime } from 'luxon'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { assertBadRequestAt } from '../../../test/helpers/problem.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { PNG, uploadExpecting } from '../event-content/event-content.cover.fixtures.ts'
import { addManager, createEvent, type Json } from '../events/events.fixtures.ts'
import { withSeries } from './series.fixtures.ts'
import { extendSeriesWindows } from './series.service.ts'

/** Every occurrence of the series of `eventId` as `token` sees them (all pages). */
async function allOccurrences (t: TestApp, token: string, eventId: number): Promise<Json[]> {
  const out: Json[] = []
  for (let page = 1; ; page++) {
    const body = await getJson(t, token, `/api/v1/events/${eventId}/series/occurrences?limit=200&page=${page}`)
    out.push(...body.items)
    if (page >= body.total_pages) return out
  }
}

const weekly = (start: string) => ({
  title: 'Standup',
  start_dt: start,
  end_dt: DateTime.fromISO(start).plus({ minutes: 30 }).toUTC().toISO(),
  timezone: 'UTC',
  series: { freq: 'weekly', interval: 1, repeat_days: [1, 3], ends_on: 'after_n', end_count: 6 }
})
const NEXT_YEAR = '2027-03-15T09:00:00.000Z'

for (const kind of databases()) {
  void describe(`${kind}: series security`, () => {
    const t = useTestApp(kind)

    void it('refuses series anchored far in the past (with-series, convert, patch, scope all) ' +
      'and writes nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const old = { title: 'Old', start_dt: '1700-01-01T09:00:00Z', end_dt: '1700-01-01T10:00:00Z', timezone: 'UTC' }
      assertBadRequestAt(
        await t.as(alice, {
          method: 'POST',
          url: '/api/v1/events/with-series',
          payload: { ...old, series: { freq: 'daily', ends_on: 'after_n', end_count: 5 } }
        }),
        'body.start_dt'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'POST',
          url: '/api/v1/events/with-series',
          payload: { ...old, series: { freq: 'daily', ends_on: 'never' } }
        }),
        'body.start_dt'
      )
      assert.equal((await getJson(t, alice, '/api/v1/events')).total, 0, 'nothing was created')

      const plain = await createEvent(t, alice, old)
      assertBadRequestAt(
        await t.as(alice, {
          method: 'POST',
          url: `/api/v1/events/${plain.id}/series`,
          payload: { freq: 'daily', ends_on: 'never' }
        }),
        'path.id'
      )
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${plain.id}/series` })).statusCode,
        404,
        'no series made'
      )

      const anchor = (await withSeries(t, alice, { ...weekly(NEXT_YEAR), series: { freq: 'daily', ends_on: 'never' } }))
        .event.id as number
      const before = await getJson(t, alice, `/api/v1/events/${anchor}/series`)
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${anchor}/series`,
          payload: { start_dt: '1700-01-01T09:00:00Z', end_dt: '1700-01-01T09:30:00Z' }
        }),
        'body.start_dt'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${anchor}?scope=all`,
          payload: { start_dt: '1700-01-01T09:00:00Z', end_dt: '1700-01-01T09:30:00Z' }
        }),
        'body.start_dt'
      )
      const after = await getJson(t, alice, `/api/v1/events/${anchor}/series`)
      assert.equal(after.series.revision, before.series.revision)
      assert.equal(after.series.start_dt, before.series.start_dt)
      assert.equal(after.total, before.total)
    })

    void it('a never-ending series creates at most 500 rows per request and per window run, ' +
      'and answers a page with the total', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const now = new Date()
      const start = DateTime.fromJSDate(now, { zone: 'UTC' }).minus({ months: 11 }).startOf('day').plus({ hours: 9 })
      const made = await withSeries(t, alice, {
        title: 'Daily',
        start_dt: start.toISO(),
        end_dt: start.plus({ minutes: 15 }).toISO(),
        timezone: 'UTC',
        series: { freq: 'daily', ends_on: 'never' }
      })
      // 11 months back and 12 ahead would be some 700 daily rows: 500 are made, the window ends before the 501st
      assert.equal(made.total, 500)
      assert.equal(made.occurrences.length, 200, 'the answer holds one page')
      assert.deepEqual(
        { page: made.page, limit: made.limit, total_pages: made.total_pages },
        { page: 1, limit: 200, total_pages: 3 }
      )
      assert.equal(made.occurrences[0].id, made.event.id)
      const anchor = made.event.id as number
      let all = await allOccurrences(t, alice, anchor)
      assert.equal(all.length, 500, 'rows created, read back')
      assert.deepEqual(
        made.occurrences.map((o: Json) => o.id),
        all.slice(0, 200).map(o => o.id)
      )
      let series = (await getJson(t, alice, `/api/v1/events/${anchor}/series`)).series
      assert.equal(series.window_end, start.plus({ days: 500 }).toUTC().toISO(), 'the window ends where the rows end')

      // converting an event answers a page too, with the total and a link to the rest
      const e = await createEvent(t, alice, {
        title: 'Converted',
        start_dt: start.toISO(),
        end_dt: start.plus({ minutes: 15 }).toISO(),
        timezone: 'UTC'
      })
      const converted = await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/series`, 201, {
        freq: 'daily',
        ends_on: 'never'
      })
      assert.equal((converted.json() as Json[]).length, 200)
      assert.equal(converted.headers['x-total-count'], '500')
      assert.equal(converted.headers.link, `</api/v1/events/${e.id}/series/occurrences?page=2&limit=200>; rel="next"`)
      assert.equal((await allOccurrences(t, alice, e.id)).length, 500)

      // the window job catches up, 500 rows at most per series and run
      await extendSeriesWindows(t.ctx.db, now)
      all = await allOccurrences(t, alice, anchor)
      const windowEnd = DateTime.fromJSDate(now, { zone: 'UTC' }).plus({ months: 12 })
      assert.equal(all.length, Math.ceil(windowEnd.diff(start, 'days').days), 'one row a day up to now + 12 months')
      series = (await getJson(t, alice, `/api/v1/events/${anchor}/series`)).series
      assert.equal(series.window_end, windowEnd.toISO())
      const far = DateTime.fromJSDate(now, { zone: 'UTC' }).plus({ years: 4 }).toJSDate()
      await extendSeriesWindows(t.ctx.db, far)
      const grown = await allOccurrences(t, alice, anchor)
      assert.equal(grown.length, all.length + 500, 'four years due: 500 made in this run')
      assert.deepEqual(
        grown.map(o => o.series_index),
        grown.map((_, i) => i)
      )

      // a rule change regenerates within the window, bounded too
      const patched = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${anchor}/series`, 200, {
        freq: 'weekly',
        repeat_days: [1, 2, 3, 4, 5, 6, 7]
      })
      assert.ok(patched.json().added_occurrences <= 500)
    })

    void it("a series patch never takes a storage key: cover_image_key (own, another tenant's, ../x) " +
      'is a 400 and every cover stays', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const made = await withSeries(t, alice, weekly(NEXT_YEAR))
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      const own = await uploadExpecting(t, alice, ids[1] ?? 0, PNG, 200)
      const strangerTenant = newTenant(t)
      const mallory = await strangerTenant.user('mallory')
      const theirs = await createEvent(t, mallory, { title: 'Secret' })
      const theirCover = await uploadExpecting(t, mallory, theirs.id, PNG, 200)
      const snapshot = async () =>
        await Promise.all(
          ids.map(async id => {
            const e = await getJson(t, alice, `/api/v1/events/${id}`)
            return {
              id,
              cover_image_key: e.cover_image_key,
              cover: e.metadata.cover_image ?? null,
              revision: e.revision
            }
          })
        )
      const before = await snapshot()
      const seriesBefore = (await getJson(t, alice, `/api/v1/events/${ids[0]}/series`)).series
      for (const key of [own.json().cover_image_key, theirCover.json().cover_image_key, '../x', null]) {
        assertBadRequestAt(
          await t.as(alice, {
            method: 'PATCH',
            url: `/api/v1/events/${ids[0]}/series`,
            payload: { title: 'x', cover_image_key: key }
          }),
          'body.cover_image_key'
        )
      }
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${ids[0]}/series`,
          payload: { metadata: { cover_image: { key: '../x' } } }
        }),
        'body.metadata.cover_image'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/events/${ids[2]}?scope=all`,
          payload: { metadata: { cover_image: { key: '../x' } } }
        }),
        'body.metadata.cover_image'
      )
      assertBadRequestAt(
        await t.as(alice, {
          method: 'POST',
          url: '/api/v1/events/with-series',
          payload: { ...weekly(NEXT_YEAR), metadata: { cover_image: { key: '../x' } } }
        }),
        'body.metadata.cover_image'
      )
      assert.deepEqual(await snapshot(), before, 'every occurrence keeps its cover')
      assert.equal((await getJson(t, alice, `/api/v1/events/${ids[0]}/series`)).series.revision, seriesBefore.revision)
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${ids[0]}/cover` })).statusCode,
        404,
        'no cover reached the anchor'
      )
      await expectStatus(t, mallory, 'GET', `/api/v1/events/${theirs.id}/cover`, 200)
    })

    void it('series cascades never copy a cover between events: new occurrences have none, ' +
      "and a new cover on one leaves the anchor's", async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, {
        title: 'Club',
        start_dt: NEXT_YEAR,
        end_dt: '2027-03-15T10:00:00.000Z',
        timezone: 'UTC',
        metadata: { room: 'A' }
      })
      const cover = await uploadExpecting(t, alice, e.id, PNG, 200)
      const key = cover.json().cover_image_key as string
      const res = await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id}/series`, 201, {
        freq: 'weekly',
        repeat_days: [1],
        ends_on: 'after_n',
        end_count: 4
      })
      const ids = (res.json() as Json[]).map(o => o.id as number)
      assert.equal(ids[0], e.id)
      const meta = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${e.id}/series`, 200, {
        metadata: { room: 'B' },
        end_count: 6,
        address: 'Hall 2'
      })
      assert.equal(meta.json().cover_image_key, null, 'the series holds no key')
      const items = await allOccurrences(t, alice, e.id)
      assert.equal(items.length, 6)
      for (const o of items) {
        assert.equal(o.address, 'Hall 2')
        assert.equal(o.metadata.room, 'B')
        if (o.id === e.id) {
          assert.equal(o.cover_image_key, key, 'the anchor keeps its own cover')
          assert.equal(o.metadata.cover_image.key, key)
        } else {
          assert.equal(o.cover_image_key, null, `occurrence ${String(o.id)} got no key`)
          assert.equal(o.metadata.cover_image, undefined)
        }
      }
      const other = await uploadExpecting(t, alice, ids[1] ?? 0, PNG, 200)
      assert.notEqual(other.json().cover_image_key, key)
      assert.equal(
        (await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}/cover` })).statusCode,
        200,
        "the anchor's object is still there"
      )
      assert.equal((await getJson(t, alice, `/api/v1/events/${e.id}`)).cover_image_key, key)
    })

    void it('a manager of one occurrence gets 403 on every series-wide change and nothing changes; scope this works; ' +
      'series managers with the permission may', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const made = await withSeries(t, alice, { ...weekly(NEXT_YEAR), visibility: 10 })
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      const mine = ids[2] ?? 0
      await addManager(t, tenant.id, mine, 'bob', { role: 'event_manager:full' })
      assert.equal(
        (await t.as(bob, { method: 'GET', url: `/api/v1/events/${ids[3]}` })).statusCode,
        404,
        'bob cannot see the other occurrences'
      )
      const snapshot = async () => ({
        series: (await getJson(t, alice, `/api/v1/events/${ids[0]}/series`)).series,
        items: (await allOccurrences(t, alice, ids[0] ?? 0)).map(o => ({
          id: o.id,
          title: o.title,
          start_dt: o.start_dt,
          status: o.status,
          revision: o.revision,
          series_id: o.series_id
        }))
      })
      const before = await snapshot()
      assert.equal(before.items.length, 6)
      // ids[0] is invisible to bob: 404 (as for any event he cannot see); the others 403
      const attempts: Array<[string, string, Json | undefined, number]> = [
        ['PATCH', `/api/v1/events/${mine}?scope=all`, { title: 'Hijacked' }, 403],
        ['PATCH', `/api/v1/events/${mine}?scope=future`, { title: 'Hijacked' }, 403],
        ['PATCH', `/api/v1/events/${ids[0]}?scope=future`, { title: 'Hijacked' }, 404],
        ['PATCH', `/api/v1/events/${mine}/series`, { title: 'Hijacked' }, 403],
        ['PATCH', `/api/v1/events/${mine}/series`, { end_count: 2 }, 403],
        ['DELETE', `/api/v1/events/${mine}/series?scope=future`, undefined, 403],
        ['DELETE', `/api/v1/events/${mine}/series?scope=all`, undefined, 403],
        ['POST', `/api/v1/events/${mine}/series/publish`, {}, 403],
        ['POST', `/api/v1/events/${mine}/series/manager`, { email: 'bob@example.test' }, 403]
      ]
      for (const [method, url, payload, status] of attempts) {
        const res = await t.as(bob, { method: method as 'PATCH', url, ...(payload !== undefined ? { payload } : {}) })
        assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`)
      }
      assert.deepEqual(await snapshot(), before, 'no occurrence and not the series changed')

      await expectStatus(t, bob, 'PATCH', `/api/v1/events/${mine}?scope=this`, 200, { title: "Bob's" })
      const after = await snapshot()
      assert.deepEqual(
        after.items.map(o => o.title),
        before.items.map(o => (o.id === mine ? "Bob's" : 'Standup'))
      )
      assert.equal(after.series.title, 'Standup')
      await expectStatus(t, bob, 'DELETE', `/api/v1/events/${mine}/series?scope=this`, 204)
      assert.deepEqual(
        (await allOccurrences(t, alice, ids[0] ?? 0)).map(o => o.id),
        ids.filter(id => id !== mine)
      )

      // series-level rights: an active series manager holding the permission may; one without it may not
      const carol = await tenant.user('carol')
      const dave = await tenant.user('dave')
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('event_managers')
          .values([
            {
              tenant_id: tenant.id,
              event_id: ids[0] ?? 0,
              series_id: made.event.series_id,
              user_id: 'carol',
              role: 'event_manager:editor',
              status: 'active'
            },
            {
              tenant_id: tenant.id,
              event_id: ids[0] ?? 0,
              series_id: made.event.series_id,
              user_id: 'dave',
              role: 'event_manager:attendees',
              status: 'active'
            }
          ])
          .execute()
      })
      await expectStatuses(t, [
        [dave, 'PATCH', `/api/v1/events/${ids[3]}?scope=all`, 403, { title: 'Dave' }],
        [carol, 'PATCH', `/api/v1/events/${ids[3]}?scope=all`, 200, { title: 'Carol' }]
      ])
      // the editor bundle has no event:delete
      await expectStatus(t, carol, 'DELETE', `/api/v1/events/${ids[3]}/series?scope=all`, 403)
      const items = await allOccurrences(t, alice, ids[0] ?? 0)
      assert.deepEqual(
        items.map(o => o.title),
        Array(5).fill('Carol')
      )
      await expectStatus(t, bob, 'GET', `/api/v1/events/${ids[3]}`, 404)
    })

    void it('a series manager invite needs every permission at series level, and its e-mail is shown only to who ' +
      'manages managers', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const bob = await tenant.user('bob')
      const viewer = await tenant.user('vera', ['viewer'])
      const made = await withSeries(t, alice, { ...weekly(NEXT_YEAR), visibility: 40 })
      const ids = (made.occurrences as Json[]).map(o => o.id as number)
      const first = ids[0] ?? 0
      // bob manages the whole series' managers, but holds nothing else: he may not invite a full manager
      await addManager(t, tenant.id, first, 'bob', {
        permissions: ['managers:manage'],
        series_id: (made.occurrences as Json[])[0]?.series_id as number
      })
      await expectStatus(t, bob, 'POST', `/api/v1/events/${first}/series/manager`, 403, {
        email: 'mallory@example.test'
      })
      assert.equal(
        (await getJson(t, alice, `/api/v1/events/${first}/series`)).series.series_manager_invited_email ?? null,
        null,
        'no invite was made'
      )
      await expectStatus(t, alice, 'POST', `/api/v1/events/${first}/series/manager`, 200, {
        email: 'carol@example.test'
      })
      assert.equal(
        (await getJson(t, alice, `/api/v1/events/${first}/series`)).series.series_manager_invited_email,
        'carol@example.test'
      )
      assert.equal(
        (await getJson(t, bob, `/api/v1/events/${first}/series`)).series.series_manager_invited_email,
        'carol@example.test',
        'bob holds managers:manage on the series'
      )
      const seen = (await getJson(t, viewer, `/api/v1/events/${first}/series`)).series
      assert.equal(seen.series_manager_status, 'pending')
      assert.equal(seen.series_manager_invited_email, null)
    })
  })
}

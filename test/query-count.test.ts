/**
 * Statements per request on the list endpoints: the same number for a page of 5 as for a page of
 * 25 (no query per row: N+1), counted where the statements leave for the database — every
 * `pg` client query on PostgreSQL (BEGIN, the tenant scope and COMMIT included), every PGlite
 * query and transaction on PGlite.
 */
import { before, after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { scopeStatements } from '../src/platform/db/tenant.ts'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { watchStatements } from './helpers/statements.ts'

interface Counter { readonly count: number, restore (): void }

/** Counts statements sent by this process to the test database (test/helpers/statements.ts). */
function countStatements (t: TestApp): Counter {
  const state = { count: 0 }
  const watch = watchStatements(t, () => { state.count++ })
  return { get count () { return state.count }, restore: () => { watch.restore() } }
}

const ROWS = 30

for (const kind of databases()) {
  describe(`${kind}: statements per list request`, () => {
    const t = useTestApp(kind)
    let counter: Counter
    let token: string
    let spaceId: number
    let eventId: number
    const contactIds: string[] = []

    before(async () => {
      const tenant = newTenant(t)
      token = await tenant.user('alice', ['admin'])
      const post = async (url: string, payload: unknown) => {
        const res = await t.as(token, { method: 'POST', url, payload: payload as Record<string, unknown> })
        assert.ok(res.statusCode < 300, `${url}: ${res.statusCode} ${res.body}`)
        return res.statusCode === 204 ? undefined : res.json()
      }
      const space = await post('/api/v1/spaces', { title: 'Counting' })
      spaceId = space.id
      for (let i = 0; i < ROWS; i++) {
        contactIds.push(
          (
            await post('/api/v1/contacts', {
              first_name: `Count${i}`,
              last_name: 'Queries',
              email: `count${i}@example.test`
            })
          ).id
        )
        const event = await post('/api/v1/events', {
          title: `Counted ${i}`,
          start_dt: `2030-01-${String(1 + (i % 28)).padStart(2, '0')}T10:00:00Z`
        })
        eventId ??= event.id
        await post(`/api/v1/spaces/${spaceId}/events`, { event_id: event.id })
        await post(`/api/v1/spaces/${spaceId}/members`, { user_id: `member-${i}`, role: 'space_member' })
        await post('/api/v1/spaces', { title: `Space ${i}` })
      }
      const bulk = await t.as(token, {
        method: 'POST',
        url: `/api/v1/events/${eventId}/attendees/bulk`,
        payload: { contact_ids: contactIds }
      })
      assert.ok(bulk.statusCode < 300 || bulk.statusCode === 404, `attendees: ${bulk.statusCode}`)
      counter = countStatements(t)
    })

    after(() => counter?.restore())

    /**
     * Statements of one request, the fewest of three tries: the counter sees every statement of the process, and the
     * user gate's refresh or a background job's transaction may fall within one request.
     */
    async function statementsOf (url: string, expectItems?: number): Promise<number> {
      let fewest = Infinity
      for (let i = 0; i < 3; i++) {
        const before = counter.count
        const res = await t.as(token, { method: 'GET', url })
        const used = counter.count - before
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
        if (expectItems !== undefined) assert.equal(res.json().items.length, expectItems, url)
        fewest = Math.min(fewest, used)
      }
      return fewest
    }

    const LISTS: Array<[string, (size: number) => string]> = [
      ['contacts', size => `/api/v1/contacts?size=${size}`],
      ['contacts search', size => `/api/v1/contacts/search?query=queries&limit=${size}`],
      ['events', size => `/api/v1/events?size=${size}&sort_by=start_dt&sort_dir=asc`],
      ['spaces', size => `/api/v1/spaces?size=${size}`],
      ['events of a space', size => `/api/v1/spaces/${spaceId}/events?size=${size}`],
      ['members of a space', size => `/api/v1/spaces/${spaceId}/members?size=${size}`],
      ['activity of a space', size => `/api/v1/spaces/${spaceId}/activity?size=${size}`],
      ['attendees of an event', size => `/api/v1/events/${eventId}/attendees?size=${size}`]
    ]

    for (const [name, url] of LISTS) {
      it(`${name}: as many statements for 25 rows as for 5`, async (ctx) => {
        await t.as(token, { method: 'GET', url: url(5) }) // warm: user gate, first compilation
        const probe = await t.as(token, { method: 'GET', url: url(25) })
        if (probe.statusCode === 404 && name === 'attendees of an event') {
          ctx.skip('attendees route not present')
          return
        }
        const small = await statementsOf(url(5), 5)
        const large = await statementsOf(url(25), 25)
        assert.equal(large, small, `${name}: ${small} statements for 5 rows, ${large} for 25`)
      })
    }

    it('calendar: as many statements for 25 events as for 5', async () => {
      const range = (days: number) =>
        `/api/v1/events/calendar?start_date=2030-01-01&end_date=2030-01-${String(days).padStart(2, '0')}`
      await t.as(token, { method: 'GET', url: range(5) })
      const few = await t.as(token, { method: 'GET', url: range(4) })
      const many = await t.as(token, { method: 'GET', url: range(28) })
      assert.ok(few.json().items.length < many.json().items.length)
      assert.equal(await statementsOf(range(28)), await statementsOf(range(4)))
    })

    it('bulk add of attendees: as many statements for 25 contacts as for 5 (one insert of attendees, ' +
      'one of their domain events)', async () => {
      /** Statements of a bulk add of `n` contacts to a new event (the fewest of two tries). */
      async function statementsOfBulkAdd (n: number): Promise<number> {
        let fewest = Infinity
        for (let i = 0; i < 2; i++) {
          const event = await t.as(token, {
            method: 'POST',
            url: '/api/v1/events',
            payload: { title: `Bulk ${n} ${i}` }
          })
          assert.equal(event.statusCode, 201, event.body)
          const before = counter.count
          const res = await t.as(token, {
            method: 'POST',
            url: `/api/v1/events/${event.json().id}/attendees/bulk`,
            payload: { contact_ids: contactIds.slice(0, n) }
          })
          const used = counter.count - before
          assert.equal(res.statusCode, 204, res.body)
          const added = await t.as(token, { method: 'GET', url: `/api/v1/events/${event.json().id}/attendees?size=1` })
          assert.equal(added.json().total, n)
          fewest = Math.min(fewest, used)
        }
        return fewest
      }
      const small = await statementsOfBulkAdd(5)
      const large = await statementsOfBulkAdd(25)
      assert.equal(large, small, `${small} statements for 5 contacts, ${large} for 25`)
    })

    it('series: as many statements to create 60 occurrences as 6, ' +
      'and to regenerate them on a rule change', async () => {
      /**
       * Statements of creating a weekly Mon/Wed series of `n` and of changing its days to Tue/Thu/Fri (the fewest of
       * two tries).
       */
      async function statementsOfSeries (n: number): Promise<[number, number]> {
        const fewest: [number, number] = [Infinity, Infinity]
        for (let i = 0; i < 2; i++) {
          let before = counter.count
          const made = await t.as(token, {
            method: 'POST',
            url: '/api/v1/events/with-series',
            payload: {
              title: `Series ${n} ${i}`,
              start_dt: '2031-03-03T09:00:00Z',
              end_dt: '2031-03-03T10:00:00Z',
              timezone: 'Europe/Berlin',
              series: { freq: 'weekly', repeat_days: [1, 3], ends_on: 'after_n', end_count: n }
            }
          })
          fewest[0] = Math.min(fewest[0], counter.count - before)
          assert.equal(made.statusCode, 201, made.body)
          assert.equal(made.json().occurrences.length, n)
          before = counter.count
          const changed = await t.as(token, {
            method: 'PATCH',
            url: `/api/v1/events/${made.json().event.id}/series`,
            payload: { repeat_days: [2, 4, 5] }
          })
          fewest[1] = Math.min(fewest[1], counter.count - before)
          assert.equal(changed.statusCode, 200, changed.body)
          assert.ok(changed.json().removed_occurrences.length > 0 && changed.json().added_occurrences > 0)
        }
        return fewest
      }
      const small = await statementsOfSeries(6)
      const large = await statementsOfSeries(60)
      assert.deepEqual(
        large,
        small,
        `create and rule change: ${small.join(' and ')} statements for 6 occurrences, ${large.join(' and ')} for 60`
      )
    })

    it(
      "a single-row read on PostgreSQL: BEGIN, the scope's SET LOCALs, the query and COMMIT " +
      '(all but COMMIT leave in one write: src/platform/db/pipeline.ts)',
      { skip: kind === 'pglite' },
      async () => {
        const contact = (await t.as(token, { method: 'GET', url: '/api/v1/contacts?size=1' })).json().items[0]
        const before = counter.count
        const res = await t.as(token, { method: 'GET', url: `/api/v1/contacts/${contact.id}` })
        assert.equal(res.statusCode, 200)
        assert.equal(counter.count - before, 1 + scopeStatements({ tenantId: 't' }).length + 2)
      }
    )
  })
}

/**
 * The CSV exports (docs/exports.md): an event's attendees, the attendees of a series' occurrences, and a space's
 * analytics, parsed back with csv-parse and compared with the JSON routes that show the same rows.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parse } from 'csv-parse/sync'
import type { LightMyRequestResponse } from 'fastify'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { insertRow } from '../../../test/helpers/rows.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { createContact, createEvent, insertContacts, publishEvent, type Json } from './attendees.fixtures.ts'

const ATTENDEE_HEADER = [
  'event_id', 'series_id', 'contact_id', 'first_name', 'last_name', 'email', 'company', 'status', 'waitlist_position',
  'notes', 'invited_at', 'responded_at', 'approved_at', 'checked_in_at', 'checked_in_by', 'check_in_method',
  'checked_out_at', 'source', 'invitation_sent_at', 'guest_responded_at'
]

/**
 * An answer's CSV as rows of cells, header first; asserts the CSV headers, the byte-order mark of the default
 * (docs/exports.md) and RFC 4180 line ends.
 */
function csvOf (res: LightMyRequestResponse, filename: RegExp): string[][] {
  assert.equal(res.statusCode, 200, res.body.slice(0, 500))
  assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8')
  assert.match(String(res.headers['content-disposition']), filename)
  assert.deepEqual([...res.rawPayload.subarray(0, 3)], [0xef, 0xbb, 0xbf], 'a UTF-8 byte-order mark first')
  assert.ok(res.body.endsWith('\r\n'), 'CRLF after the last record')
  // every line end is CRLF outside quoted fields: csv-parse with an explicit CRLF delimiter reads it all
  return parse(res.body, { record_delimiter: '\r\n', bom: true })
}

/** The CSV text of a value as the export writes it. */
const text = (v: unknown): string => (v === null || v === undefined ? '' : String(v))

/** A text value as a cell: one starting with a formula character prefixed with `'` (numbers never are). */
const cellOf = (v: unknown): string => typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : text(v)

/** What the attendee list shows of an attendee, as the CSV's cells (contact fields aside). */
const listedCells = (a: Json): Record<string, string> => Object.fromEntries(
  ATTENDEE_HEADER.filter(h => !['first_name', 'last_name', 'email', 'company'].includes(h)).map(h => [h, cellOf(a[h])])
)

const asRecords = (rows: string[][]): Array<Record<string, string>> => {
  const [header, ...body] = rows
  return body.map(r => Object.fromEntries((header ?? []).map((h, i) => [h, r[i] ?? ''])))
}

/** Attendees of an event through SQL, in the order given (ids follow it). */
async function attend (
  t: TestApp,
  tenantId: string,
  rows: Array<{ event_id?: number, series_id?: number, contact_id: string, status?: string, notes?: string }>
): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    for (let i = 0; i < rows.length; i += 1000) {
      await trx.insertInto('attendees').values(rows.slice(i, i + 1000).map(r => ({
        tenant_id: tenantId,
        event_id: r.event_id ?? null,
        series_id: r.series_id ?? null,
        contact_id: r.contact_id,
        status: (r.status ?? 'invited') as 'invited',
        notes: r.notes ?? null,
        waitlist_position: null
      }))).execute()
    }
  })
}

for (const kind of databases()) {
  void describe(`${kind}: CSV exports`, () => {
    const t = useTestApp(kind)

    const exportOf = async (token: string, id: number, query = '') =>
      await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/attendees/export${query}` })

    void it('exports what the attendee list shows, neutralises formulas, round-trips commas, quotes and line breaks, ' +
      'hides invisible contacts', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      // no organization: his contacts are personal, his alone
      const bob = await tenant.user('bob')
      const event = await createEvent(t, alice)
      const url = `/api/v1/events/${event.id}/attendees`
      const tricky = await createContact(t, alice, {
        first_name: 'Ann, "the first"',
        last_name: 'Lee\r\nSecond line',
        email: 'ann@example.org',
        company: '-Acme; Inc.'
      })
      const plain = await createContact(t, alice, { first_name: '@home', last_name: 'Plain', company: '+41 Ltd' })
      await expectStatus(t, alice, 'POST', url, 201, { contact_id: tricky, notes: '=HYPERLINK("http://x.test","go")' })
      await expectStatus(t, alice, 'POST', url, 201, {
        contact_id: plain,
        status: 'confirmed',
        notes: 'a, b "c"\nd\re\tf'
      })
      // bob's personal contact: alice manages the event but must not learn who it is
      const hidden = await createContact(t, bob, {
        first_name: 'Secret', last_name: 'Person', email: 'secret@bob.test'
      })
      await insertRow(t, tenant.id, 'attendees', { event_id: event.id, contact_id: hidden, status: 'tentative' })
      await insertRow(t, tenant.id, 'attendees', {
        event_id: event.id,
        contact_id: (await insertContacts(t, tenant.id, 'alice', 1, 'org-a'))[0] ?? '',
        status: 'waitlisted',
        waitlist_position: 1
      })

      const rows = csvOf(await exportOf(alice, event.id),
        new RegExp(`^attachment; filename="event-${event.id}-attendees\\.csv"$`))
      assert.deepEqual(rows[0], ATTENDEE_HEADER)
      const records = asRecords(rows)
      const listed = await itemsByCursor(t, alice, `${url}?size=2`)
      assert.equal(records.length, 4)
      assert.deepEqual(records.map(r => Object.fromEntries(Object.keys(listedCells({})).map(k => [k, r[k]]))),
        listed.map(listedCells))

      const [first, second, third, fourth] = records
      assert.deepEqual(
        [first?.first_name, first?.last_name, first?.email, first?.company, first?.notes],
        ['Ann, "the first"', 'Lee\r\nSecond line', 'ann@example.org', "'-Acme; Inc.", '\'=HYPERLINK("http://x.test","go")']
      )
      assert.deepEqual([second?.first_name, second?.company, second?.notes],
        ["'@home", "'+41 Ltd", 'a, b "c"\nd\re\tf'])
      assert.equal(second?.status, 'confirmed')
      assert.deepEqual(
        [third?.contact_id, third?.first_name, third?.last_name, third?.email, third?.company, third?.status],
        [hidden, '', '', '', '', 'tentative']
      )
      assert.deepEqual([fourth?.status, fourth?.waitlist_position], ['waitlisted', '1'])
      assert.match(first?.invited_at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      // the raw text: a cell starting with a formula character is quoted only when it must be
      const body = (await exportOf(alice, event.id)).body
      assert.ok(body.includes(',\'-Acme; Inc.,'), body)
      assert.ok(!body.includes('Secret') && !body.includes('secret@bob.test'), 'nothing of the invisible contact')

      // the status filter, as the list's
      const confirmed = asRecords(csvOf(await exportOf(alice, event.id, '?status=confirmed'), /attendees\.csv/))
      assert.deepEqual(confirmed.map(r => r.contact_id), [plain])
      await expectStatus(t, alice, 'GET', `${url}/export?status=maybe`, 400)

      // bob sees alice's event only once it is shared, and holds no attendees:read on it
      await expectStatus(t, bob, 'GET', `${url}/export`, 404)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}`, 200, { visibility: 40 })
      const refused = await expectStatus(t, bob, 'GET', `${url}/export`, 403)
      assert.match(String(refused.headers['content-type']), /^application\/problem\+json/)
      // a viewer may not read attendees; another tenant's admin does not see the event
      await expectStatus(t, await tenant.user('vic', ['viewer']), 'GET', `${url}/export`, 403)
      await expectStatus(t, await newTenant(t).user('root', ['admin']), 'GET', `${url}/export`, 404)
      // the tenant admin sees bob's personal contact? no: personal contacts are their owner's alone
      const admin = asRecords(csvOf(await exportOf(await tenant.user('root', ['admin']), event.id), /\.csv/))
      assert.equal(admin.find(r => r.contact_id === hidden)?.first_name, '')
    })

    void it('exports more than one chunk: every attendee exactly once, in the order of the list', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const event = await createEvent(t, alice)
      const contacts = await insertContacts(t, tenant.id, 'alice', 4500, 'org-a')
      await attend(t, tenant.id, contacts.map((c, i) => ({ event_id: event.id, contact_id: c, notes: `n${i},"x"` })))
      const rows = csvOf(await exportOf(alice, event.id), /\.csv/)
      const records = asRecords(rows)
      assert.equal(records.length, 4500)
      assert.deepEqual(records.map(r => r.contact_id), contacts)
      assert.deepEqual(records.map(r => r.notes), contacts.map((_, i) => `n${i},"x"`))
      assert.equal(new Set(records.map(r => r.contact_id)).size, 4500)
      const listed = await itemsByCursor(t, alice, `/api/v1/events/${event.id}/attendees?size=100`)
      assert.deepEqual(records.map(r => r.contact_id), listed.map(a => a.contact_id))
      // an event without attendees: the header alone
      const empty = await createEvent(t, alice)
      assert.deepEqual(csvOf(await exportOf(alice, empty.id), /\.csv/), [ATTENDEE_HEADER])
    })

    void it('exports the attendees of every occurrence of a series, by start, ' +
      'each line naming its occurrence', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const anchor = await createEvent(t, alice, {
        start_dt: '2031-03-02T10:00:00Z',
        end_dt: '2031-03-02T11:00:00Z'
      })
      const made = await expectStatus(t, alice, 'POST', `/api/v1/events/${anchor.id}/series`, 201, {
        freq: 'daily',
        ends_on: 'after_n',
        end_count: 2
      })
      const occurrences = made.json<Json[]>()
      assert.equal(occurrences.length, 2)
      const seriesId = occurrences[0]?.series_id as number
      const [c1, c2, c3] = await insertContacts(t, tenant.id, 'alice', 3, 'org-a')
      const [o1, o2] = [...occurrences].sort((a, b) => String(a.start_dt).localeCompare(String(b.start_dt)))
      await attend(t, tenant.id, [
        { event_id: o2?.id, contact_id: c2 ?? '', status: 'confirmed' },
        { series_id: seriesId, contact_id: c3 ?? '', status: 'tentative' },
        { event_id: o1?.id, contact_id: c1 ?? '' }
      ])
      const res = await t.as(alice, { method: 'GET', url: `/api/v1/events/${String(o2?.id)}/series/attendees/export` })
      const rows = csvOf(res, /series-attendees\.csv/)
      assert.deepEqual(rows[0], ['occurrence_event_id', 'occurrence_start', ...ATTENDEE_HEADER])
      const records = asRecords(rows)
      assert.deepEqual(records.map(r => [r.occurrence_event_id, r.contact_id, r.status]), [
        [String(o1?.id), c3, 'tentative'],
        [String(o1?.id), c1, 'invited'],
        [String(o2?.id), c2, 'confirmed'],
        [String(o2?.id), c3, 'tentative']
      ])
      assert.equal(records[0]?.occurrence_start, new Date(String(o1?.start_dt)).toISOString())
      // each occurrence's lines are what its attendee list shows
      for (const o of [o1, o2]) {
        const listed = await itemsByCursor(t, alice, `/api/v1/events/${String(o?.id)}/attendees?size=10`)
        assert.deepEqual(
          records.filter(r => r.occurrence_event_id === String(o?.id)).map(r => r.contact_id).sort(),
          listed.map(a => String(a.contact_id)).sort()
        )
      }
      // an event of no series: 404 saying so
      const single = await createEvent(t, alice)
      const none = await expectStatus(t, alice, 'GET', `/api/v1/events/${single.id}/series/attendees/export`, 404)
      assert.match(none.json().detail, /no series/)
      // bob, sharing nothing: 404; once shared, he holds attendees:read on no occurrence: 403
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      await expectStatus(t, bob, 'GET', `/api/v1/events/${String(o1?.id)}/series/attendees/export`, 404)
    })

    void it('exports the analytics figures of a space, as the JSON analytics shows them, ' +
      'no-shows counted apart', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const space = (await expectStatus(t, alice, 'POST', '/api/v1/spaces', 201, { title: 'Club, "the" =1' })).json()
      const titles = ['=SUM(A1:A2)', 'Past, "talk"', 'Future']
      const starts = ['2020-01-05T10:00:00Z', '2021-06-01T10:00:00Z', '2099-01-01T10:00:00Z']
      const events: Json[] = []
      for (const [i, title] of titles.entries()) {
        const e = await createEvent(t, alice, { title, start_dt: starts[i], end_dt: starts[i]?.replace('10:', '11:') })
        await publishEvent(t, alice, e.id)
        await expectStatus(t, alice, 'POST', `/api/v1/spaces/${space.id}/events`, 201, { event_id: e.id })
        events.push(e)
      }
      const contacts = await insertContacts(t, tenant.id, 'alice', 8, 'org-a')
      const statuses = ['confirmed', 'tentative', 'checked_in', 'no_show', 'no_show', 'pending', 'declined', 'invited']
      await attend(t, tenant.id,
        statuses.map((status, i) => ({ event_id: events[1]?.id, contact_id: contacts[i] ?? '', status })))
      await insertRow(t, tenant.id, 'attendees', {
        event_id: events[0]?.id,
        contact_id: contacts[0] ?? '',
        status: 'waitlisted',
        waitlist_position: 1
      })
      await insertRow(t, tenant.id, 'attendees', {
        event_id: events[0]?.id, contact_id: contacts[1] ?? '', status: 'no_show'
      })

      const json = await getJson(t, alice, `/api/v1/spaces/${space.id}/analytics`)
      const perf = json.events_performance as Json[]
      const past = perf.find(p => p.event_id === events[1]?.id)
      // pending, waitlisted and no-shows are not RSVPs; no-shows are counted apart
      assert.deepEqual([past?.rsvps, past?.attended, past?.no_shows], [3, 1, 2])
      const oldest = perf.find(p => p.event_id === events[0]?.id)
      assert.deepEqual([oldest?.rsvps, oldest?.no_shows], [0, 1])
      assert.equal(json.summary.no_shows, 3)

      const res = await t.as(alice, { method: 'GET', url: `/api/v1/spaces/${space.id}/analytics/export` })
      const rows = csvOf(res, new RegExp(`space-${space.id}-analytics\\.csv`))
      const header = [
        'event_id', 'title', 'status', 'start_at', 'end_at', 'upcoming', 'rsvps', 'attended', 'no_shows', 'rate',
        'needs_care'
      ]
      assert.deepEqual(rows[0], header)
      const expected = perf.map(p => header.map(h => cellOf(p[h])))
      assert.deepEqual(rows.slice(1), expected)
      assert.equal(rows[3]?.[1], "'=SUM(A1:A2)")

      // the same access rule as the analytics: bob (no manager) 403 once he sees the space, 404 before
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      await expectStatus(t, bob, 'GET', `/api/v1/spaces/${space.id}/analytics/export`, 404)
      await expectStatus(t, await newTenant(t).user('root', ['admin']), 'GET',
        `/api/v1/spaces/${space.id}/analytics/export`, 404)
      const admin = await tenant.user('root', ['admin'])
      assert.deepEqual(csvOf(await t.as(admin, { method: 'GET', url: `/api/v1/spaces/${space.id}/analytics/export` }),
        /\.csv/), rows)
    })

    void it('counts every attendee status in a series\' attendee_counts, 0 when absent', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const anchor = await createEvent(t, alice, { start_dt: '2031-03-02T10:00:00Z', end_dt: '2031-03-02T11:00:00Z' })
      const made = await expectStatus(t, alice, 'POST', `/api/v1/events/${anchor.id}/series`, 201, {
        freq: 'daily',
        ends_on: 'after_n',
        end_count: 2
      })
      const first = made.json<Json[]>()[0]
      const [c1, c2] = await insertContacts(t, tenant.id, 'alice', 2, 'org-a')
      await attend(t, tenant.id, [
        { event_id: first?.id, contact_id: c1 ?? '', status: 'no_show' },
        { event_id: first?.id, contact_id: c2 ?? '', status: 'pending' }
      ])
      const page = await getJson(t, alice, `/api/v1/events/${String(first?.id)}/series`)
      assert.deepEqual(page.attendee_counts, {
        invited: 0,
        confirmed: 0,
        declined: 0,
        tentative: 0,
        checked_in: 0,
        pending: 1,
        waitlisted: 0,
        no_show: 1,
        awaiting_confirmation: 0
      })
    })
  })
}

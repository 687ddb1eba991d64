/**
 * Merging contacts (docs/contacts.md, "Merge"): values and tags, attendances collapsing per event (stronger status,
 * earliest check-in, waitlist settled), links, activity and rules moved, redirects (308, chains), the write rules
 * and every refusal with nothing moved, the sync log, and (PostgreSQL) two merges of the same contacts at once.
 *
 * The property test builds random attendances of a target, absorbed contacts and bystanders over a few events with
 * full capacity and waitlists, merges, and checks what is invariant: per event, the contacts attending after are
 * exactly the persons attending before (each absorbed contact counted as the target), so the number of rows per
 * event equals the number of distinct persons before; each person keeps the strongest status they had there (a
 * seat freed by two seated rows becoming one goes to the first in line); no tag is lost.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { insertRow, updateRows } from '../../../test/helpers/rows.ts'
import { fullRead, Replica, sorted } from '../../../test/helpers/sync-replica.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { createEvent } from '../events/events.fixtures.ts'
import { withSeries, dailyStandup } from '../series/series.fixtures.ts'
import type { AttendeeStatus } from '../attendees/attendees.table.ts'
import { MERGE_MAX } from './contacts.merge.ts'

type Json = Record<string, any>

const NUM_RUNS = 20

async function createContact (t: TestApp, token: string, body: Json = {}): Promise<Json> {
  return (await expectStatus(t, token, 'POST', '/api/v1/contacts', 201, { first_name: 'Ann', ...body })).json()
}

/** The attendee rows of events (or of series-level lists) as stored, oldest first. */
async function attendeeRows (t: TestApp, tenantId: string) {
  return await withTenant(t.ctx.db, { tenantId }, async trx =>
    await trx.selectFrom('attendees').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute())
}

/** Inserts attendee rows of a tenant through SQL, in one transaction (states registration would refuse to build). */
async function insertAttendees (t: TestApp, tenantId: string, rows: Json[]): Promise<void> {
  if (rows.length === 0) return
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx.insertInto('attendees').values(rows.map(r => ({ tenant_id: tenantId, ...r })) as any).execute()
  })
}

const STRENGTH: Record<AttendeeStatus, number> = {
  checked_in: 8,
  confirmed: 7,
  waitlisted: 6,
  pending: 5,
  tentative: 4,
  awaiting_confirmation: 3,
  invited: 2,
  no_show: 1,
  declined: 0
}

for (const kind of databases()) {
  void describe(`${kind}: contacts merge`, () => {
    const t = useTestApp(kind)

    const merge = async (token: string, target: string, body: Json, headers: Record<string, string> = {}) =>
      await t.as(token, { method: 'POST', url: `/api/v1/contacts/${target}/merge`, payload: body, headers })

    /** Contacts of `token` with these first names: their ids, in order. */
    async function contactsNamed<const N extends readonly string[]> (token: string, names: N) {
      const ids = []
      for (const first of names) ids.push((await createContact(t, token, { first_name: first })).id as string)
      return ids as { [K in keyof N]: string }
    }

    /** Asserts a problem with `status` whose errors name `location` (with `value` when given). */
    function assertProblem (
      res: { statusCode: number, body: string, json: () => any },
      status: number,
      location?: string,
      value?: unknown
    ) {
      assert.equal(res.statusCode, status, res.body)
      const p = res.json()
      assert.equal(p.status, status)
      if (location === undefined) return p
      const e = (p.errors as Json[] | undefined)?.find(x => x.location === location)
      assert.ok(e !== undefined, `an error at ${location}: ${res.body}`)
      if (value !== undefined) assert.equal(e.value, value)
      return p
    }

    void it('merges into the target: its non-empty values, then the newest; tags united; ' +
      '200 with the new ETag', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const target = await createContact(t, alice, { first_name: 'Ada', company: '', tags: ['math', 'vip'] })
      const older = await createContact(t, alice, {
        first_name: 'Augusta', email: 'old@example.org', company: 'Old Co', city: 'London', tags: ['vip', 'history']
      })
      const newer = await createContact(t, alice, {
        email: 'new@example.org', company: 'New Co', is_favorite: true, tags: ['poetry']
      })
      const before = await expectStatus(t, alice, 'GET', `/api/v1/contacts/${target.id as string}`, 200)

      const res = await merge(alice, target.id, { absorb: [older.id, newer.id] }, {
        'if-match': String(before.headers.etag)
      })
      assert.equal(res.statusCode, 200, res.body)
      const merged = res.json()
      assert.equal(merged.$schema, 'http://localhost:8080/schemas/Contact.json')
      assert.equal(merged.id, target.id)
      assert.equal(merged.first_name, 'Ada', "the target's non-empty value stays")
      assert.equal(merged.email, 'new@example.org', 'an empty field takes the newest absorbed value')
      assert.equal(merged.company, 'New Co', 'blank text is empty')
      assert.equal(merged.city, 'London', 'the only value there is')
      assert.equal(merged.is_favorite, true)
      assert.deepEqual(merged.tags, ['math', 'vip', 'history', 'poetry'])
      assert.equal(res.headers.etag, `"${Number(JSON.parse(String(before.headers.etag))) + 1}"`)
      assert.equal(merged.owner_id, 'alice')
      assert.deepEqual(await getJson(t, alice, `/api/v1/contacts/${target.id as string}`), { ...merged })

      // the absorbed ids redirect; the list holds the target alone
      for (const gone of [older.id, newer.id]) {
        const read = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${gone as string}` })
        assert.equal(read.statusCode, 308, read.body)
        assert.equal(read.headers.location, `/api/v1/contacts/${target.id as string}`)
        assert.match(String(read.headers['content-type']), /^application\/problem\+json/)
        const p = read.json()
        assert.equal(p.status, 308)
        assert.match(p.detail, new RegExp(`merged into contact ${target.id as string}`))
        assert.deepEqual(p.errors, [{ location: 'path.id', message: 'merged into another contact', value: target.id }])
      }
      const list = await getJson(t, alice, '/api/v1/contacts')
      assert.deepEqual(list.items.map((c: Json) => c.id), [target.id])
      assert.equal(list.total, 1)

      const events = await outboxEvents(t, tenant.id, 'contact.merged')
      assert.equal(events.length, 1)
      assert.equal(events[0]?.aggregate_id, target.id)
      assert.deepEqual(events[0]?.payload, {
        contact_id: target.id,
        absorbed_ids: [older.id, newer.id],
        fields: ['is_favorite', 'email', 'company', 'city', 'tags']
      })
    })

    void it('keeps the value of the contact the request names per field, empty or not', async () => {
      const alice = await newTenant(t).user('alice')
      const target = await createContact(t, alice, { first_name: 'Ada', email: 'ada@example.org' })
      const other = await createContact(t, alice, { first_name: 'Augusta', email: null, job_title: 'Countess' })
      const res = await merge(alice, target.id, {
        absorb: [other.id],
        fields: { first_name: other.id, email: other.id, job_title: target.id }
      })
      assert.equal(res.statusCode, 200, res.body)
      const merged = res.json()
      assert.equal(merged.first_name, 'Augusta')
      assert.equal(merged.email, null, 'a named contact wins with an empty value too')
      assert.equal(merged.job_title, null, 'the target named: its empty value stays')
    })

    void it('brings a phone number with its E.164 form, and the flags of the numbers kept', async () => {
      const alice = await newTenant(t).user('alice')
      const target = await createContact(t, alice, { phone_work: 'call the desk' })
      assert.deepEqual(target.invalid_phones, ['phone_work'])
      const other =
        (await createContact(t, alice, { phone_primary: '+33 6 28 23 04 55', phone_work: '+44 20 0000 0002' })).id
      const kept = await merge(alice, target.id, { absorb: [other] })
      assert.equal(kept.statusCode, 200, kept.body)
      const merged = kept.json()
      assert.deepEqual([merged.phone_primary, merged.phone_primary_e164], ['+33 6 28 23 04 55', '+33628230455'])
      assert.deepEqual([merged.phone_work, merged.phone_work_e164, merged.invalid_phones],
        ['call the desk', null, ['phone_work']])

      const next = await createContact(t, alice)
      const third = (await createContact(t, alice, { phone_work: '+44 20 0000 0002' })).id
      const named = await merge(alice, next.id, { absorb: [target.id, third], fields: { phone_work: third } })
      assert.equal(named.statusCode, 200, named.body)
      const both = named.json()
      assert.deepEqual([both.phone_work, both.phone_work_e164, both.invalid_phones],
        ['+44 20 0000 0002', '+442000000002', []])
      assert.equal(both.phone_primary_e164, '+33628230455')
    })

    void it('makes two attendances of one event one: the stronger status, the earliest check-in, ' +
      'a seat freed goes to the waitlist', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const [target, a, b, x, y] = await contactsNamed(alice, ['T', 'A', 'B', 'X', 'Y'])
      const full = await createEvent(t, alice, { title: 'Full' })
      const door = await createEvent(t, alice, { title: 'Door' })
      const plain = await createEvent(t, alice, { title: 'Plain' })
      await updateRows(t, tenant.id, 'events', { capacity: 2, waitlist_enabled: true }, { id: full.id })
      const early = new Date(Date.now() - 3_600_000)
      const late = new Date(Date.now() - 60_000)
      await insertAttendees(t, tenant.id, [
        // Full: T and A hold the two seats, X then B wait; the merged person holds one seat, X gets the other
        { event_id: full.id, contact_id: target, status: 'confirmed' },
        { event_id: full.id, contact_id: a, status: 'confirmed', notes: 'vegetarian' },
        { event_id: full.id, contact_id: x, status: 'waitlisted', waitlist_position: 1 },
        { event_id: full.id, contact_id: b, status: 'waitlisted', waitlist_position: 2 },
        { event_id: full.id, contact_id: y, status: 'waitlisted', waitlist_position: 3 },
        // Door: A checked in first, T later: the earliest check-in is kept
        {
          event_id: door.id,
          contact_id: target,
          status: 'checked_in',
          is_checked_in: true,
          checked_in_at: late,
          checked_in_by: 'late'
        },
        {
          event_id: door.id,
          contact_id: a,
          status: 'checked_in',
          is_checked_in: true,
          checked_in_at: early,
          checked_in_by: 'early'
        },
        { event_id: door.id, contact_id: b, status: 'declined' },
        // Plain: only B
        { event_id: plain.id, contact_id: b, status: 'tentative' }
      ])
      const res = await merge(alice, target, { absorb: [a, b] })
      assert.equal(res.statusCode, 200, res.body)

      const rows = await attendeeRows(t, tenant.id)
      const of = (eventId: number) => rows.filter(r => r.event_id === eventId)
      const fullRows = new Map(of(full.id).map(r => [r.contact_id, r]))
      assert.deepEqual([...fullRows.keys()].sort(), [target, x, y].sort())
      assert.equal(fullRows.get(target)?.status, 'confirmed')
      assert.equal(fullRows.get(target)?.notes, 'vegetarian', 'notes of a row that goes fill the kept row')
      assert.equal(fullRows.get(x)?.status, 'confirmed', 'the seat freed went to the first in line')
      assert.deepEqual([fullRows.get(y)?.status, fullRows.get(y)?.waitlist_position], ['waitlisted', 1])
      const promoted = await outboxEvents(t, tenant.id, 'attendee.promoted')
      assert.deepEqual(promoted.map(e => e.payload.contact_id), [x])

      const [doorRow, ...more] = of(door.id)
      assert.equal(more.length, 0)
      assert.equal(doorRow?.contact_id, target)
      assert.equal(doorRow?.status, 'checked_in')
      assert.equal(doorRow?.checked_in_by, 'early')
      assert.equal(doorRow?.checked_in_at?.getTime(), early.getTime())
      assert.deepEqual(of(plain.id).map(r => [r.contact_id, r.status]), [[target, 'tentative']])

      const registration = await getJson(t, alice, `/api/v1/events/${full.id as number}`)
      assert.equal(registration.confirmed_count, 2)
      assert.equal(registration.waitlist_count, 1)
    })

    void it('makes two attendances of every occurrence of a series one', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const series = await withSeries(t, alice, dailyStandup(2))
      const seriesId = series.event.series_id as number
      const target = (await createContact(t, alice)).id as string
      const other = (await createContact(t, alice)).id as string
      await insertRow(t, tenant.id, 'attendees', { series_id: seriesId, contact_id: target, status: 'invited' })
      await insertRow(t, tenant.id, 'attendees', { series_id: seriesId, contact_id: other, status: 'confirmed' })
      assert.equal((await merge(alice, target, { absorb: [other] })).statusCode, 200)
      const rows = (await attendeeRows(t, tenant.id)).filter(r => r.series_id === seriesId && r.event_id === null)
      assert.deepEqual(rows.map(r => [r.contact_id, r.status]), [[target, 'confirmed']])
    })

    void it('moves space links (one per space), activity and contact-scoped rules (a new version, ' +
      'same creator)', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const target = (await createContact(t, alice, { first_name: 'T' })).id as string
      const other = (await createContact(t, alice, { first_name: 'O' })).id as string
      const both = (await expectStatus(t, alice, 'POST', '/api/v1/spaces', 201, { title: 'Both' })).json().id as number
      const one = (await expectStatus(t, alice, 'POST', '/api/v1/spaces', 201, { title: 'One' })).json().id as number
      for (const [space, contact] of [[both, target], [both, other], [one, other]] as const) {
        await expectStatus(t, alice, 'POST', `/api/v1/spaces/${space}/contacts`, 201, { contact_id: contact })
      }
      // a check-in records activity that names the contact
      const event = await createEvent(t, alice, { title: 'Door' })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id as number}/publish`, 204)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id as number}/attendees`, 201, {
        contact_id: other, status: 'confirmed'
      })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id as number}/attendees/${other}/check-in`, 204)
      const rule = (await expectStatus(t, alice, 'POST', '/api/v1/automation/rules', 201, {
        name: 'Watch',
        scope: 'CONTACT',
        scope_id: other,
        schedule: { event_type: 'contact.updated' },
        actions: [{ type: 'notify', to: 'creator', subject: 's', body: 'b' }]
      })).json()

      assert.equal((await merge(alice, target, { absorb: [other] })).statusCode, 200)

      for (const [space, expected] of [[both, [target]], [one, [target]]] as const) {
        const links = await getJson(t, alice, `/api/v1/spaces/${space}/contacts`)
        assert.deepEqual(links.items.map((l: Json) => l.contact_id), expected)
      }
      const activity = await getJson(t, alice, `/api/v1/spaces/${one}/activity`)
      assert.ok(activity.items.some((a: Json) => a.type === 'contact' && a.resource_id === target),
        JSON.stringify(activity))
      assert.ok(!JSON.stringify(activity).includes(other))
      const checkIns = (await getJson(t, alice, `/api/v1/events/${event.id as number}/activity`)).items
        .filter((a: Json) => a.kind === 'attendee.checked_in')
      assert.deepEqual(checkIns.map((a: Json) => [a.payload.contact_id, a.payload.merged_from]), [[target, other]])
      const moved = await getJson(t, alice, `/api/v1/automation/rules/${rule.id as string}`)
      assert.equal(moved.scope_id, target)
      assert.equal(moved.version, rule.version + 1)
      assert.equal(moved.creator_id, 'alice', 'the rule still acts as its creator')
    })

    void it('redirects a chain: A into B, then B into C, leaves A and B pointing at C', async () => {
      const alice = await newTenant(t).user('alice')
      const [a, b, c] = await contactsNamed(alice, ['A', 'B', 'C'])
      assert.equal((await merge(alice, b, { absorb: [a] })).statusCode, 200)
      assert.equal((await merge(alice, c, { absorb: [b] })).statusCode, 200)
      for (const gone of [a, b]) {
        const read = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${gone}` })
        assert.equal(read.statusCode, 308, read.body)
        assert.equal(read.headers.location, `/api/v1/contacts/${c}`)
      }
      // merging into an absorbed id names the contact it is now
      assertProblem(await merge(alice, a, { absorb: [c] }), 409, 'path.id', c)
      // absorbing one: named with the contact it is now
      const d = (await createContact(t, alice)).id as string
      const p = assertProblem(await merge(alice, d, { absorb: [b] }), 409, 'body.absorb[0]', c)
      assert.equal(p.errors[0].message, `merged into contact ${c}`)
      assertProblem(await merge(alice, c, { absorb: [a] }), 409, 'body.absorb[0]', c)
      // the target deleted: its redirects go with it
      await expectStatus(t, alice, 'DELETE', `/api/v1/contacts/${c}`, 204)
      await expectStatus(t, alice, 'GET', `/api/v1/contacts/${a}`, 404)
    })

    void it('answers writes to an absorbed id with 404, and a read of one to who cannot see the ' +
      'target with 404', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const admin = await tenant.user('root', ['admin'])
      const shared = (await createContact(t, alice)).id as string
      const personal = (await createContact(t, await tenant.user('alice'), { first_name: 'Mine' })).id as string
      // alice (of org-a) merges the organization's contact into her personal one (visible to her alone)
      const aliceAlone = await tenant.user('alice')
      assert.equal((await merge(aliceAlone, personal, { absorb: [shared] })).statusCode, 200)
      for (const who of [bob, admin]) {
        const read = await t.as(who, { method: 'GET', url: `/api/v1/contacts/${shared}` })
        assert.equal(read.statusCode, 404, read.body)
        assert.ok(!read.body.includes(personal), 'the target is never named to who cannot see it')
      }
      for (const [method, payload] of [['PATCH', { first_name: 'x' }], ['PUT', { is_favorite: false }],
        ['DELETE', undefined]] as const) {
        const res = await t.as(alice, {
          method, url: `/api/v1/contacts/${shared}`, ...(payload !== undefined ? { payload } : {})
        })
        assert.equal(res.statusCode, 404, `${method}: ${res.body}`)
      }
      assert.equal((await t.as(aliceAlone, { method: 'GET', url: `/api/v1/contacts/${shared}` })).statusCode, 308)
    })

    void it('refuses bad bodies with 400, naming each field, and moves nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const target = (await createContact(t, alice, { tags: ['t'] })).id as string
      const other = (await createContact(t, alice, { tags: ['o'] })).id as string
      const outsider = (await createContact(t, alice)).id as string
      const ids = (n: number) =>
        Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`)
      assertProblem(await merge(alice, target, { absorb: [target] }), 400, 'body.absorb[0]', target)
      assertProblem(await merge(alice, target, { absorb: [other, other.toUpperCase()] }), 400, 'body.absorb[1]')
      assertProblem(await merge(alice, target, { absorb: [other], fields: { email: outsider } }), 400,
        'body.fields.email', outsider)
      assertProblem(await merge(alice, target, { absorb: [other], fields: { tags: other } }), 400, 'body.fields.tags')
      assertProblem(await merge(alice, target, { absorb: [other], fields: { owner_id: other } }), 400,
        'body.fields.owner_id')
      assertProblem(await merge(alice, target, { absorb: [] }), 400, 'body.absorb')
      assertProblem(await merge(alice, target, { absorb: ids(MERGE_MAX + 1) }), 400, 'body.absorb')
      const thousand = assertProblem(await merge(alice, target, { absorb: ids(1000) }), 400, 'body.absorb')
      assert.match(JSON.stringify(thousand.errors), /expected number of items <= 20|<= 20/)
      assertProblem(await merge(alice, target, { absorb: ['not-a-uuid'] }), 400, 'body.absorb[0]')
      assertProblem(await merge(alice, target, { absorb: [other], owner: 'x' }), 400, 'body.owner')
      for (const id of [target, other]) {
        const c = await getJson(t, alice, `/api/v1/contacts/${id}`)
        assert.equal(c.tags.length, 1)
      }
      assert.equal((await outboxEvents(t, tenant.id, 'contact.merged')).length, 0)
    })

    void it('refuses contacts the caller may not merge as a PATCH of each would: 404, 403, 412, ' +
      'and moves nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const admin = await tenant.user('root', ['admin'])
      const viewer = await tenant.user('vera', ['viewer'], { orgId: 'org-a' })
      const stranger = await newTenant(t).user('alice', ['member'], { orgId: 'org-a' })
      const alices = (await createContact(t, alice, { first_name: 'A' })).id as string
      const bobs = (await createContact(t, bob, { first_name: 'B' })).id as string
      const bobsPersonal = (await createContact(t, await tenant.user('bob'), { first_name: 'BP' })).id as string
      const foreign = (await createContact(t, stranger, { first_name: 'F' })).id as string
      const event = await createEvent(t, alice)
      await insertAttendees(t, tenant.id, [{ event_id: event.id, contact_id: bobs, status: 'confirmed' }])

      // a contact of bob's that alice sees: 403 as her PATCH of it; bob's personal one and another tenant's: 404
      assertProblem(await merge(alice, alices, { absorb: [bobs] }), 403, 'body.absorb[0]', bobs)
      assertProblem(await merge(alice, bobs, { absorb: [alices] }), 403)
      assertProblem(await merge(alice, alices, { absorb: [bobsPersonal] }), 404, 'body.absorb[0]', bobsPersonal)
      assertProblem(await merge(alice, alices, { absorb: [foreign] }), 404, 'body.absorb[0]')
      assertProblem(await merge(stranger, alices, { absorb: [foreign] }), 404)
      assertProblem(await merge(alice, foreign, { absorb: [alices] }), 404)
      // unknown ones first, then the refused
      const mixed = assertProblem(await merge(alice, alices, { absorb: [bobs, foreign] }), 404)
      assert.deepEqual(mixed.errors.map((e: Json) => e.location), ['body.absorb[1]'])
      assertProblem(await merge(viewer, alices, { absorb: [bobs] }), 403)
      // the target is judged first, as a PATCH of it: its If-Match before the contacts it absorbs
      assertProblem(await merge(alice, alices, { absorb: [foreign] }, { 'if-match': '"99"' }), 412)
      assertProblem(await merge(admin, alices, { absorb: [bobs] }, { 'if-match': '"99"' }), 412)

      for (const id of [alices, bobs]) await expectStatus(t, bob, 'GET', `/api/v1/contacts/${id}`, 200)
      assert.deepEqual((await attendeeRows(t, tenant.id)).map(r => r.contact_id), [bobs])
      // an admin may merge contacts of the organization's members
      const merged = await merge(admin, alices, { absorb: [bobs] }, { 'if-match': '"1"' })
      assert.equal(merged.statusCode, 200, merged.body)
      assert.deepEqual((await attendeeRows(t, tenant.id)).map(r => r.contact_id), [alices])
    })

    void it('refuses a merge whose tags together pass the bound (409), moving nothing', async () => {
      const alice = await newTenant(t).user('alice')
      const tags = (p: string) => Array.from({ length: 30 }, (_, i) => `${p}${i}`)
      const target = (await createContact(t, alice, { tags: tags('a') })).id as string
      const other = (await createContact(t, alice, { tags: tags('b') })).id as string
      const p = assertProblem(await merge(alice, target, { absorb: [other] }), 409)
      assert.match(p.detail, /60 tags, more than 50/)
      await expectStatus(t, alice, 'GET', `/api/v1/contacts/${other}`, 200)
    })

    void it('replays a merge retried with its Idempotency-Key', async () => {
      const alice = await newTenant(t).user('alice')
      const target = (await createContact(t, alice)).id as string
      const other = (await createContact(t, alice, { email: 'o@example.org' })).id as string
      const headers = { 'idempotency-key': 'merge-1' }
      const first = await merge(alice, target, { absorb: [other] }, headers)
      assert.equal(first.statusCode, 200, first.body)
      const again = await merge(alice, target, { absorb: [other] }, headers)
      assert.equal(again.statusCode, 200, again.body)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), first.json())
      // without the key, the same merge is refused: the contact is absorbed already
      assertProblem(await merge(alice, target, { absorb: [other] }), 409, 'body.absorb[0]', target)
    })

    if (kind !== 'citus') {
      void it('shows a synced client the absorbed contacts as tombstones and the target as changed', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const target = (await createContact(t, alice, { first_name: 'T' })).id as string
        const a = (await createContact(t, alice, { first_name: 'A', city: 'Paris' })).id as string
        const b = (await createContact(t, alice, { first_name: 'B' })).id as string
        const bystander = (await createContact(t, alice, { first_name: 'X' })).id as string
        const replica = new Replica(t, alice, '/api/v1/contacts')
        await replica.sync()
        assert.equal(replica.rows.size, 4)
        assert.equal((await merge(alice, target, { absorb: [a, b] })).statusCode, 200)

        const delta = await getJson(t, alice, `/api/v1/contacts?sync_token=${replica.token ?? ''}`)
        // the target changed, the absorbed ones gone; a delta may repeat earlier changes (the bystander's creation)
        // while a transaction elsewhere in the cluster holds the token's xmin back
        const changed = new Map((delta.items as Json[]).map(c => [c.id as string, c]))
        assert.equal(changed.get(target)?.city, 'Paris')
        for (const id of changed.keys()) {
          assert.ok([target, bystander].includes(id), `only the target, or a repeat: ${id}`)
        }
        assert.deepEqual(delta.deleted.map((d: Json) => d.id).sort(), [a, b].sort())
        await replica.sync()
        assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, '/api/v1/contacts')))
        assert.deepEqual([...replica.rows.keys()].sort(), [target, bystander].sort())
      })
    }

    if (kind === 'pg') {
      void it('lets one of two merges of the same contacts at the same moment win; the other answers 409, ' +
        'nothing half-moved', async () => {
        for (let round = 0; round < 5; round++) {
          const tenant = newTenant(t)
          const alice = await tenant.user('alice')
          const target = (await createContact(t, alice, { tags: ['t'] })).id as string
          const other = (await createContact(t, alice, { tags: ['o'] })).id as string
          const events = await Promise.all([1, 2, 3].map(async () => (await createEvent(t, alice)).id as number))
          await insertAttendees(t, tenant.id, [
            ...events.map(e => ({ event_id: e, contact_id: other, status: 'confirmed' })),
            { event_id: events[0], contact_id: target, status: 'invited' }
          ])
          const answers = await Promise.all([
            merge(alice, target, { absorb: [other] }),
            merge(alice, target, { absorb: [other] })
          ])
          assert.deepEqual(answers.map(a => a.statusCode).sort(), [200, 409], answers.map(a => a.body).join('\n'))
          const refused = answers.find(a => a.statusCode === 409)?.json()
          assert.deepEqual(refused.errors,
            [{ location: 'body.absorb[0]', message: 'already merged into this contact', value: target }])
          const rows = await attendeeRows(t, tenant.id)
          assert.deepEqual(rows.map(r => [r.event_id, r.contact_id, r.status]).sort(),
            events.map(e => [e, target, 'confirmed']).sort())
          assert.deepEqual((await getJson(t, alice, `/api/v1/contacts/${target}`)).tags, ['t', 'o'])
          assert.equal((await outboxEvents(t, tenant.id, 'contact.merged')).length, 1)
        }
      })

      void it('never loses an attendance added to an absorbed contact during its merge: ' +
        'moved, or refused', async () => {
        for (let round = 0; round < 5; round++) {
          const tenant = newTenant(t)
          const alice = await tenant.user('alice')
          const [target, other] = await contactsNamed(alice, ['T', 'O'])
          const shared = (await createEvent(t, alice)).id as number
          const fresh = (await createEvent(t, alice)).id as number
          await insertAttendees(t, tenant.id, [
            { event_id: shared, contact_id: target, status: 'invited' },
            { event_id: shared, contact_id: other, status: 'tentative' }
          ])
          const [merged, added] = await Promise.all([
            merge(alice, target, { absorb: [other] }),
            t.as(alice, { method: 'POST', url: `/api/v1/events/${fresh}/attendees`, payload: { contact_id: other } })
          ])
          assert.equal(merged.statusCode, 200, merged.body)
          // first: the merge moves the new row; after it: the contact is gone and the add is refused
          assert.ok([201, 400, 404, 409].includes(added.statusCode), added.body)
          const rows = await attendeeRows(t, tenant.id)
          const onShared = rows.filter(r => r.event_id === shared).map(r => [r.contact_id, r.status])
          assert.deepEqual(onShared, [[target, 'tentative']])
          const onFresh = rows.filter(r => r.event_id === fresh).map(r => r.contact_id)
          assert.deepEqual(onFresh, added.statusCode === 201 ? [target] : [])
        }
      })

      void it('lets one of "A into B" and "B into A" at the same moment win; ' +
        'the other answers 409 naming the survivor', async () => {
        for (let round = 0; round < 5; round++) {
          const tenant = newTenant(t)
          const alice = await tenant.user('alice')
          const a = (await createContact(t, alice, { tags: ['a'] })).id as string
          const b = (await createContact(t, alice, { tags: ['b'] })).id as string
          const event = (await createEvent(t, alice)).id as number
          await insertAttendees(t, tenant.id, [
            { event_id: event, contact_id: a, status: 'confirmed' },
            { event_id: event, contact_id: b, status: 'tentative' }
          ])
          const answers = await Promise.all([merge(alice, b, { absorb: [a] }), merge(alice, a, { absorb: [b] })])
          assert.deepEqual(answers.map(x => x.statusCode).sort(), [200, 409], answers.map(x => x.body).join('\n'))
          const survivor = answers.find(x => x.statusCode === 200)?.json().id as string
          const gone = survivor === a ? b : a
          const refused = answers.find(x => x.statusCode === 409)?.json()
          assert.equal(refused.errors[0].value, survivor)
          assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${gone}` })).statusCode, 308)
          const rows = await attendeeRows(t, tenant.id)
          assert.deepEqual(rows.map(r => [r.contact_id, r.status]), [[survivor, 'confirmed']])
        }
      })
    }

    void it('never loses an attendance or a tag: per event, the contacts after are the persons ' +
      'before (property)', async () => {
      const statusArb = fc.constantFrom<AttendeeStatus>(
        'invited', 'confirmed', 'declined', 'tentative', 'checked_in', 'pending', 'waitlisted', 'no_show')
      const caseArb = fc.record({
        absorbed: fc.integer({ min: 1, max: 3 }),
        bystanders: fc.integer({ min: 0, max: 2 }),
        tags: fc.array(fc.subarray(['a', 'b', 'c', 'd', 'e', 'f']), { minLength: 6, maxLength: 6 }),
        // per event, per contact (target, absorbed…, bystanders…): absent or a status; its place among equals
        events: fc.array(
          fc.array(fc.option(fc.tuple(statusArb, fc.nat(1000)), { nil: undefined }), { minLength: 6, maxLength: 6 }),
          { minLength: 1, maxLength: 3 }
        )
      })
      await fc.assert(fc.asyncProperty(caseArb, async c => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const n = 1 + c.absorbed + c.bystanders
        const ids: string[] = []
        for (let i = 0; i < n; i++) {
          ids.push((await createContact(t, alice, { first_name: `C${i}`, tags: c.tags[i] })).id)
        }
        const target = ids[0] as string
        const absorbed = ids.slice(1, 1 + c.absorbed)
        const person = (id: string) => absorbed.includes(id) ? target : id

        const rows: Json[] = []
        const events: Array<{ id: number, capacity: number }> = []
        for (const statuses of c.events) {
          const id = (await createEvent(t, alice)).id as number
          const present = ids.flatMap((contact, i) => {
            const s = statuses[i]
            return s === undefined ? [] : [{ contact, status: s[0], order: s[1] * 10 + i }]
          })
          const seated = present.filter(p => p.status === 'confirmed' || p.status === 'checked_in').length
          // a full event (capacity = the seats taken), whose waitlist exists only when it is full
          const capacity = Math.max(seated, 1)
          let position = 0
          for (const p of present.sort((x, y) => x.order - y.order)) {
            const status = p.status === 'waitlisted' && seated === 0 ? 'invited' : p.status
            rows.push({
              event_id: id,
              contact_id: p.contact,
              status,
              waitlist_position: status === 'waitlisted' ? ++position : null,
              is_checked_in: status === 'checked_in',
              checked_in_at: status === 'checked_in' ? new Date(Date.UTC(2026, 0, 1, 0, 0, p.order)) : null
            })
          }
          await updateRows(t, tenant.id, 'events', { capacity, waitlist_enabled: true }, { id })
          events.push({ id, capacity })
        }
        await insertAttendees(t, tenant.id, rows)

        const res = await merge(alice, target, { absorb: absorbed })
        assert.equal(res.statusCode, 200, res.body)

        // tags: every tag of every merged contact, each once; bystanders untouched
        const expectedTags = new Set(c.tags.slice(0, 1 + c.absorbed).flat())
        assert.deepEqual(new Set(res.json().tags), expectedTags)
        for (const [i, id] of ids.entries()) {
          if (i > c.absorbed) assert.deepEqual((await getJson(t, alice, `/api/v1/contacts/${id}`)).tags, c.tags[i])
        }

        const after = await attendeeRows(t, tenant.id)
        for (const event of events) {
          const before = rows.filter(r => r.event_id === event.id)
          const now = after.filter(r => r.event_id === event.id)
          // the invariant: the contacts attending after are exactly the distinct persons attending before
          const persons = [...new Set(before.map(r => person(r.contact_id)))].sort()
          assert.deepEqual(now.map(r => r.contact_id).sort(), persons)
          assert.equal(now.length, persons.length)

          // each person's status: the strongest they had, then the seats freed go to the waitlist in order
          const strength = (x: Json) => STRENGTH[x.status as AttendeeStatus]
          const strongest = new Map<string, Json>()
          for (const r of before) {
            const p = person(r.contact_id)
            const best = strongest.get(p)
            const stronger = (x: Json, y: Json) => strength(x) > strength(y)
            const better = best === undefined || stronger(r, best) ||
              (r.status === best.status && (r.waitlist_position ?? 0) < (best.waitlist_position ?? 0)) ||
              (r.status === best.status && r.status === 'checked_in' && r.checked_in_at < best.checked_in_at)
            if (better) strongest.set(p, r)
          }
          const seatedNow =
            [...strongest.values()].filter(r => r.status === 'confirmed' || r.status === 'checked_in').length
          const line = [...strongest.entries()].filter(([, r]) => r.status === 'waitlisted')
            .sort(([, x], [, y]) => x.waitlist_position - y.waitlist_position).map(([p]) => p)
          const free = Math.max(0, event.capacity - seatedNow)
          const promoted = new Set(line.slice(0, free))
          const waiting = line.slice(free)
          for (const r of now) {
            const had = strongest.get(r.contact_id)
            const expected = promoted.has(r.contact_id) ? 'confirmed' : had?.status
            assert.equal(r.status, expected, `event ${event.id}, ${r.contact_id === target ? 'target' : r.contact_id}`)
            assert.equal(r.waitlist_position, r.status === 'waitlisted' ? waiting.indexOf(r.contact_id) + 1 : null)
            if (r.status === 'checked_in') assert.equal(r.checked_in_at?.getTime(), had?.checked_in_at?.getTime())
          }
        }
        // the absorbed contacts are gone, each redirecting to the target
        for (const id of absorbed) {
          const read = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${id}` })
          assert.equal(read.statusCode, 308, read.body)
        }
      }), { numRuns: NUM_RUNS, seed: 20_261_127 })
    })
  })
}

/**
 * Incremental sync of an event's attendees list (docs/integrations.md, "Incremental sync"): a client that applies
 * the deltas (rows upserted, tombstones dropped) ends equal to a full read, whatever writes interleave with its
 * reads; the list holds the occurrence's own attendees and those of its series; a token of another event, status
 * filter, caller, tenant, a forged one and one older than the window answer 410; a caller who cannot read the
 * attendees gets no row, with a token or without.
 *
 * The property test runs NUM_RUNS random sequences of up to 12 steps (a few seconds per database).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { fullRead, Replica, sorted, tokenBody } from '../../../test/helpers/sync-replica.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { issueSyncToken, sealKeys } from '../../platform/sync/sync.ts'
import { dailyStandup, withSeries } from '../series/series.fixtures.ts'
import { addManager, createEvent, insertAttendee, insertContacts, type Json } from './attendees.fixtures.ts'

const NUM_RUNS = 10

const attendeesOf = (eventId: number) => `/api/v1/events/${eventId}/attendees`

/** Statuses that take no seat: registration places them as asked. */
const STATUSES = ['invited', 'confirmed', 'declined', 'tentative'] as const
type Status = (typeof STATUSES)[number]

async function addAttendee (
  t: TestApp,
  caller: string,
  eventId: number,
  contactId: string,
  status: Status = 'invited'
) {
  return (await expectStatus(t, caller, 'POST', attendeesOf(eventId), 201, { contact_id: contactId, status })).json()
}

/** The attendee ids of a list by contact id, as a full read answers them (own rows; series rows by `series:`). */
async function idsByContact (t: TestApp, caller: string, eventId: number): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const row of (await fullRead(t, caller, attendeesOf(eventId))).values()) {
    out.set(row.event_id === null ? `series:${row.contact_id as string}` : row.contact_id, row.id)
  }
  return out
}

/** A series-level attendee removed, as the series module (or an operator) would: through SQL. */
async function removeSeriesAttendee (t: TestApp, tenantId: string, seriesId: number, contactId: string) {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx.deleteFrom('attendees').where('tenant_id', '=', tenantId).where('series_id', '=', seriesId)
      .where('event_id', 'is', null).where('contact_id', '=', contactId).execute()
  })
}

async function setSeriesStatus (t: TestApp, tenantId: string, seriesId: number, contactId: string, status: Status) {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx.updateTable('attendees').set({ status, updated_at: new Date() }).where('tenant_id', '=', tenantId)
      .where('series_id', '=', seriesId).where('event_id', 'is', null).where('contact_id', '=', contactId).execute()
  })
}

const delta = async (t: TestApp, caller: string, eventId: number, token: string | undefined, query = '') => {
  const res = await t.as(caller, {
    method: 'GET', url: `${attendeesOf(eventId)}?size=100&sync_token=${encodeURIComponent(token ?? '')}${query}`
  })
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  assert.equal(body.next_cursor, null)
  return body
}

/**
 * Asserts that a delta brings the rows `changed` and the tombstones of `removed` and, besides them, only repeats:
 * rows as the client holds them, tombstones of rows it does not hold. A transaction running elsewhere in the
 * cluster holds a token's xmin back, so a delta may bring changes made before the token (they come again); on
 * PGlite nothing else runs, and the delta is exactly the changes.
 */
function assertDelta (t: TestApp, body: Json, held: Map<string, Json>, changed: number[], removed: number[]): void {
  const items = body.items as Json[]
  const deleted = body.deleted as Json[]
  for (const d of deleted) assert.deepEqual(Object.keys(d).sort(), ['deleted', 'id'])
  for (const d of deleted) assert.ok(Number.isInteger(d.id) && d.deleted === true, JSON.stringify(d))
  const gone = deleted.map(d => d.id as number)
  if (t.kind === 'pglite') {
    assert.deepEqual(items.map(a => a.id).sort(), [...changed].sort())
    assert.deepEqual(gone.sort(), [...removed].sort())
    return
  }
  for (const id of changed) assert.ok(items.some(a => a.id === id), `the changed attendee ${id} comes`)
  for (const id of removed) assert.ok(gone.includes(id), `the removed attendee ${id} comes as a tombstone`)
  for (const a of items) if (!changed.includes(a.id)) assert.deepEqual(a, held.get(String(a.id)), 'only a repeat')
  for (const id of gone) if (!removed.includes(id)) assert.ok(!held.has(String(id)), 'only a repeat')
}

for (const kind of databases()) {
  void describe(`${kind}: event attendees incremental sync`, () => {
    const t = useTestApp(kind)

    void it('answers what changed since the token: changed and added rows, tombstones, ' +
      'nothing of another event', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      const other = await createEvent(t, alice)
      const [c1 = '', c2 = '', c3 = '', c4 = '', c5 = '', c6 = ''] = await insertContacts(t, tenant.id, 'alice', 6)
      await addAttendee(t, alice, event.id, c1)
      const a2 = await addAttendee(t, alice, event.id, c2, 'confirmed')
      await addAttendee(t, alice, event.id, c3)
      const otherC1 = await addAttendee(t, alice, other.id, c1)
      const replica = new Replica(t, alice, attendeesOf(event.id))
      await replica.sync(2)
      assert.equal(replica.rows.size, 3)
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, attendeesOf(event.id))))

      const url = attendeesOf(event.id)
      await expectStatus(t, alice, 'PATCH', `${url}/${c1}`, 200, { status: 'tentative' })
      await expectStatus(t, alice, 'DELETE', `${url}/${c2}`, 204)
      await addAttendee(t, alice, event.id, c4, 'declined')
      // c3 attends already: left as it is
      await expectStatus(t, alice, 'POST', `${url}/bulk`, 204, { contact_ids: [c5, c3], status: 'confirmed' })
      // the other event of the tenant: none of it in this list's delta
      const otherC6 = await addAttendee(t, alice, other.id, c6)
      await expectStatus(t, alice, 'PATCH', `${attendeesOf(other.id)}/${c1}`, 200, { status: 'declined' })
      await expectStatus(t, alice, 'DELETE', `${attendeesOf(other.id)}/${c1}`, 204)

      const ids = await idsByContact(t, alice, event.id)
      const changed = [c1, c4, c5].map(c => ids.get(c) ?? 0)
      const body = await delta(t, alice, event.id, replica.token)
      assertDelta(t, body, replica.rows, changed, [a2.id])
      assert.equal(typeof body.sync_token, 'string')
      const byContact = new Map((body.items as Json[]).map(a => [a.contact_id, a]))
      assert.equal(byContact.get(c1)?.status, 'tentative')
      assert.equal(byContact.get(c4)?.status, 'declined')
      assert.equal(byContact.get(c5)?.status, 'confirmed')
      // nothing of the other event: no row, no tombstone (its c1 was removed, its c6 added)
      assert.ok((body.items as Json[]).every(a => a.event_id === event.id))
      const elsewhere = [otherC1.id, otherC6.id]
      assert.ok((body.deleted as Json[]).every(d => !elsewhere.includes(d.id)), JSON.stringify(body.deleted))

      // the next delta brings only repeats (rows as the first delta left them) or nothing
      const held = new Map(replica.rows)
      for (const a of body.items as Json[]) held.set(String(a.id), a)
      held.delete(String(a2.id))
      const again = await delta(t, alice, event.id, body.sync_token)
      assertDelta(t, again, held, [], [])

      await replica.sync(2)
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, attendeesOf(event.id))))
    })

    void it('binds the status filter: an attendee leaving `confirmed` comes as a tombstone; ' +
      'the token answers no other list', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      const other = await createEvent(t, alice)
      const [c1 = '', c2 = '', c3 = ''] = await insertContacts(t, tenant.id, 'alice', 3)
      const a1 = await addAttendee(t, alice, event.id, c1, 'confirmed')
      const a2 = await addAttendee(t, alice, event.id, c2)
      await addAttendee(t, alice, other.id, c3, 'confirmed')
      const replica = new Replica(t, alice, attendeesOf(event.id), 'status=confirmed')
      await replica.sync()
      assert.deepEqual([...replica.rows.keys()], [String(a1.id)])

      await expectStatus(t, alice, 'PATCH', `${attendeesOf(event.id)}/${c1}`, 200, { status: 'declined' })
      await expectStatus(t, alice, 'PATCH', `${attendeesOf(event.id)}/${c2}`, 200, { status: 'confirmed' })
      const body = await delta(t, alice, event.id, replica.token, '&status=confirmed')
      // a1 is still an attendee, but out of the filter: a tombstone
      assertDelta(t, body, replica.rows, [a2.id], [a1.id])
      assert.deepEqual((body.items as Json[]).map(a => [a.id, a.status]), [[a2.id, 'confirmed']])
      await replica.sync()
      assert.deepEqual([...replica.rows.keys()], [String(a2.id)])
      assert.deepEqual(sorted(replica.rows),
        sorted(await fullRead(t, alice, attendeesOf(event.id), 'status=confirmed')))

      // a token of the confirmed attendees answers neither the whole list, another status nor another event's
      for (const url of [
        `${attendeesOf(event.id)}?sync_token=${replica.token ?? ''}`,
        `${attendeesOf(event.id)}?status=declined&sync_token=${replica.token ?? ''}`,
        `${attendeesOf(other.id)}?status=confirmed&sync_token=${replica.token ?? ''}`
      ]) {
        const res = await t.as(alice, { method: 'GET', url })
        assert.equal(res.statusCode, 410, `${url}: ${res.body}`)
        assert.match(res.headers['content-type'] as string, /application\/problem\+json/)
        assert.equal(res.json().items, undefined)
      }
    })

    void it('answers 410 to a forged, truncated, other caller\'s or too old token; ' +
      'a caller who cannot read gets no row', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const event = await createEvent(t, alice)
      const [c1 = '', c2 = ''] = await insertContacts(t, tenant.id, 'alice', 2, 'org-a')
      await addAttendee(t, alice, event.id, c1)
      await addAttendee(t, alice, event.id, c2)
      // bob reads the event's attendees (a check-in manager of it)
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      await addManager(t, tenant.id, event.id, 'bob', { role: 'event_manager:checkin' })
      assert.equal((await fullRead(t, bob, attendeesOf(event.id))).size, 2)
      // another tenant's alice, with an event of hers
      const outsider = await newTenant(t).user('alice', ['member'], { orgId: 'org-a' })
      const outsiderEvent = await createEvent(t, outsider)

      const first = await t.as(alice, { method: 'GET', url: `${attendeesOf(event.id)}?sync=true` })
      assert.equal(first.statusCode, 200, first.body)
      const token = first.json().sync_token as string
      const body = tokenBody(token)
      const forgedBody = Buffer.from(JSON.stringify({ ...body, x: String(BigInt(String(body.x)) + 7n) }))
        .toString('base64url')
      // the window is RETENTION_CHANGES less a day (config.syncWindowMs)
      const window = t.config.syncWindowMs ?? 0
      assert.ok(window > 0)
      const old = issueSyncToken({ x: body.x, t: Date.now() - window - 60_000 }, body.s, sealKeys(t.ctx.config))
      const cases: Array<[string, string, number, string]> = [
        ['forged', alice, event.id, `${forgedBody}.${token.split('.')[1] ?? ''}`],
        ['truncated', alice, event.id, token.slice(0, -3)],
        ['garbage', alice, event.id, 'not-a-token'],
        ['another user', bob, event.id, token],
        // event ids are the cluster's: another tenant has its own events (a token of another event, tenant, user)
        ['another tenant', outsider, outsiderEvent.id, token],
        ['too old', alice, event.id, old]
      ]
      for (const [name, caller, id, sent] of cases) {
        const res = await t.as(caller, {
          method: 'GET', url: `${attendeesOf(id)}?sync_token=${encodeURIComponent(sent)}`
        })
        assert.equal(res.statusCode, 410, `${name}: ${res.body}`)
        assert.match(res.headers['content-type'] as string, /application\/problem\+json/)
        assert.equal(res.json().status, 410)
      }
      // the same token, within its window, answers
      await delta(t, alice, event.id, token)
      // pages of a sync=true read go by cursor, by the cursors of its own pages
      const paged = await t.as(alice, { method: 'GET', url: `${attendeesOf(event.id)}?sync=true&page=2` })
      assert.equal(paged.statusCode, 400, paged.body)
      assert.equal(paged.json().errors[0].location, 'query.page')
      const plain = await t.as(alice, { method: 'GET', url: `${attendeesOf(event.id)}?size=1` })
      const mixed = await t.as(alice, {
        method: 'GET', url: `${attendeesOf(event.id)}?size=1&sync=true&cursor=${plain.json().next_cursor as string}`
      })
      assert.equal(mixed.statusCode, 400, mixed.body)
      assert.equal(mixed.json().errors[0].location, 'query.cursor')

      // who cannot read the attendees gets what the plain list answers, with a token or without: never a row
      const dan = await tenant.user('dan', ['member'], { orgId: 'org-a' })
      await addManager(t, tenant.id, event.id, 'dan', { permissions: ['event:edit'] })
      const sam = await tenant.user('sam', ['member'], { orgId: 'org-b' })
      const mallory = await newTenant(t).user('mallory', ['admin'])
      for (const [name, caller, status] of [['dan', dan, 403], ['sam', sam, 404], ['mallory', mallory, 404]] as const) {
        for (const query of ['', '?sync=true', `?sync_token=${token}`, '?sync_token=not-a-token',
          `?sync_token=${old}`]) {
          const res = await t.as(caller, { method: 'GET', url: `${attendeesOf(event.id)}${query}` })
          assert.equal(res.statusCode, status, `${name} ${query}: ${res.body}`)
          assert.equal(res.json().items, undefined, `${name} ${query}: no row`)
          assert.equal(res.json().deleted, undefined, `${name} ${query}: no tombstone`)
        }
      }
    })

    void it('brings the series attendees of an occurrence: added and removed after the token', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const made = await withSeries(t, alice, dailyStandup(3))
      const seriesId = made.event.series_id as number
      const [occ, sibling] = (made.occurrences as Json[]).map(o => o.id as number).slice(1)
      assert.ok(occ !== undefined && sibling !== undefined)
      const otherSeries = await withSeries(t, alice, dailyStandup(2, { title: 'Other' }))
      const [own = '', s1 = '', s2 = '', s3 = '', elsewhere = ''] = await insertContacts(t, tenant.id, 'alice', 5)
      await addAttendee(t, alice, occ, own)
      await insertAttendee(t, tenant.id, { series_id: seriesId, contact_id: s1, status: 'invited' })
      await insertAttendee(t, tenant.id, { series_id: seriesId, contact_id: s3, status: 'invited' })
      const replica = new Replica(t, alice, attendeesOf(occ))
      await replica.sync(2)
      const before = await idsByContact(t, alice, occ)
      assert.deepEqual([...before.keys()].sort(), [own, `series:${s1}`, `series:${s3}`].sort())

      await insertAttendee(t, tenant.id, { series_id: seriesId, contact_id: s2, status: 'confirmed' })
      await removeSeriesAttendee(t, tenant.id, seriesId, s1)
      await setSeriesStatus(t, tenant.id, seriesId, s3, 'tentative')
      // none of these is in the occurrence's list: rows of the sibling occurrence and of another series, added
      // (and some removed)
      await addAttendee(t, alice, sibling, elsewhere)
      const siblingGone = await addAttendee(t, alice, sibling, s1)
      await expectStatus(t, alice, 'DELETE', `${attendeesOf(sibling)}/${s1}`, 204)
      const otherSeriesId = otherSeries.event.series_id as number
      await insertAttendee(t, tenant.id, { series_id: otherSeriesId, contact_id: elsewhere, status: 'invited' })
      await insertAttendee(t, tenant.id, { series_id: otherSeriesId, contact_id: s1, status: 'invited' })
      const otherGone = (await idsByContact(t, alice, otherSeries.event.id)).get(`series:${s1}`)
      await removeSeriesAttendee(t, tenant.id, otherSeriesId, s1)

      const after = await idsByContact(t, alice, occ)
      const body = await delta(t, alice, occ, replica.token)
      const changed = [after.get(`series:${s2}`) ?? 0, after.get(`series:${s3}`) ?? 0]
      assertDelta(t, body, replica.rows, changed, [before.get(`series:${s1}`) ?? 0])
      for (const a of body.items as Json[]) {
        if (changed.includes(a.id)) assert.deepEqual([a.event_id, a.series_id], [null, seriesId])
      }
      assert.equal((body.items as Json[]).find(a => a.contact_id === s3)?.status, 'tentative')
      assert.ok((body.items as Json[]).every(a => a.contact_id !== elsewhere),
        'nothing of the sibling nor the other series')
      assert.ok(otherGone !== undefined)
      for (const d of body.deleted as Json[]) assert.ok(![siblingGone.id, otherGone].includes(d.id), JSON.stringify(d))

      await replica.sync(2)
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, attendeesOf(occ))))
      // the sibling occurrence's list has the series attendees too
      const siblingRows = await fullRead(t, alice, attendeesOf(sibling))
      assert.deepEqual([...siblingRows.values()].map(a => a.contact_id).sort(), [elsewhere, s2, s3].sort())
    })

    void it('keeps paging stable while writes go on: the next delta brings what the pages missed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      const contacts = await insertContacts(t, tenant.id, 'alice', 20)
      const made = contacts.slice(0, 12)
      const extra = contacts.slice(12)
      await expectStatus(t, alice, 'POST', `${attendeesOf(event.id)}/bulk`, 204, { contact_ids: made })
      const replica = new Replica(t, alice, attendeesOf(event.id))
      let step = 0
      const writes = async () => {
        step++
        const added = extra[step]
        if (added !== undefined) await addAttendee(t, alice, event.id, added, 'tentative')
        const victim = made[step]
        if (victim !== undefined) await expectStatus(t, alice, 'DELETE', `${attendeesOf(event.id)}/${victim}`, 204)
        await expectStatus(t, alice, 'PATCH', `${attendeesOf(event.id)}/${made[0] ?? ''}`, 200, {
          status: STATUSES[step % STATUSES.length]
        })
      }
      await replica.sync(2, writes)
      assert.ok(step >= 3, 'writes ran between the pages')
      await replica.sync(2, writes)
      await replica.sync(2)
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, attendeesOf(event.id))))
    })

    void it('ends a delta read while writes go on at every page: later changes wait for the next token', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      const [c1 = '', c2 = '', c3 = ''] = await insertContacts(t, tenant.id, 'alice', 3)
      await expectStatus(t, alice, 'POST', `${attendeesOf(event.id)}/bulk`, 204, { contact_ids: [c1, c2, c3] })
      const replica = new Replica(t, alice, attendeesOf(event.id))
      await replica.sync()
      const token = replica.token ?? ''
      const patch = async (contact: string, status: Status) =>
        await expectStatus(t, alice, 'PATCH', `${attendeesOf(event.id)}/${contact}`, 200, { status })
      await patch(c1, 'confirmed')
      await patch(c2, 'confirmed')
      // a client reads the delta a row a page while a check-in desk keeps changing two attendees
      let cursor: string | undefined
      let pages = 0
      let next: string | undefined
      while (pages < 12) {
        pages++
        const url =
          `${attendeesOf(event.id)}?size=1&sync_token=${token}${cursor === undefined ? '' : `&cursor=${cursor}`}`
        const body = (await expectStatus(t, alice, 'GET', url, 200)).json()
        if (body.next_cursor === null) {
          next = body.sync_token
          break
        }
        cursor = body.next_cursor
        await patch(c1, pages % 2 === 0 ? 'tentative' : 'declined')
        await patch(c2, pages % 2 === 0 ? 'tentative' : 'declined')
      }
      // a delta reads the changes up to the highest at its first page (readChanges, `upto`): those written while the
      // client pages come with the next token, so the delta ends; without the bound it never reached
      // `next_cursor: null` with two attendees changed between pages of size 1
      assert.equal(typeof next, 'string', `the delta ended (no next token after ${pages} pages of size 1)`)
    })

    void it('a replica applying deltas equals a full read, whatever the interleaving (property)', async () => {
      type Step =
        | { op: 'add', pick: number, status: Status }
        | { op: 'status', pick: number, status: Status }
        | { op: 'remove', pick: number }
        | { op: 'bulk', picks: number[], status: Status }
        | { op: 'series', pick: number, status: Status }
        | { op: 'elsewhere', pick: number }
        | { op: 'sync', who: number, size: number, during: boolean }
      const pick = fc.nat({ max: 7 })
      const status = fc.constantFrom(...STATUSES)
      const step: fc.Arbitrary<Step> = fc.oneof(
        fc.record({ op: fc.constant('add' as const), pick, status }),
        fc.record({ op: fc.constant('status' as const), pick, status }),
        fc.record({ op: fc.constant('remove' as const), pick }),
        fc.record({ op: fc.constant('bulk' as const), picks: fc.array(pick, { minLength: 1, maxLength: 4 }), status }),
        fc.record({ op: fc.constant('series' as const), pick, status }),
        fc.record({ op: fc.constant('elsewhere' as const), pick }),
        fc.record({
          op: fc.constant('sync' as const),
          who: fc.nat({ max: 2 }),
          size: fc.integer({ min: 1, max: 4 }),
          during: fc.boolean()
        })
      )
      await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async steps => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const made = await withSeries(t, alice, dailyStandup(2))
        const seriesId = made.event.series_id as number
        const [occ = 0, sibling = 0] = (made.occurrences as Json[]).map(o => o.id as number)
        // carol reads (and writes) the occurrence's attendees as its manager
        const carol = await tenant.user('carol')
        await addManager(t, tenant.id, occ, 'carol', { permissions: ['attendees:read', 'attendees:write'] })
        const contacts = await insertContacts(t, tenant.id, 'alice', 8)
        const contact = (i: number) => contacts[i % contacts.length] ?? ''
        const url = attendeesOf(occ)
        const replicas = [new Replica(t, alice, url), new Replica(t, carol, url),
          new Replica(t, alice, url, 'status=confirmed')]
        const inSeries = new Set<string>()
        const write = async (s: Exclude<Step, { op: 'sync' }>, caller = alice) => {
          // writes may be refused (409 already attending, 404 not attending): the state is what the API made it
          if (s.op === 'add') {
            await t.as(caller, { method: 'POST', url, payload: { contact_id: contact(s.pick), status: s.status } })
          } else if (s.op === 'status') {
            await t.as(caller, { method: 'PATCH', url: `${url}/${contact(s.pick)}`, payload: { status: s.status } })
          } else if (s.op === 'remove') {
            await t.as(caller, { method: 'DELETE', url: `${url}/${contact(s.pick)}` })
          } else if (s.op === 'bulk') {
            await expectStatus(t, caller, 'POST', `${url}/bulk`, 204, {
              contact_ids: s.picks.map(contact), status: s.status
            })
          } else if (s.op === 'series') {
            // a series attendee: added, its status changed, then removed
            const c = contact(s.pick)
            if (!inSeries.has(c)) {
              await insertAttendee(t, tenant.id, { series_id: seriesId, contact_id: c, status: s.status })
              inSeries.add(c)
            } else if (s.status !== 'invited') {
              await setSeriesStatus(t, tenant.id, seriesId, c, s.status)
            } else {
              await removeSeriesAttendee(t, tenant.id, seriesId, c)
              inSeries.delete(c)
            }
          } else {
            // another occurrence's own attendee: never in this list
            const res = await t.as(alice, {
              method: 'POST', url: attendeesOf(sibling), payload: { contact_id: contact(s.pick) }
            })
            if (res.statusCode === 409) {
              await t.as(alice, { method: 'DELETE', url: `${attendeesOf(sibling)}/${contact(s.pick)}` })
            }
          }
        }
        for (const s of steps) {
          if (s.op !== 'sync') {
            await write(s)
            continue
          }
          const replica = replicas[s.who] ?? replicas[0]
          // writes between the first pages of this sync: an add by carol, a status flip, a series attendee (only
          // between the first three: a delta read while writes go on at every page may not end, see the test above)
          let n = 0
          await replica?.sync(s.size, s.during
            ? async () => {
              if (++n > 3) return
              await write({ op: 'add', pick: n + s.who, status: STATUSES[n % 4] ?? 'invited' }, carol)
              await write({ op: 'status', pick: n, status: n % 2 === 0 ? 'confirmed' : 'declined' })
              await write({ op: 'series', pick: n + 3, status: 'confirmed' })
            }
            : undefined)
        }
        // one more sync of each, with no write meanwhile: every replica equals a full read
        for (const r of replicas) {
          await r.sync(3)
          assert.deepEqual(sorted(r.rows), sorted(await fullRead(t, r.caller, r.path, r.query)))
        }
      }), { numRuns: NUM_RUNS })
    })
  })
}

/**
 * Incremental sync of the events list (docs/integrations.md, "Incremental sync"): a member's replica applying the
 * deltas ends equal to a full read whatever the writes (visibility, organization, spaces, deletion, what an event
 * shows of its spaces and series); an event the member never saw never reaches a delta, not even as a tombstone;
 * a change of the member's reach (spaces, grants) or of the filters answers 410.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { updateRows } from '../../../test/helpers/rows.ts'
import { fullRead, Replica, sorted, tokenBody } from '../../../test/helpers/sync-replica.ts'
import { addManager, addMember, createEvent, insertSpace, publishEvent, type Json } from './events.fixtures.ts'

const EVENTS = '/api/v1/events'

const delta = async (t: TestApp, caller: string, token: string, query = '') => {
  const res = await t.as(caller, {
    method: 'GET', url: `${EVENTS}?${query}${query === '' ? '' : '&'}sync_token=${token}`
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

const ids = (rows: Json[]): number[] => rows.map(r => r.id as number).sort((a, b) => a - b)

for (const kind of databases()) {
  void describe(`${kind}: events incremental sync`, () => {
    const t = useTestApp(kind)

    void it('a member gets what changed in their sight, and tombstones of events they saw, never others', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const carol = await tenant.user('carol', ['member'], { orgId: 'org-b' })
      const open = await createEvent(t, alice, { title: 'open', visibility: 40 })
      const org = await createEvent(t, alice, { title: 'org', visibility: 30 })
      const narrowed = await createEvent(t, alice, { title: 'narrowed', visibility: 30 })
      const replicas = [new Replica(t, bob, EVENTS), new Replica(t, carol, EVENTS)]
      for (const r of replicas) await r.sync()
      assert.deepEqual(ids([...(replicas[0]?.rows.values() ?? [])]), [open.id, org.id, narrowed.id])
      assert.deepEqual([...(replicas[1]?.rows.keys() ?? [])], [String(open.id)])
      const tokens = replicas.map(r => r.token ?? '')

      const secret = await createEvent(t, alice, { title: 'secret', visibility: 10 })
      const later = await createEvent(t, alice, { title: 'later', visibility: 30 })
      await expectStatus(t, alice, 'PATCH', `${EVENTS}/${String(org.id)}`, 200, { title: 'org, renamed' })
      await expectStatus(t, alice, 'PATCH', `${EVENTS}/${String(later.id)}`, 200, { visibility: 10 })
      await expectStatus(t, alice, 'PATCH', `${EVENTS}/${String(secret.id)}`, 200, { title: 'still secret' })
      await expectStatus(t, alice, 'PATCH', `${EVENTS}/${String(narrowed.id)}`, 200, { visibility: 10 })
      await expectStatus(t, alice, 'DELETE', `${EVENTS}/${String(open.id)}`, 204)

      const bobs = await delta(t, bob, tokens[0] ?? '')
      assert.deepEqual(ids(bobs.items), [org.id])
      assert.equal(bobs.items[0].title, 'org, renamed')
      // `later` was in bob's sight when it was created (organization), then left it: a tombstone, as for `open`;
      // `narrowed` was in his sight before the token, and left it after (its visibility then is logged too);
      // `secret` was never his to see: not even its id
      assert.deepEqual(ids(bobs.deleted), [open.id, narrowed.id, later.id])
      const carols = await delta(t, carol, tokens[1] ?? '')
      assert.deepEqual(carols.items, [])
      assert.deepEqual(carols.deleted, [{ id: open.id, deleted: true }])
      for (const r of replicas) {
        await r.sync()
        assert.deepEqual(sorted(r.rows), sorted(await fullRead(t, r.caller, EVENTS)))
      }
    })

    void it('follows the spaces: an event linked to or unlinked from a member\'s space, a space renamed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const dave = await tenant.user('dave', ['member'])
      const space = await insertSpace(t, tenant.id, { title: 'Club', creator_id: 'alice' })
      const other = await insertSpace(t, tenant.id, { title: 'Other', creator_id: 'alice' })
      await addMember(t, tenant.id, space, 'dave')
      const linked = await createEvent(t, alice, { title: 'linked', visibility: 20 })
      const coming = await createEvent(t, alice, { title: 'coming', visibility: 20 })
      await expectStatus(t, alice, 'POST', `${EVENTS}/${String(linked.id)}/spaces`, 201, { space_id: space })
      await expectStatus(t, alice, 'POST', `${EVENTS}/${String(linked.id)}/spaces`, 201, { space_id: other })
      const replica = new Replica(t, dave, EVENTS)
      await replica.sync()
      assert.deepEqual([...replica.rows.keys()], [String(linked.id)])

      await expectStatus(t, alice, 'POST', `${EVENTS}/${String(coming.id)}/spaces`, 201, { space_id: space })
      await updateRows(t, tenant.id, 'spaces', { title: 'Other, renamed' }, { id: other })
      const first = await delta(t, dave, replica.token ?? '')
      assert.deepEqual(ids(first.items), [coming.id, linked.id].sort((a, b) => a - b))
      const shown = first.items.find((e: Json) => e.id === linked.id)
      assert.deepEqual(shown.spaces.map((s: Json) => s.title).sort(), ['Club', 'Other, renamed'])
      await replica.sync()

      await expectStatus(t, alice, 'DELETE', `${EVENTS}/${String(linked.id)}/spaces/${String(space)}`, 204)
      const second = await delta(t, dave, replica.token ?? '')
      assert.deepEqual(second.deleted, [{ id: linked.id, deleted: true }])
      await replica.sync()
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, dave, EVENTS)))
      assert.deepEqual([...replica.rows.keys()], [String(coming.id)])
    })

    void it('a series renamed brings its occurrences again', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const res = await t.as(alice, {
        method: 'POST',
        url: `${EVENTS}/with-series`,
        payload: {
          title: 'Weekly',
          visibility: 40,
          start_dt: '2026-07-10T10:00:00Z',
          end_dt: '2026-07-10T11:00:00Z',
          series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
        }
      })
      assert.equal(res.statusCode, 201, res.body)
      const occurrences = (res.json().occurrences as Json[]).map(o => o.id as number)
      const replica = new Replica(t, alice, EVENTS)
      await replica.sync()
      const seriesId = res.json().occurrences[0].series_id as number
      await updateRows(t, tenant.id, 'event_series', { title: 'Weekly, renamed' }, { id: seriesId })
      const changed = await delta(t, alice, replica.token ?? '')
      assert.deepEqual(ids(changed.items), [...occurrences].sort((a, b) => a - b))
      for (const e of changed.items as Json[]) assert.equal(e.series_title, 'Weekly, renamed')
      await replica.sync()
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, EVENTS)))
    })

    void it('answers 410 when the reach, the filters or the caller differ, or the token is forged', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const outsider = await newTenant(t).user('alice', ['member'], { orgId: 'org-a' })
      const event = await createEvent(t, alice, { title: 'mine' })
      const space = await insertSpace(t, tenant.id, { title: 'Club', creator_id: 'alice' })
      const first = await t.as(bob, { method: 'GET', url: `${EVENTS}?sync=true&status=draft` })
      assert.equal(first.statusCode, 200, first.body)
      const token = first.json().sync_token as string
      const body = tokenBody(token)
      const forged = Buffer.from(JSON.stringify({ ...body, x: String(BigInt(String(body.x)) + 7n) }))
        .toString('base64url')
      const cases: Array<[string, string, string, string]> = [
        ['forged', bob, 'status=draft', `${forged}.${token.split('.')[1] ?? ''}`],
        ['truncated', bob, 'status=draft', token.slice(0, -2)],
        ['other filters', bob, 'status=published', token],
        ['no filter', bob, '', token],
        ['another user', alice, 'status=draft', token],
        ['another tenant', outsider, 'status=draft', token]
      ]
      for (const [name, caller, query, sent] of cases) {
        const res = await t.as(caller, {
          method: 'GET', url: `${EVENTS}?${query}&sync_token=${encodeURIComponent(sent)}`
        })
        assert.equal(res.statusCode, 410, `${name}: ${res.body}`)
        assert.match(String(res.headers['content-type']), /application\/problem\+json/)
      }
      assert.equal((await delta(t, bob, token, 'status=draft')).items.length, 0)
      // bob joins a space: what he sees may change without any event changing, so his token is refused
      await addMember(t, tenant.id, space, 'bob')
      const joined = await t.as(bob, { method: 'GET', url: `${EVENTS}?status=draft&sync_token=${token}` })
      assert.equal(joined.statusCode, 410, joined.body)
      // and so on a grant: bob manages alice's event
      const again = (await t.as(bob, { method: 'GET', url: `${EVENTS}?sync=true` })).json().sync_token as string
      assert.equal((await delta(t, bob, again)).items.length, 0)
      await addManager(t, tenant.id, event.id, 'bob', { role: 'viewer' })
      const granted = await t.as(bob, { method: 'GET', url: `${EVENTS}?sync_token=${again}` })
      assert.equal(granted.statusCode, 410, granted.body)
      const fresh = new Replica(t, bob, EVENTS)
      await fresh.sync()
      assert.deepEqual([...fresh.rows.keys()], [String(event.id)])
      // a sync=true read pages by cursor from its first page
      const paged = await t.as(bob, { method: 'GET', url: `${EVENTS}?sync=true&page=2` })
      assert.equal(paged.statusCode, 400, paged.body)
      assert.equal(paged.json().errors[0].location, 'query.page')
    })

    void it('a filtered replica follows events into and out of its filter', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const draft = await createEvent(t, alice, { title: 'to publish' })
      const replica = new Replica(t, alice, EVENTS, 'status=published')
      await replica.sync()
      assert.equal(replica.rows.size, 0)
      await publishEvent(t, alice, draft.id)
      await replica.sync()
      assert.deepEqual([...replica.rows.keys()], [String(draft.id)])
      await expectStatus(t, alice, 'POST', `${EVENTS}/${String(draft.id)}/archive`, 204)
      await replica.sync()
      assert.equal(replica.rows.size, 0)
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, EVENTS, 'status=published')))
    })

    void it('replicas applying deltas equal a full read, whatever the interleaving (property)', async () => {
      type Step =
        | { op: 'create', who: number, visibility: number }
        | { op: 'patch', who: number, pick: number, title: string }
        | { op: 'visibility', who: number, pick: number, visibility: number }
        | { op: 'link', who: number, pick: number, space: number, on: boolean }
        | { op: 'delete', who: number, pick: number }
        | { op: 'rename', space: number, title: string }
        | { op: 'sync', who: number, size: number, during: boolean }
      const who = fc.integer({ min: 0, max: 1 })
      const pick = fc.nat({ max: 20 })
      const visibility = fc.constantFrom(10, 20, 30, 40)
      const space = fc.integer({ min: 0, max: 1 })
      const step: fc.Arbitrary<Step> = fc.oneof(
        fc.record({ op: fc.constant('create' as const), who, visibility }),
        fc.record({ op: fc.constant('patch' as const), who, pick, title: fc.string({ minLength: 1, maxLength: 8 }) }),
        fc.record({ op: fc.constant('visibility' as const), who, pick, visibility }),
        fc.record({ op: fc.constant('link' as const), who, pick, space, on: fc.boolean() }),
        fc.record({ op: fc.constant('delete' as const), who, pick }),
        fc.record({ op: fc.constant('rename' as const), space, title: fc.string({ minLength: 1, maxLength: 8 }) }),
        fc.record({
          op: fc.constant('sync' as const),
          who: fc.integer({ min: 0, max: 4 }),
          size: fc.integer({ min: 1, max: 4 }),
          during: fc.boolean()
        })
      )
      await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async steps => {
        const tenant = newTenant(t)
        // two writers of one organization; readers: a member of the first space, one of another organization, an admin
        const writers = [
          await tenant.user('alice', ['member'], { orgId: 'org-a' }),
          await tenant.user('bob', ['member'], { orgId: 'org-a' })
        ]
        const dave = await tenant.user('dave', ['member'], { orgId: 'org-b' })
        const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
        const spaces = [
          await insertSpace(t, tenant.id, { title: 'One', creator_id: 'alice' }),
          await insertSpace(t, tenant.id, { title: 'Two', creator_id: 'alice' })
        ]
        await addMember(t, tenant.id, spaces[0] ?? 0, 'dave')
        for (const w of ['alice', 'bob']) for (const s of spaces) await addMember(t, tenant.id, s, w)
        const replicas = [...writers, dave, admin].map(c => new Replica(t, c, EVENTS))
        replicas.push(new Replica(t, writers[1] ?? '', EVENTS, 'visibility=30'))
        const made: number[] = []
        const write = async (s: Exclude<Step, { op: 'sync' }>) => {
          if (s.op === 'rename') {
            await updateRows(t, tenant.id, 'spaces', { title: s.title }, { id: spaces[s.space] ?? 0 })
            return
          }
          const caller = writers[s.who] ?? ''
          if (s.op === 'create') {
            made.push((await createEvent(t, caller, { title: 'new', visibility: s.visibility })).id)
            return
          }
          const id = made[s.pick % Math.max(made.length, 1)]
          if (id === undefined) return
          const url = `${EVENTS}/${String(id)}`
          if (s.op === 'patch') await t.as(caller, { method: 'PATCH', url, payload: { title: s.title } })
          if (s.op === 'visibility') await t.as(caller, { method: 'PATCH', url, payload: { visibility: s.visibility } })
          if (s.op === 'delete') await t.as(caller, { method: 'DELETE', url })
          if (s.op === 'link' && s.on) {
            await t.as(caller, { method: 'POST', url: `${url}/spaces`, payload: { space_id: spaces[s.space] } })
          }
          if (s.op === 'link' && !s.on) {
            await t.as(caller, { method: 'DELETE', url: `${url}/spaces/${String(spaces[s.space])}` })
          }
        }
        for (const s of steps) {
          if (s.op !== 'sync') {
            await write(s)
            continue
          }
          let n = 0
          await replicas[s.who]?.sync(s.size, s.during
            ? async () => {
              n++
              await write({ op: 'create', who: n % 2, visibility: [20, 30, 40][n % 3] ?? 40 })
              await write({ op: 'link', who: 0, pick: n, space: 0, on: n % 2 === 1 })
            }
            : undefined)
        }
        for (const r of replicas) {
          await r.sync(3)
          assert.deepEqual(sorted(r.rows), sorted(await fullRead(t, r.caller, EVENTS, r.query)), r.caller + r.query)
        }
      }), { numRuns: 25 })
    })
  })
}

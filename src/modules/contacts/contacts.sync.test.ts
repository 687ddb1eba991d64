/**
 * Incremental sync of the contacts list (docs/integrations.md, "Incremental sync"): a client that applies the
 * deltas (rows upserted, tombstones dropped) ends equal to a full read, whatever writes interleave with its reads;
 * a token of another list, filter, caller, a forged one, one older than the window, one issued in the future and
 * one sealed with a key that is neither TOKEN_SECRET nor TOKEN_SECRET_PREVIOUS answer 410; nothing of another member
 * or tenant reaches a delta.
 *
 * The property test runs NUM_RUNS random sequences of up to 14 steps (a few seconds per database).
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import {
  deltaCursor, issueSyncToken, readDeltaCursor, readSyncToken, sealKeys, SYNC_CLOCK_SKEW_MS, type SealKeys
} from '../../platform/sync/sync.ts'
import { loadConfig } from '../../config.ts'
import { pruneRetention } from '../../platform/retention.ts'
import { ApiError } from '../../platform/http/errors.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { fullRead, Replica, sorted, tokenBody } from '../../../test/helpers/sync-replica.ts'

type Json = Record<string, any>

const NUM_RUNS = 15

const CONTACTS = '/api/v1/contacts'

const DAY = 86_400_000

/** A 410 of a token that is not this service's (not sealed with its keys). */
const notOurs = (e: unknown): boolean => e instanceof ApiError && e.status === 410 && /^not a sync token/.test(e.detail)

/** A 400 naming the cursor. */
const badCursor = (e: unknown): boolean =>
  e instanceof ApiError && e.status === 400 && e.errors[0]?.location === 'query.cursor'

const randomSecret = (): string => crypto.randomBytes(32).toString('base64url')

async function createContact (t: TestApp, caller: string, name: string): Promise<Json> {
  const res = await t.as(caller, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: name } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

for (const kind of databases()) {
  void describe(`${kind}: contacts incremental sync`, () => {
    const t = useTestApp(kind)

    void it('answers what changed since the token: changed rows, tombstones, then nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const carol = await tenant.user('carol', ['member'], { orgId: 'org-b' })
      const erin = await tenant.user('erin', ['member'])
      const a1 = await createContact(t, alice, 'A1')
      const a2 = await createContact(t, alice, 'A2')
      const replica = new Replica(t, alice, CONTACTS)
      await replica.sync()
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, CONTACTS)))

      const b1 = await createContact(t, bob, 'B1')
      await createContact(t, carol, 'C1')
      await createContact(t, erin, 'E1')
      const patched = await t.as(alice, {
        method: 'PATCH', url: `/api/v1/contacts/${a1.id as string}`, payload: { last_name: 'X' }
      })
      assert.equal(patched.statusCode, 200)
      assert.equal((await t.as(alice, { method: 'DELETE', url: `/api/v1/contacts/${a2.id as string}` })).statusCode,
        204)

      const res = await t.as(alice, { method: 'GET', url: `/api/v1/contacts?sync_token=${replica.token ?? ''}` })
      assert.equal(res.statusCode, 200, res.body)
      const delta = res.json()
      // exactly these (no contact of org-b nor erin's), and the next delta nothing: positions are given in commit
      // order, so no change comes twice
      assert.deepEqual(delta.items.map((c: Json) => c.id).sort(), [a1.id, b1.id].sort())
      assert.deepEqual(delta.deleted, [{ id: a2.id, deleted: true }])
      assert.equal(delta.next_cursor, null)
      assert.equal(delta.items.find((c: Json) => c.id === a1.id).last_name, 'X')

      const again = await t.as(alice, {
        method: 'GET', url: `/api/v1/contacts?sync_token=${delta.sync_token as string}`
      })
      assert.equal(again.statusCode, 200, again.body)
      assert.deepEqual([again.json().items, again.json().deleted], [[], []])
    })

    // PGlite has one connection: two transactions cannot overlap there
    void it('misses no change of a transaction that began before a token and committed after it', {
      skip: kind === 'pglite'
    }, async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      let release = (): void => {}
      const held = new Promise<void>(resolve => { release = resolve })
      let inserted = (): void => {}
      const written = new Promise<void>(resolve => { inserted = resolve })
      // a writer that inserts a contact, then stays open while another writer commits and a reader takes a token
      const slow = withTenant(t.ctx.db, { tenantId: tenant.id, userId: 'alice' }, async trx => {
        await trx.insertInto('contacts')
          .values({ tenant_id: tenant.id, first_name: 'Slow', owner_id: 'alice', org_id: 'org-a' }).execute()
        inserted()
        await held
      })
      await written
      const fast = await createContact(t, alice, 'Fast')
      const replica = new Replica(t, alice, CONTACTS)
      await replica.sync()
      assert.deepEqual([...replica.rows.keys()], [fast.id], 'the slow writer has not committed yet')
      release()
      await slow
      await replica.sync()
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, CONTACTS)))
      assert.equal(replica.rows.size, 2)
    })

    void it('binds the filters: a contact leaving the favorites comes as a tombstone', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const c = await createContact(t, alice, 'Fav')
      await t.as(alice, {
        method: 'PATCH', url: `/api/v1/contacts/${c.id as string}/favorite`, payload: { is_favorite: true }
      })
      const replica = new Replica(t, alice, CONTACTS, 'is_favorite=true')
      await replica.sync()
      assert.deepEqual([...replica.rows.keys()], [c.id])
      await t.as(alice, {
        method: 'PATCH', url: `/api/v1/contacts/${c.id as string}/favorite`, payload: { is_favorite: false }
      })
      await replica.sync()
      assert.equal(replica.rows.size, 0)
      // a token of the favorites does not answer the whole list
      const other = await t.as(alice, { method: 'GET', url: `/api/v1/contacts?sync_token=${replica.token ?? ''}` })
      assert.equal(other.statusCode, 410, other.body)
      assert.match(other.headers['content-type'] as string, /application\/problem\+json/)
    })

    void it('answers 410 to a forged, truncated, other caller\'s or too old token', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const outsider = await newTenant(t).user('alice', ['member'], { orgId: 'org-a' })
      const first = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?sync=true' })
      assert.equal(first.statusCode, 200, first.body)
      const token = first.json().sync_token as string
      const body = tokenBody(token)
      const forgedBody = Buffer.from(JSON.stringify({ ...body, x: String(BigInt(String(body.x)) + 7n) }))
        .toString('base64url')
      const window = t.config.syncWindowMs ?? 0
      // sealed with the app's key (TOKEN_SECRET, or the secret buildApp keeps in DATA_DIR): only its age is wrong
      const keys = sealKeys(t.ctx.config)
      const old = issueSyncToken({ x: body.x, t: Date.now() - window - 60_000 }, body.s, keys)
      const cases: Array<[string, string, string]> = [
        ['forged', alice, `${forgedBody}.${token.split('.')[1] ?? ''}`],
        ['truncated', alice, token.slice(0, -3)],
        ['garbage', alice, 'not-a-token'],
        ['another user', bob, token],
        ['another tenant', outsider, token],
        ['too old', alice, old]
      ]
      for (const [name, caller, sent] of cases) {
        const res = await t.as(caller, {
          method: 'GET', url: `/api/v1/contacts?sync_token=${encodeURIComponent(sent)}`
        })
        assert.equal(res.statusCode, 410, `${name}: ${res.body}`)
        assert.equal(res.json().status, 410)
      }
      // the same token, within its window, answers
      const ok = await t.as(alice, { method: 'GET', url: `/api/v1/contacts?sync_token=${token}` })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.throws(() => readSyncToken(token, body.s, new Date(Date.now() + window + 1000), window, keys),
        (e: unknown) => e instanceof ApiError && e.status === 410)
      // pages of a sync=true read go by cursor
      const paged = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?sync=true&page=2' })
      assert.equal(paged.statusCode, 400, paged.body)
      assert.equal(paged.json().errors[0].location, 'query.page')
      // and by the cursors of its own pages: a plain read's cursor would start the token after its first pages
      await createContact(t, alice, 'one')
      await createContact(t, alice, 'two')
      const plain = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?size=1' })
      const mixed = await t.as(alice, {
        method: 'GET', url: `/api/v1/contacts?size=1&sync=true&cursor=${plain.json().next_cursor as string}`
      })
      assert.equal(mixed.statusCode, 400, mixed.body)
      assert.equal(mixed.json().errors[0].location, 'query.cursor')
    })

    void it('answers 410 to a token issued in the future or sealed with another key, ' +
      '400 to such a cursor', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const first = await t.as(alice, { method: 'GET', url: `${CONTACTS}?sync=true` })
      assert.equal(first.statusCode, 200, first.body)
      const token = first.json().sync_token as string
      const body = tokenBody(token)
      const keys = sealKeys(t.ctx.config)
      const other: SealKeys = { current: randomSecret() }
      const sealed = (at: number, k = keys): string => issueSyncToken({ x: body.x, t: at }, body.s, k)
      const get = async (query: string) => await t.as(alice, { method: 'GET', url: `${CONTACTS}?${query}` })
      // the review's forgery: a year ahead, sealed as before this fix, with the key the source held
      const payload = Buffer.from(JSON.stringify({ ...body, t: Date.now() + 365 * DAY })).toString('base64url')
      const legacyMac = crypto.createHmac('sha256', 'collab-sync-token-v1').update(payload).digest('base64url')
      const [head, digest] = token.split('.') as [string, string]
      const cases: Array<[string, string]> = [
        ['a year in the future, sealed with the app\'s key', sealed(Date.now() + 365 * DAY)],
        ['past the clock-skew allowance', sealed(Date.now() + SYNC_CLOCK_SKEW_MS + 60_000)],
        ['sealed with another key', sealed(Date.now(), other)],
        ['sealed with the key the source held', `${payload}.${legacyMac.slice(0, 22)}`],
        // as many characters as the digest, but more bytes: refused, not a 500
        ['a digest with a character that is not ASCII', `${head}.\u00e9${digest.slice(1)}`]
      ]
      for (const [name, sent] of cases) {
        const res = await get(`sync_token=${encodeURIComponent(sent)}`)
        assert.equal(res.statusCode, 410, `${name}: ${res.body}`)
        assert.match(res.headers['content-type'] as string, /application\/problem\+json/)
        // a fixed text: nothing of a key or of the digest expected
        assert.match(res.json().detail, /^(not a sync token of this service|the sync token is outside the sync window)/)
        assert.ok(!res.body.includes(keys.current), name)
      }
      // a year ahead is refused with the log kept forever too (no window)
      assert.throws(() => readSyncToken(sealed(Date.now() + 365 * DAY), body.s, new Date(), null, keys),
        (e: unknown) => e instanceof ApiError && e.status === 410)
      // sealed with the app's key, ahead within the allowance (another instance's clock): answers
      const ahead = await get(`sync_token=${encodeURIComponent(sealed(Date.now() + 60_000))}`)
      assert.equal(ahead.statusCode, 200, ahead.body)

      // a cursor of changes sealed with another key: 400 naming the cursor; the same sealed with the app's key reads on
      const since = { x: String(body.x), t: Number(body.t) }
      const position = { from: since, to: since, after: { pos: '0', key: '0' }, page: 2 }
      const forged = await get(`sync_token=${encodeURIComponent(token)}&cursor=${deltaCursor(position, body.s, other)}`)
      assert.equal(forged.statusCode, 400, forged.body)
      assert.equal(forged.json().errors[0].location, 'query.cursor')
      const genuine = await get(`sync_token=${encodeURIComponent(token)}&cursor=${deltaCursor(position, body.s, keys)}`)
      assert.equal(genuine.statusCode, 200, genuine.body)
    })

    void it('keeps paging stable while writes go on: the next delta brings what the pages missed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
      const made: Json[] = []
      for (let i = 0; i < 12; i++) made.push(await createContact(t, alice, `P${i}`))
      const replica = new Replica(t, alice, CONTACTS)
      let step = 0
      const writes = async () => {
        step++
        await createContact(t, bob, `during-${step}`)
        const victim = made[step]
        if (victim !== undefined) {
          await t.as(alice, { method: 'DELETE', url: `/api/v1/contacts/${victim.id as string}` })
        }
        const first = made[0]
        if (first !== undefined) {
          await t.as(alice, {
            method: 'PATCH', url: `/api/v1/contacts/${first.id as string}`, payload: { nickname: `n${step}` }
          })
        }
      }
      await replica.sync(2, writes)
      assert.ok(step >= 3, 'writes ran between the pages')
      await replica.sync(2, writes)
      await replica.sync(2)
      assert.deepEqual(sorted(replica.rows), sorted(await fullRead(t, alice, CONTACTS)))
    })

    void it('a replica applying deltas equals a full read, whatever the interleaving (property)', async () => {
      type Step =
        | { op: 'create', who: number }
        | { op: 'patch', who: number, pick: number, name: string }
        | { op: 'favorite', who: number, pick: number, on: boolean }
        | { op: 'delete', who: number, pick: number }
        | { op: 'sync', who: number, size: number, during: boolean }
      const who = fc.integer({ min: 0, max: 2 })
      const pick = fc.nat({ max: 20 })
      const step: fc.Arbitrary<Step> = fc.oneof(
        fc.record({ op: fc.constant('create' as const), who }),
        fc.record({ op: fc.constant('patch' as const), who, pick, name: fc.string({ maxLength: 8 }) }),
        fc.record({ op: fc.constant('favorite' as const), who, pick, on: fc.boolean() }),
        fc.record({ op: fc.constant('delete' as const), who, pick }),
        fc.record({ op: fc.constant('sync' as const), who, size: fc.integer({ min: 1, max: 4 }), during: fc.boolean() })
      )
      await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async steps => {
        const tenant = newTenant(t)
        // two members of one organization and an admin, who see different sets
        const callers = [
          await tenant.user('alice', ['member'], { orgId: 'org-a' }),
          await tenant.user('bob', ['member'], { orgId: 'org-a' }),
          await tenant.user('erin', ['member'])
        ]
        const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
        const viewers = [...callers, admin]
        const replicas = viewers.map(c => new Replica(t, c, CONTACTS))
        const favorites = new Replica(t, callers[0] ?? '', CONTACTS, 'is_favorite=true')
        const ids: string[] = []
        const write = async (s: Exclude<Step, { op: 'sync' }>) => {
          const caller = callers[s.who] ?? ''
          const id = s.op === 'create' ? undefined : ids[s.pick % Math.max(ids.length, 1)]
          if (s.op === 'create') {
            ids.push((await createContact(t, caller, 'new')).id)
          } else if (id !== undefined && s.op === 'patch') {
            await t.as(caller, { method: 'PATCH', url: `/api/v1/contacts/${id}`, payload: { first_name: s.name } })
          } else if (id !== undefined && s.op === 'favorite') {
            await t.as(caller, {
              method: 'PATCH', url: `/api/v1/contacts/${id}/favorite`, payload: { is_favorite: s.on }
            })
          } else if (id !== undefined && s.op === 'delete') {
            await t.as(caller, { method: 'DELETE', url: `/api/v1/contacts/${id}` })
          }
        }
        for (const s of steps) {
          if (s.op !== 'sync') {
            await write(s)
            continue
          }
          const replica = replicas[s.who] ?? favorites
          // writes between the pages of this sync: a create and a favorite flip by another caller
          let n = 0
          await replica.sync(s.size, s.during
            ? async () => {
              await write({ op: 'create', who: (s.who + 1) % 3 })
              await write({ op: 'favorite', who: n++ % 2, pick: n, on: n % 2 === 0 })
            }
            : undefined)
        }
        // one more sync of each, with no write meanwhile: every replica equals a full read
        for (const r of [...replicas, favorites]) {
          await r.sync(3)
          assert.deepEqual(sorted(r.rows), sorted(await fullRead(t, r.caller, CONTACTS, r.query)))
        }
      }), { numRuns: NUM_RUNS })
    })

    // last: it prunes the whole log of this suite's database
    void it('the retention job keeps the log through the window, then prunes it', async () => {
      const alice = await newTenant(t).user('alice', ['member'], { orgId: 'org-a' })
      await createContact(t, alice, 'Old')
      const within = await pruneRetention(t.ctx.db, {
        retention: t.config.retention, now: new Date(Date.now() + (t.config.syncWindowMs ?? 0))
      })
      assert.equal(within.kinds.changes.deleted, 0)
      const past = await pruneRetention(t.ctx.db, {
        retention: t.config.retention, now: new Date(Date.now() + (t.config.retention.changes ?? 0) + 60_000)
      })
      assert.ok(past.kinds.changes.deleted >= 1, JSON.stringify(past.kinds.changes))
    })
  })
}

void describe('sync tokens: the keys of TOKEN_SECRET and TOKEN_SECRET_PREVIOUS', () => {
  const point = { x: '42', t: Date.now() }
  const now = new Date(point.t)
  const scope = 'sync:contacts:test'

  void it('accepts what the previous key sealed during a rotation, and nothing a third key sealed', () => {
    const [old, next, third] = [randomSecret(), randomSecret(), randomSecret()]
    const before = sealKeys(loadConfig({ TOKEN_SECRET: old }))
    const during = sealKeys(loadConfig({ TOKEN_SECRET: next, TOKEN_SECRET_PREVIOUS: old }))
    const after = sealKeys(loadConfig({ TOKEN_SECRET: next }))
    const stranger: SealKeys = { current: third }
    const read = (token: string, keys: SealKeys) => readSyncToken(token, scope, now, 30 * DAY, keys)
    // during the rotation: tokens of the old key and of the new one answer, a third key's do not
    assert.deepEqual(read(issueSyncToken(point, scope, before), during), point)
    assert.deepEqual(read(issueSyncToken(point, scope, during), during), point)
    assert.throws(() => read(issueSyncToken(point, scope, stranger), during), notOurs)
    // what is sealed during the rotation is sealed with the new key: it still answers once the old key is dropped
    assert.deepEqual(read(issueSyncToken(point, scope, during), after), point)
    assert.throws(() => read(issueSyncToken(point, scope, before), after), notOurs)
    // cursors of changes alike, refused as a 400 naming the cursor
    const position = { from: point, to: point, after: { pos: '7', key: 'a1' }, page: 2 }
    assert.deepEqual(readDeltaCursor(deltaCursor(position, scope, before), scope, point, during), position)
    assert.throws(() => readDeltaCursor(deltaCursor(position, scope, stranger), scope, point, during), badCursor)
  })

  void it('refuses a key shorter than 32 characters, naming the variable and not echoing the value', () => {
    const short = 'too-short-a-secret-of-31-chars!'
    for (const name of ['TOKEN_SECRET', 'TOKEN_SECRET_PREVIOUS']) {
      assert.throws(() => loadConfig({ TOKEN_SECRET: randomSecret(), [name]: short }), (e: unknown) =>
        e instanceof Error && e.message.startsWith(`invalid configuration: ${name} must be at least 32 characters`) &&
        !e.message.includes(short))
    }
    assert.throws(() => loadConfig({ TOKEN_SECRET_PREVIOUS: randomSecret() }),
      /^ConfigError: invalid configuration: TOKEN_SECRET_PREVIOUS needs TOKEN_SECRET to be set as well$/)
    assert.equal(loadConfig({ TOKEN_SECRET: 'x'.repeat(32) }).tokenSecret, 'x'.repeat(32))
  })
})

/**
 * The tenant audit log through the API: changes by a member, a guest and a request without a domain event are
 * recorded with actor, request id and address; personal values only as hashes; a refused write records nothing;
 * admins read with filters and cursor paging, export as JSON Lines and CSV (read back with csv-parse); the chain
 * verifies, and a tampered, removed or truncated entry is found (409) by the route and by `npm run audit:verify`;
 * retention cuts the chain's start and the rest still verifies; the application role cannot change entries.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'
import { parse } from 'csv-parse/sync'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { pruneAudit, sealPending, verifyAudit } from '../../platform/audit-chain.ts'
import { withSystem, withTenant } from '../../platform/db/tenant.ts'

interface Entry {
  seq: number
  action: string
  actor_type: string
  actor_id: string | null
  request_id: string | null
  address: string | null
  resource_type: string
  resource_id: string | null
  contact_id: string | null
  fields: Record<string, unknown>
  hash: string
  prev_hash: string
}

async function entries (t: TestApp, admin: string, query = ''): Promise<Entry[]> {
  const res = await t.as(admin, { method: 'GET', url: `/api/v1/audit-log?size=100${query}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().items as Entry[]
}

for (const kind of databases()) {
  describe(`audit log (${kind})`, () => {
    const t = useTestApp(kind)

    it('records who changed what, from where, with personal values only as hashes', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const alice = await tenant.user('alice')
      const email = `zoe-${crypto.randomUUID()}@example.test`
      const created = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts',
        headers: { 'x-forwarded-for': '203.0.113.9' },
        payload: { first_name: 'Zoë', last_name: 'Quartermain', email }
      })
      assert.equal(created.statusCode, 201, created.body)
      const contactId = String(created.json().id)
      const patched = await t.as(alice, {
        method: 'PATCH', url: `/api/v1/contacts/${contactId}`, payload: { last_name: 'Quill' }
      })
      assert.equal(patched.statusCode, 200, patched.body)

      const list = await entries(t, admin)
      const mine = list.filter(e => e.contact_id === contactId)
      assert.deepEqual(mine.map(e => e.action).sort(), ['contact.created', 'contact.updated'])
      for (const e of mine) {
        assert.equal(e.actor_type, 'user')
        assert.equal(e.actor_id, 'alice')
        assert.equal(e.resource_type, 'contact')
        assert.equal(e.resource_id, contactId)
        assert.match(e.request_id ?? '', /^[0-9a-f-]{36}$/)
        assert.ok((e.address ?? '').length > 0)
      }
      const text = JSON.stringify(list)
      assert.ok(!text.includes(email), 'no e-mail address in the log')
      assert.ok(!text.includes('Quartermain') && !text.includes('Quill'), 'no name in the log')
      const createdEntry = mine.find(e => e.action === 'contact.created')
      assert.match(String(createdEntry?.fields.email), /^hmac:[A-Za-z0-9_-]{22}$/)
      // the same value hashes alike, so a known value can be checked against the log by the service
      assert.deepEqual(mine.find(e => e.action === 'contact.updated')?.fields.fields, ['last_name'])
    })

    it('records nothing for a refused write, and a request without a domain event under its route', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const before = await entries(t, admin)
      const refused = await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { email: 'not-an-email' } })
      assert.equal(refused.statusCode, 400)
      assert.equal((await entries(t, admin)).length, before.length)

      const token = await t.as(admin, { method: 'POST', url: '/api/v1/feed-tokens', payload: { scope: 'personal' } })
      assert.equal(token.statusCode, 201, token.body)
      const list = await entries(t, admin, '&resource_type=feed-tokens')
      assert.equal(list.length, 1)
      assert.equal(list[0]?.action, 'POST /api/v1/feed-tokens')
      assert.equal(list[0]?.actor_id, 'root')
      assert.ok(!JSON.stringify(list).includes(String(token.json().token)), 'never the token')
    })

    it('records nothing for a refused write whose statement matched no row (another\'s token rotated)', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const bob = await tenant.user('bob')
      const token = await t.as(admin, { method: 'POST', url: '/api/v1/feed-tokens', payload: { scope: 'personal' } })
      const before = await entries(t, admin)
      const refused = await t.as(bob, { method: 'POST', url: `/api/v1/feed-tokens/${String(token.json().id)}/rotate` })
      assert.equal(refused.statusCode, 404)
      assert.deepEqual((await entries(t, admin)).map(e => e.seq), before.map(e => e.seq))
    })

    it('names a service account and its key as the actor of a change made with the key', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const account = await t.as(admin, {
        method: 'POST', url: '/api/v1/service-accounts', payload: { name: 'crm sync', role: 'member' }
      })
      assert.equal(account.statusCode, 201, account.body)
      const key = await t.as(admin, {
        method: 'POST', url: `/api/v1/service-accounts/${String(account.json().id)}/keys`, payload: {}
      })
      assert.equal(key.statusCode, 201, key.body)
      const created = await t.as(String(key.json().secret), {
        method: 'POST', url: '/api/v1/contacts', payload: { first_name: 'Machine-made' }
      })
      assert.equal(created.statusCode, 201, created.body)
      const [entry] = await entries(t, admin, `&contact_id=${String(created.json().id)}`)
      assert.equal(entry?.action, 'contact.created')
      assert.equal(entry?.actor_type, 'api_key')
      assert.equal(entry?.actor_id, `sa_${String(account.json().id)}`)
      assert.equal((entry as unknown as { via: string }).via, `key:${String(key.json().id)}`)
    })

    it('is read by tenant admins only, each tenant its own, with filters and cursor paging', async () => {
      const a = newTenant(t)
      const b = newTenant(t)
      const adminA = await a.user('root', ['admin'])
      const adminB = await b.user('root', ['admin'])
      const member = await a.user('bob')
      for (let i = 0; i < 5; i++) {
        const res = await t.as(member, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: `C${i}` } })
        assert.equal(res.statusCode, 201)
      }
      assert.equal((await t.as(member, { method: 'GET', url: '/api/v1/audit-log' })).statusCode, 403)
      assert.equal((await t.as(member, { method: 'GET', url: '/api/v1/audit-log/export' })).statusCode, 403)
      assert.equal((await t.as(member, { method: 'GET', url: '/api/v1/audit-log/verify' })).statusCode, 403)
      assert.equal((await entries(t, adminB)).length, 0, 'another tenant sees none')

      const byBob = await entries(t, adminA, '&actor_id=bob&action=contact.created')
      assert.equal(byBob.length, 5)
      assert.deepEqual(byBob.map(e => e.seq), [...byBob.map(e => e.seq)].sort((x, y) => y - x), 'newest first')
      const seen: number[] = []
      let cursor: string | null = null
      do {
        const url: string = `/api/v1/audit-log?size=2&actor_id=bob${cursor === null ? '' : `&cursor=${cursor}`}`
        const page = await t.as(adminA, { method: 'GET', url })
        assert.equal(page.statusCode, 200, page.body)
        seen.push(...(page.json().items as Entry[]).map(e => e.seq))
        cursor = page.json().next_cursor
      } while (cursor !== null)
      assert.deepEqual(seen, byBob.map(e => e.seq))
      assert.equal((await entries(t, adminA, '&until=2000-01-01T00:00:00Z')).length, 0)
      assert.equal((await entries(t, adminA, '&since=2000-01-01T00:00:00Z&actor_id=bob')).length, 5)
      const bad = await t.as(adminA, { method: 'GET', url: '/api/v1/audit-log?actor_type=robot' })
      assert.equal(bad.statusCode, 400)
      assert.match(bad.body, /actor_type/)
    })

    it('exports JSON Lines and CSV that hold the same entries as the list', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      for (let i = 0; i < 3; i++) {
        await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: `Ex${i}` } })
      }
      const list = await entries(t, admin)
      const jsonl = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/export' })
      assert.equal(jsonl.statusCode, 200)
      assert.match(String(jsonl.headers['content-type']), /^application\/jsonl/)
      const lines = jsonl.body.split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Entry)
      assert.deepEqual(lines.map(e => [e.seq, e.hash]), list.map(e => [e.seq, e.hash]))
      const url = '/api/v1/audit-log/export?format=csv&action=contact.created'
      const csv = await t.as(admin, { method: 'GET', url })
      assert.equal(csv.statusCode, 200)
      const rows = parse(csv.body, { columns: true, bom: true }) as Array<Record<string, string>>
      assert.equal(rows.length, 3)
      assert.deepEqual(rows.map(r => Number(r.seq)), list.filter(e => e.action === 'contact.created').map(e => e.seq))
      assert.equal(typeof JSON.parse(rows[0]?.fields ?? 'null'), 'object')
    })

    it('verifies its chain, and finds an entry changed, removed or cut off the end', async () => {
      const tampers: Array<[string, (tenantId: string) => Promise<void>]> = [
        ['hash', async id => {
          await withSystem(t.ctx.db, trx => sql`update audit_log set action = 'contact.viewed'
            where tenant_id = ${id} and seq = 2`.execute(trx))
        }],
        ['gap', async id => {
          await withSystem(t.ctx.db, trx => sql`delete from audit_log where tenant_id = ${id} and seq = 2`.execute(trx))
        }],
        ['head', async id => {
          await withSystem(t.ctx.db, trx => sql`delete from audit_log where tenant_id = ${id} and seq = 3`.execute(trx))
        }]
      ]
      for (const [kind, tamper] of tampers) {
        const tenant = newTenant(t)
        const admin = await tenant.user('root', ['admin'])
        for (let i = 0; i < 3; i++) {
          await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: `V${i}` } })
        }
        const ok = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify' })
        assert.equal(ok.statusCode, 200, ok.body)
        assert.equal(ok.json().valid, true)
        assert.equal(ok.json().checked, 3)
        assert.equal(ok.json().head.seq, 3)
        await tamper(tenant.id)
        const broken = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify' })
        assert.equal(broken.statusCode, 409, `${kind}: ${broken.body}`)
        assert.equal(broken.json().errors[0].value.kind, kind)
        assert.equal((await verifyAudit(t.ctx.db, tenant.id)).valid, false)
      }
    })

    it('walks a long chain in bounded windows: `next` continues, a change is found in its window', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      for (let i = 0; i < 5; i++) {
        await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: `W${i}` } })
      }
      await sealPending(t.ctx.db)
      const first = await verifyAudit(t.ctx.db, tenant.id, { max: 2 })
      assert.deepEqual([first.valid, first.complete, first.checked, first.next], [true, false, 2, 3])
      const rest = await verifyAudit(t.ctx.db, tenant.id, { from: first.next, max: 2 })
      assert.deepEqual([rest.valid, rest.complete, rest.checked, rest.next], [true, false, 2, 5])
      const last = await verifyAudit(t.ctx.db, tenant.id, { from: rest.next, max: 2 })
      assert.deepEqual([last.valid, last.complete, last.checked], [true, true, 1])
      // the route: a window from a position, and a position outside the chain refused
      const from4 = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify?from=4' })
      assert.equal(from4.statusCode, 200, from4.body)
      assert.deepEqual([from4.json().complete, from4.json().checked], [true, 2])
      const outside = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify?from=99' })
      assert.equal(outside.statusCode, 400, outside.body)
      assert.equal(outside.json().errors[0].location, 'query.from')
      // an entry changed in the second window: that window finds it, the first does not
      await withSystem(t.ctx.db, trx => sql`update audit_log set action = 'contact.viewed'
        where tenant_id = ${tenant.id} and seq = 4`.execute(trx))
      assert.equal((await verifyAudit(t.ctx.db, tenant.id, { max: 2 })).valid, true)
      const broken = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify?from=3' })
      assert.equal(broken.statusCode, 409, broken.body)
      assert.equal(broken.json().errors[0].value.seq, 4)
    })

    it('keeps its entries from the application role, and retention cuts the chain at its start', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      for (let i = 0; i < 4; i++) {
        await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: `R${i}` } })
      }
      await sealPending(t.ctx.db)
      await assert.rejects(withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        sql`update audit_log set action = 'x' where tenant_id = ${tenant.id}`.execute(trx)), /permission denied/)
      await assert.rejects(withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        sql`delete from audit_log where tenant_id = ${tenant.id}`.execute(trx)), /permission denied/)

      // two entries older than the cut: moved back in time by the owner, then sealed anew
      const old = new Date(Date.now() - 400 * 86_400_000)
      await withSystem(t.ctx.db, trx => sql`update audit_log set at = ${old}
        where tenant_id = ${tenant.id} and seq <= 2`.execute(trx))
      await withSystem(t.ctx.db, async trx => {
        await sql`update audit_log set seq = null, hash = null, prev_hash = null where tenant_id = ${tenant.id}`
          .execute(trx)
        await sql`delete from audit_heads where tenant_id = ${tenant.id}`.execute(trx)
      })
      await sealPending(t.ctx.db)
      const deleted = await pruneAudit(t.ctx.db, new Date(Date.now() - 365 * 86_400_000))
      assert.ok(deleted >= 2)
      const after = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify' })
      assert.equal(after.statusCode, 200, after.body)
      assert.equal(after.json().start.seq, 2)
      assert.equal(after.json().checked, 2)
      await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: 'Later' } })
      const later = await t.as(admin, { method: 'GET', url: '/api/v1/audit-log/verify' })
      assert.equal(later.json().checked, 3)
      assert.equal((await entries(t, admin)).length, 3)
    })

    if (kind === 'pg') {
      it('`npm run audit:verify` checks a tenant and fails on a broken chain', async () => {
        const tenant = newTenant(t)
        const admin = await tenant.user('root', ['admin'])
        await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: 'Cmd' } })
        await t.as(admin, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: 'Cmd2' } })
        const run = promisify(execFile)
        const env = { ...process.env, DATABASE_URL: t.config.databaseUrl ?? '', DATA_DIR: t.config.dataDir }
        const ok = await run('npx', ['tsx', 'scripts/audit-verify.ts', '--tenant', tenant.id], { env })
        const line = JSON.parse(ok.stdout.trim()) as { valid: boolean, checked: number }
        assert.equal(line.valid, true)
        assert.equal(line.checked, 2)
        await withSystem(t.ctx.db, trx => sql`update audit_log set address = '198.51.100.1'
          where tenant_id = ${tenant.id} and seq = 1`.execute(trx))
        await assert.rejects(run('npx', ['tsx', 'scripts/audit-verify.ts', '--tenant', tenant.id], { env }),
          (err: { code?: number, stdout?: string }) => err.code === 1 && /"kind":"hash"/.test(err.stdout ?? ''))
      })
    }
  })
}

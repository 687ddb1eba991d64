import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { SignJWT, generateKeyPair } from 'jose'
import { databases, freshDatabase, newTenant, useTestApp } from '../../test/helpers/build-app.ts'
import { buildApp } from '../app.ts'
import { ConfigError, loadConfig } from '../config.ts'
import { createDatabase } from './db/database.ts'
import { migrate } from './db/migrate.ts'
import { withTenant } from './db/tenant.ts'
import { createRateLimiter } from './rate-limit.ts'
import { compilePending, pendingCompilations } from './http/compile-on-demand.ts'
import { DEV_ISSUER, loadOrCreateDevKeys, signDevToken } from './auth/dev-keys.ts'

type Json = Record<string, any>

function assertProblem (
  res: { statusCode: number; headers: Record<string, unknown>; json: () => any },
  status: number
): Json {
  assert.equal(res.statusCode, status)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const body = res.json()
  assert.equal(body.status, status)
  assert.equal(typeof body.title, 'string')
  assert.equal(typeof body.detail, 'string')
  assert.equal(body.type, `http://localhost:8080/problems/${String(body.code)}`)
  assert.equal(body.$schema, 'http://localhost:8080/schemas/ErrorModel.json')
  assert.match(body.instance, /#[0-9a-f-]{36}$/)
  return body
}

for (const kind of databases()) {
  describe(`${kind}: platform`, () => {
    const t = useTestApp(kind)

    describe('errors', () => {
      it('answers an unknown route with a 404 ErrorModel', async () => {
        const res = await t.app.inject({ method: 'GET', url: '/api/v2/nothing' })
        assertProblem(res, 404)
      })

      it('answers a known path with another method with 405 and Allow', async () => {
        const token = await newTenant(t).user('alice')
        const res = await t.as(token, { method: 'PUT', url: '/api/v1/contacts' })
        assertProblem(res, 405)
        assert.equal(res.headers.allow, 'GET, POST')
      })

      it('answers 413 for a body over the limit and stores nothing', async () => {
        const token = await newTenant(t).user('alice')
        const res = await t.as(token, {
          method: 'POST',
          url: '/api/v1/contacts',
          payload: { notes: 'x'.repeat(1_100_000) }
        })
        assertProblem(res, 413)
        assert.equal((await t.as(token, { method: 'GET', url: '/api/v1/contacts' })).json().total, 0)
      })
    })

    describe('authentication', () => {
      it('answers 401 without a token, with a malformed header and with a forged token', async () => {
        assertProblem(await t.app.inject({ method: 'GET', url: '/api/v1/auth/me' }), 401)
        assertProblem(
          await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: 'Basic YTpi' } }),
          401
        )
        const { privateKey } = await generateKeyPair('ES256')
        const forged = await new SignJWT({ tenant_id: 't', roles: ['admin'] })
          .setProtectedHeader({ alg: 'ES256', kid: t.keys.kid }).setIssuer(DEV_ISSUER).setSubject('eve')
          .setExpirationTime('1h').sign(privateKey)
        const res = await t.as(forged, { method: 'GET', url: '/api/v1/auth/me' })
        assertProblem(res, 401)
        assert.equal(res.headers['www-authenticate'], 'Bearer')
      })

      it('refuses an expired token (past the 60 s leeway) and a token without the tenant claim', async () => {
        const expired = await t.token({ ttl: -120 })
        assertProblem(await t.as(expired, { method: 'GET', url: '/api/v1/auth/me' }), 401)
        const noTenant = await signDevToken(t.keys, { sub: 'alice', tenant: 'acme', tenantClaim: 'other_claim' })
        assertProblem(await t.as(noTenant, { method: 'GET', url: '/api/v1/auth/me' }), 401)
      })

      it('describes the caller with AuthContext', async () => {
        const token = await newTenant(t, 'acme').user('alice', ['viewer', 'admin'], { orgId: 'org-9' })
        const res = await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })
        assert.equal(res.statusCode, 200)
        const me = res.json()
        assert.equal(me.$schema, 'http://localhost:8080/schemas/AuthContext.json')
        assert.equal(me.user_id, 'alice')
        assert.equal(me.tenant_id, 'acme')
        assert.equal(me.email, 'alice@example.test')
        assert.deepEqual(me.roles, ['viewer', 'admin'])
        assert.equal(me.effective_role, 'admin')
        assert.ok(me.permissions.includes('contacts:write') && me.permissions.includes('tenant:admin'))
      })

      it('grants nothing to a token without a known role', async () => {
        const token = await newTenant(t).user('nobody', ['guest'])
        const me = (await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })).json()
        assert.equal(me.effective_role, 'none')
        assert.deepEqual(me.permissions, [])
        assertProblem(await t.as(token, { method: 'GET', url: '/api/v1/contacts' }), 403)
      })

      it('needs no token for health, schemas, the OpenAPI document and the docs', async () => {
        assert.equal((await t.app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
        assert.equal((await t.app.inject({ method: 'GET', url: '/schemas/Contact.json' })).statusCode, 200)
        assert.equal((await t.app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 200)
        assert.equal((await t.app.inject({ method: 'GET', url: '/docs/' })).statusCode, 200)
      })
    })

    describe('schemas and OpenAPI', () => {
      it('serves each named schema, and 404 for an unknown one', async () => {
        const res = await t.app.inject({ method: 'GET', url: '/schemas/ErrorModel.json' })
        assert.equal(res.statusCode, 200)
        const schema = res.json()
        assert.equal(schema.$id, 'http://localhost:8080/schemas/ErrorModel.json')
        assert.deepEqual(Object.keys(schema.properties).sort(), [
          '$schema',
          'code',
          'detail',
          'errors',
          'instance',
          'status',
          'title',
          'type'
        ])
        for (const name of ['Contact', 'PagedBodyContact', 'SearchOutputBody', 'AuthContext', 'LivenessOutputBody']) {
          assert.equal((await t.app.inject({ method: 'GET', url: `/schemas/${name}.json` })).statusCode, 200, name)
        }
        assertProblem(await t.app.inject({ method: 'GET', url: '/schemas/Nope.json' }), 404)
      })

      it('documents every route with an operationId, responses and bearer security', async () => {
        const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
        assert.equal(doc.openapi, '3.1.0')
        const ids = new Set<string>()
        for (const [p, ops] of Object.entries(doc.paths as Record<string, Json>)) {
          for (const [method, op] of Object.entries(ops)) {
            assert.ok(
              typeof op.operationId === 'string' && /^[a-z]+(-[a-z0-9]+)*$/.test(op.operationId),
              `${method} ${p} operationId`
            )
            assert.ok(!ids.has(op.operationId), `duplicate operationId ${op.operationId}`)
            ids.add(op.operationId)
            assert.ok(Object.keys(op.responses).some(c => c.startsWith('2')), `${method} ${p} success response`)
            // calendar feeds: a calendar app sends no header; the secret feed token is in the query
            const feed = p.endsWith('/calendar.ics')
            if (
              p.startsWith('/api/v1/') &&
              !p.startsWith('/api/v1/integrations/') &&
              !p.startsWith('/api/v1/public/') &&
              // guests have no account: their own mailed link is the credential (docs/guests.md)
              !p.startsWith('/api/v1/guest/') &&
              !feed
            ) {
              assert.deepEqual(op.security, [{ bearerAuth: [] }], `${method} ${p} security`)
              assert.ok(op.responses['401'] !== undefined, `${method} ${p} 401`)
            }
          }
        }
        assert.ok(ids.has('create-contact') && ids.has('get-health'))
      })

      it('compiles the validators and serializers of every route without an error', async () => {
        // they are compiled on demand; the server compiles the rest right after it listens
        await assert.doesNotReject(compilePending())
        assert.equal(pendingCompilations(), 0)
      })
    })

    describe('tenancy', () => {
      it('row-level security hides other tenants even from a query without a tenant filter', async () => {
        const a = newTenant(t)
        const b = newTenant(t)
        await t.as(await a.user('alice'), {
          method: 'POST',
          url: '/api/v1/contacts',
          payload: { first_name: 'A-only' }
        })
        await t.as(await b.user('bob'), { method: 'POST', url: '/api/v1/contacts', payload: { first_name: 'B-only' } })
        const rows = await withTenant(t.database.db, { tenantId: b.id }, async trx => {
          const who = await sql<{ role: string, superuser: boolean, bypass: boolean }>`
            select current_user as role, r.rolsuper as superuser, r.rolbypassrls as bypass
            from pg_roles r where r.rolname = current_user`.execute(trx)
          assert.deepEqual(who.rows[0], { role: 'collab_app', superuser: false, bypass: false })
          // Deliberately no tenant filter: RLS alone must keep tenant A out.
          return await trx.selectFrom('contacts').select(['tenant_id', 'first_name']).execute()
        })
        assert.deepEqual(rows.map(r => r.first_name), ['B-only'])
        assert.ok(rows.every(r => r.tenant_id === b.id))
        const none = await withTenant(t.database.db, { tenantId: '' }, trx =>
          trx.selectFrom('contacts').selectAll().execute()
        )
        assert.equal(none.length, 0, 'no tenant set: no rows')
      })

      it('lets text search use its trigram index under row-level security (LIKE is leakproof)', async () => {
        // Under RLS an index only serves LEAKPROOF operators (migration 0009, docs/performance.md).
        const r = await sql<{
          leakproof: boolean
        }>`select proleakproof as leakproof from pg_proc where proname = 'textlike'`.execute(t.database.db)
        assert.deepEqual(r.rows, [{ leakproof: true }])
      })

      it('row-level security refuses to write a row into another tenant', async () => {
        const a = newTenant(t)
        await assert.rejects(withTenant(t.database.db, { tenantId: a.id }, trx =>
          trx.insertInto('contacts').values({ tenant_id: 'someone-else', owner_id: 'x' }).execute()))
      })
    })

    describe('readiness', () => {
      it('answers /health and /ready while the database answers', async () => {
        const health = await t.app.inject({ method: 'GET', url: '/health' })
        assert.deepEqual(health.json(), {
          service: 'collaboration-service',
          status: 'ok',
          $schema: 'http://localhost:8080/schemas/LivenessOutputBody.json'
        })
        const ready = await t.app.inject({ method: 'GET', url: '/ready' })
        assert.equal(ready.statusCode, 200)
        // a Citus coordinator is PostgreSQL to the service
        assert.equal(ready.json().database, kind === 'citus' ? 'pg' : kind)
      })
    })

    describe('migrations', () => {
      it('applies nothing the second time and refuses an applied file that changed', async () => {
        const again = await migrate(t.database)
        assert.deepEqual(again.applied, [])
        assert.ok(again.skipped >= 4)
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-mig-'))
        fs.cpSync('migrations', dir, { recursive: true })
        fs.appendFileSync(path.join(dir, '0002_contacts.sql'), '\n-- edited\n')
        await assert.rejects(migrate(t.database, dir), /0002_contacts.sql was changed after it was applied/)
        fs.rmSync(dir, { recursive: true, force: true })
      })
    })
  })
}

describe('internal errors', () => {
  it('hide their details from the client', async () => {
    const db = await freshDatabase('pglite')
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-500-'))
    const { app } = await buildApp(loadConfig({ DATA_DIR: dataDir }), { database: db.handle, logger: false })
    app.get('/boom', { config: { auth: 'none' } }, async () => { throw new Error('select secret from pg_authid') })
    const res = await app.inject({ method: 'GET', url: '/boom' })
    assert.equal(res.statusCode, 500)
    assert.equal(res.json().detail, 'internal server error')
    assert.ok(!res.body.includes('secret') && !res.body.includes('stack'))
    await app.close()
    await db.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
})

describe('readiness without a database', () => {
  it('answers /ready with 503 while PostgreSQL is unreachable, /health still 200', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-down-'))
    const database = await createDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none' })
    const { app } = await buildApp(loadConfig({ DATA_DIR: dataDir }), { database, migrate: false, logger: false })
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
    const ready = await app.inject({ method: 'GET', url: '/ready' })
    assert.equal(ready.statusCode, 503)
    assert.equal(ready.json().status, 503)
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).sign(new Uint8Array(32))
    const write = await app.inject({
      method: 'GET',
      url: '/api/v1/contacts',
      headers: { authorization: `Bearer ${token}` }
    })
    assert.equal(write.statusCode, 401, 'HMAC tokens are refused')
    await app.close()
    await database.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
})

describe('rate limits', () => {
  it('answers 429 with Retry-After and an ErrorModel when the bucket is empty; ' +
    'other callers are unaffected', async () => {
    const db = await freshDatabase('pglite')
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-rl-'))
    const config = loadConfig({ DATA_DIR: dataDir, RATE_LIMIT_CAPACITY: '5', RATE_LIMIT_REFILL_PER_SEC: '1' })
    const { app } = await buildApp(config, { database: db.handle, logger: false })
    const { loadOrCreateDevKeys } = await import('./auth/dev-keys.ts')
    const keys = await loadOrCreateDevKeys(dataDir)
    const alice = await signDevToken(keys, { sub: 'alice', tenant: 't1' })
    const bob = await signDevToken(keys, { sub: 'bob', tenant: 't1' })
    const get = (token: string) =>
      app.inject({ method: 'GET', url: '/api/v1/contacts', headers: { authorization: `Bearer ${token}` } })
    const first = await get(alice)
    assert.equal(first.headers['ratelimit-limit'], '5')
    assert.equal(first.headers['ratelimit-remaining'], '4')
    const codes = []
    for (let i = 0; i < 8; i++) codes.push((await get(alice)).statusCode)
    assert.ok(codes.includes(429))
    const limited = await get(alice)
    assertProblem(limited, 429)
    assert.ok(Number(limited.headers['retry-after']) >= 1)
    assert.equal((await get(bob)).statusCode, 200)
    await app.close()
    await db.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const redisUrl = process.env.TEST_REDIS_URL
  it(
    'shares one bucket between two instances through Redis',
    { skip: redisUrl === undefined ? 'TEST_REDIS_URL not set' : false },
    async () => {
      const prefix = `rl-test-${crypto.randomUUID()}`
      const one = createRateLimiter({ capacity: 4, refillPerSec: 1, redisUrl, prefix })
      const two = createRateLimiter({ capacity: 4, refillPerSec: 1, redisUrl, prefix })
      const results = []
      for (let i = 0; i < 3; i++) {
        results.push(await one.consume('t:u', 1))
        results.push(await two.consume('t:u', 1))
      }
      assert.deepEqual(
        results.slice(0, 4).map(r => r.remaining),
        [3, 2, 1, 0]
      )
      assert.equal(results.filter(r => !r.allowed).length >= 1, true, 'the shared bucket runs out across instances')
      await one.close()
      await two.close()
    }
  )
})

describe('configuration', () => {
  it('refuses a bad value naming the variable', () => {
    assert.throws(
      () => loadConfig({ PORT: 'eighty' }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'PORT'
    )
    assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://x' }), /DATABASE_URL/)
    assert.throws(() => loadConfig({ LOG_LEVEL: 'loud' }), /LOG_LEVEL/)
    assert.throws(() => loadConfig({ RATE_LIMIT_CAPACITY: '0' }), /RATE_LIMIT_CAPACITY/)
    assert.equal(loadConfig({}).port, 8080)
    assert.equal(loadConfig({ PORT: '9000' }).baseUrl, 'http://localhost:9000')
  })

  it('stops the process at start with one line naming the variable', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, PORT: 'abc' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const code = await new Promise(resolve => child.on('exit', resolve))
    assert.equal(code, 1)
    assert.equal(stderr.trim().split('\n').length, 1)
    assert.match(stderr, /PORT/)
  })

  it('npm start: builds the bundle, starts on embedded PGlite with no configuration and serves the API', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-start-'))
    // what `npm start` runs: builds dist/ when the sources are newer, then runs dist/server.js
    const child = spawn(process.execPath, ['scripts/start.mjs'], {
      env: { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    try {
      const address = await new Promise<string>((resolve, reject) => {
        let out = ''
        const collect = (d: Buffer): void => {
          out += d.toString()
          const m = /listening on (http:\/\/[^\s"]+)/.exec(out)
          if (m?.[1] !== undefined) resolve(m[1])
        }
        child.stdout.on('data', collect)
        child.stderr.on('data', collect)
        child.on('exit', code => reject(new Error(`exited ${String(code)}: ${out}`)))
      })
      assert.equal((await fetch(`${address}/health`)).status, 200)
      assert.ok(fs.existsSync(path.join(dataDir, 'pgdata')))
      // the bundled validators, serializers, database and token verification at work
      const token = await signDevToken(await loadOrCreateDevKeys(dataDir), {
        sub: 'starter',
        tenant: 'start-tenant',
        roles: ['admin']
      })
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      const created = await fetch(`${address}/api/v1/contacts`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ first_name: 'Ada', email: 'ada@example.com' })
      })
      assert.equal(created.status, 201)
      const contact = await created.json() as Json
      const read = await fetch(`${address}/api/v1/contacts/${String(contact.id)}`, { headers })
      assert.equal(read.status, 200)
      assert.equal((await read.json() as Json).email, 'ada@example.com')
      const bad = await fetch(`${address}/api/v1/contacts`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ first_name: 5 })
      })
      assert.equal(bad.status, 400)
      assert.deepEqual(((await bad.json()) as Json).errors.map((e: Json) => e.location), ['body.first_name'])
      assert.equal((await fetch(`${address}/openapi.json`)).status, 200)
    } finally {
      child.kill('SIGTERM')
      await new Promise(resolve => child.on('exit', resolve))
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

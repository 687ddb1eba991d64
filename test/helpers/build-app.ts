/**
 * Test apps on real databases. `databases()` yields `pglite` always and `pg` when
 * TEST_DATABASE_URL is set; each suite gets a fresh in-memory PGlite or a fresh PostgreSQL
 * database, migrated once, and dropped afterwards. Tests tell tenants apart with random ids, so
 * tests of one suite never see each other's rows.
 *
 * @example
 *   for (const kind of databases()) {
 *     describe(`${kind}: contacts`, () => {
 *       const t = useTestApp(kind)
 *       it('creates', async () => { const res = await t.app.inject({ … }) })
 *     })
 *   }
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before } from 'node:test'
import pg from 'pg'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { loadConfig, type Config } from '../../src/config.ts'
import { createDatabase, type DatabaseHandle, type DatabaseKind } from '../../src/platform/db/database.ts'
import { loadOrCreateDevKeys, signDevToken, type DevKeys, type DevTokenClaims } from '../../src/platform/auth/dev-keys.ts'
import type { AppContext } from '../../src/platform/app-context.ts'

export function databases (): DatabaseKind[] {
  const only = process.env.TEST_DATABASES?.split(',')
  const kinds: DatabaseKind[] = ['pglite']
  if (process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== '') kinds.push('pg')
  return only === undefined ? kinds : kinds.filter(k => only.includes(k))
}

/** A fresh database of the given kind; `drop` removes it. */
export async function freshDatabase (kind: DatabaseKind): Promise<{ handle: DatabaseHandle, url: string | undefined, drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    const handle = await createDatabase({})
    return { handle, url: undefined, drop: () => handle.close() }
  }
  const adminUrl = process.env.TEST_DATABASE_URL ?? ''
  const name = `collab_test_${crypto.randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const handle = await createDatabase({ databaseUrl: url.toString(), poolSize: 10 })
  return {
    handle,
    url: url.toString(),
    drop: async () => {
      await handle.close()
      const c = new pg.Client({ connectionString: adminUrl })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    }
  }
}

export interface TestApp {
  app: FastifyInstance
  ctx: AppContext
  config: Config
  database: DatabaseHandle
  keys: DevKeys
  kind: DatabaseKind
  /** a bearer token for the claims (member of a fresh tenant unless given) */
  token (claims: Partial<DevTokenClaims>): Promise<string>
  /** inject with a bearer token */
  as (token: string, opts: InjectOptions): Promise<LightMyRequestResponse>
}

export interface TestAppOptions {
  env?: Record<string, string>
}

/** Builds an app on a fresh database before the suite and closes it after. */
export function useTestApp (kind: DatabaseKind, options: TestAppOptions = {}): TestApp {
  const t = {} as TestApp
  let drop: (() => Promise<void>) | undefined
  let dataDir: string | undefined
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-test-'))
    const db = await freshDatabase(kind)
    drop = db.drop
    const config = loadConfig({
      DATA_DIR: dataDir,
      BASE_URL: 'http://localhost:8080',
      RATE_LIMIT_CAPACITY: '1000000',
      RATE_LIMIT_REFILL_PER_SEC: '100000',
      WORKERS: 'false',
      ...(db.url !== undefined ? { DATABASE_URL: db.url } : {}),
      ...options.env
    })
    const built = await buildApp(config, { database: db.handle, logger: process.env.TEST_LOG === '1' ? { level: 'error' } : false })
    await built.app.ready()
    const keys = await loadOrCreateDevKeys(dataDir)
    Object.assign(t, {
      app: built.app,
      ctx: built.ctx,
      config,
      database: db.handle,
      keys,
      kind,
      token: (claims: Partial<DevTokenClaims>) => signDevToken(keys, {
        sub: claims.sub ?? `user-${crypto.randomUUID()}`,
        tenant: claims.tenant ?? `tenant-${crypto.randomUUID()}`,
        ...claims,
        tenantClaim: config.oidc.tenantClaim,
        rolesClaim: config.oidc.rolesClaim
      }),
      as: (token: string, opts: InjectOptions) => built.app.inject({ ...opts, headers: { ...opts.headers, authorization: `Bearer ${token}` } })
    })
  })
  after(async () => {
    await t.app?.close()
    await drop?.()
    if (dataDir !== undefined) fs.rmSync(dataDir, { recursive: true, force: true })
  })
  return t
}

/** A tenant with story-like helpers for its users. */
export function newTenant (t: TestApp, id = `tenant-${crypto.randomUUID()}`) {
  return {
    id,
    user: (sub: string, roles: string[] = ['member'], extra: Partial<DevTokenClaims> = {}) =>
      t.token({ sub, tenant: id, roles, email: `${sub}@example.test`, ...extra })
  }
}

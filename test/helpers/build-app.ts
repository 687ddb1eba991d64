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
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before } from 'node:test'
import pg from 'pg'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp, type BuildOptions } from '../../src/app.ts'
import { loadConfig, type Config } from '../../src/config.ts'
import { createDatabase, type DatabaseHandle, type DatabaseKind } from '../../src/platform/db/database.ts'
import {
  loadOrCreateDevKeys, signDevToken, type DevKeys, type DevTokenClaims
} from '../../src/platform/auth/dev-keys.ts'
import type { AppContext } from '../../src/platform/app-context.ts'
import { createDistributedDatabase, dropDistributedDatabase } from './citus-cluster.ts'

/**
 * The databases a suite runs on: `pglite` always, `pg` with TEST_DATABASE_URL, and `citus` with
 * TEST_CITUS_URL (a throwaway Citus cluster that scripts/run-tests.mjs starts when the extension is
 * installed: test/helpers/citus-cluster.ts). The service sees a Citus database as PostgreSQL
 * (`DatabaseKind` 'pg'): there is no Citus-only code path.
 */
export type TestDatabaseKind = DatabaseKind | 'citus'

export function databases (): TestDatabaseKind[] {
  const only = process.env.TEST_DATABASES?.split(',')
  const kinds: TestDatabaseKind[] = ['pglite']
  if (process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== '') kinds.push('pg')
  if (process.env.TEST_CITUS_URL !== undefined && process.env.TEST_CITUS_URL !== '') kinds.push('citus')
  return only === undefined ? kinds : kinds.filter(k => only.includes(k))
}

/** The Citus cluster of this run (TEST_CITUS_URL, TEST_CITUS_WORKERS), if any. */
export function citusNodes ():
  { coordinatorUrl: string; workerUrls: string[]; template: string | undefined } | undefined {
  const coordinatorUrl = process.env.TEST_CITUS_URL ?? ''
  if (coordinatorUrl === '') return undefined
  const template = process.env.TEST_CITUS_TEMPLATE
  return {
    coordinatorUrl,
    workerUrls: JSON.parse(process.env.TEST_CITUS_WORKERS ?? '[]') as string[],
    template: template === '' ? undefined : template
  }
}

/**
 * A fresh database of the given kind; `drop` removes it. It is a copy of the run's migrated template
 * (when scripts/run-tests.mjs made one: a PGlite data directory, a PostgreSQL or a Citus database), unless
 * `empty` asks for one with nothing but, on Citus, the extension and the workers (for tests of the
 * migrations themselves).
 */
export async function freshDatabase (
  kind: TestDatabaseKind,
  options: { empty?: boolean } = {}
): Promise<{ handle: DatabaseHandle; url: string | undefined; drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    // a copy of the run's migrated data directory (scripts/run-tests.mjs, test/helpers/pglite-template.ts)
    const template = options.empty === true ? '' : process.env.TEST_PGLITE_TEMPLATE ?? ''
    const handle = await createDatabase(
      template === '' ? {} : { pgliteLoadDataDir: new Blob([fs.readFileSync(template)]) }
    )
    return { handle, url: undefined, drop: () => handle.close() }
  }
  const name = `collab_test_${crypto.randomBytes(6).toString('hex')}`
  const citus = kind === 'citus' ? citusNodes() : undefined
  if (kind === 'citus' && citus === undefined) throw new Error('TEST_CITUS_URL is not set')
  const adminUrl = citus?.coordinatorUrl ?? process.env.TEST_DATABASE_URL ?? ''
  let url: string
  if (citus !== undefined) {
    url = await createDistributedDatabase(
      citus.coordinatorUrl,
      citus.workerUrls,
      name,
      options.empty === true ? undefined : citus.template
    )
  } else {
    // a copy of the run's migrated template (scripts/run-tests.mjs, test/helpers/pg-template.ts) unless `empty`
    const template = options.empty === true ? '' : process.env.TEST_PG_TEMPLATE ?? ''
    const admin = new pg.Client({ connectionString: adminUrl })
    await admin.connect()
    await admin.query(`create database ${name}${template === '' ? '' : ` template ${template}`}`)
    await admin.end()
    const u = new URL(adminUrl)
    u.pathname = `/${name}`
    url = u.toString()
  }
  const handle = await createDatabase({ databaseUrl: url, poolSize: 10 })
  return {
    handle,
    url,
    drop: async () => {
      await handle.close()
      if (citus !== undefined) return await dropDistributedDatabase(citus.coordinatorUrl, citus.workerUrls, name)
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
  kind: TestDatabaseKind
  /** a bearer token for the claims (member of a fresh tenant unless given) */
  token (claims: Partial<DevTokenClaims>): Promise<string>
  /** inject with a bearer token */
  as (token: string, opts: InjectOptions): Promise<LightMyRequestResponse>
}

export interface TestAppOptions {
  env?: Record<string, string>
  /** the app's logger (none unless TEST_LOG=1) */
  logger?: BuildOptions['logger']
  /** adds what the suite needs (a test-only route) to the app before it is ready */
  beforeReady?: (app: FastifyInstance) => void
}

/** Builds an app on a fresh database before the suite and closes it after. */
export function useTestApp (kind: TestDatabaseKind, options: TestAppOptions = {}): TestApp {
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
      GUEST_LIMIT_PER_ADDRESS: '1000000',
      GUEST_LIMIT_PER_EVENT: '1000000',
      WORKERS: 'false',
      ...(db.url !== undefined ? { DATABASE_URL: db.url } : {}),
      ...options.env
    })
    const built = await buildApp(config, {
      database: db.handle,
      logger: options.logger ?? (process.env.TEST_LOG === '1' ? { level: 'error' } : false)
    })
    options.beforeReady?.(built.app)
    await built.app.ready()
    const keys = await loadOrCreateDevKeys(dataDir)
    Object.assign(t, {
      app: built.app,
      ctx: built.ctx,
      config,
      database: db.handle,
      keys,
      kind,
      token: (claims: Partial<DevTokenClaims>) =>
        signDevToken(keys, {
          sub: claims.sub ?? `user-${crypto.randomUUID()}`,
          tenant: claims.tenant ?? `tenant-${crypto.randomUUID()}`,
          ...claims,
          tenantClaim: config.oidc.tenantClaim,
          rolesClaim: config.oidc.rolesClaim
        }),
      as: (token: string, opts: InjectOptions) =>
        built.app.inject({ ...opts, headers: { ...opts.headers, authorization: `Bearer ${token}` } })
    })
  })
  after(async () => {
    // every problem the suite's requests were answered with is listed by its operation in the document
    // (x-problem-codes, docs/errors.md): a code an operation does not declare fails the suite that met it
    const undeclared = [...(t.app?.undeclaredProblemCodes ?? [])]
    await t.app?.close()
    await drop?.()
    if (dataDir !== undefined) fs.rmSync(dataDir, { recursive: true, force: true })
    assert.deepEqual(undeclared, [], 'problem codes answered that their operations do not declare (problem-types.ts)')
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

export type Tenant = ReturnType<typeof newTenant>

/**
 * Callers of one tenant who see different parts of its data: an admin, alice and bob of org-a,
 * carol of org-b, and erin twice: `erinBefore` while she had no organization, then `erin` of org-a.
 */
export async function orgCallers (tenant: Tenant) {
  return {
    admin: await tenant.user('root', ['admin']),
    alice: await tenant.user('alice', ['member'], { orgId: 'org-a' }),
    bob: await tenant.user('bob', ['member'], { orgId: 'org-a' }),
    carol: await tenant.user('carol', ['member'], { orgId: 'org-b' }),
    erinBefore: await tenant.user('erin'),
    erin: await tenant.user('erin', ['member'], { orgId: 'org-a' })
  }
}

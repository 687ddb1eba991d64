/**
 * Database logins on PostgreSQL (runs when TEST_DATABASE_URL is set): request traffic may run
 * as an RLS-bound login (DATABASE_APP_URL), while work across tenants (workers, public pages)
 * runs as DATABASE_WORKER_URL's login (else DATABASE_URL's), which must pass row-level security.
 * A login that cannot stops the start with one line naming its variable, instead of workers that
 * silently find nothing to do.
 *
 * The roles are created on the test server with random names and dropped afterwards.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { ConfigError, loadConfig } from '../src/config.ts'
import { createDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { withTenant } from '../src/platform/db/tenant.ts'
import {
  deliverPendingNotifications, queueNotification, type Notification
} from '../src/platform/notifications/notifications.ts'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { runExecution } from '../src/modules/automation/automation.runner.ts'

const adminUrl = process.env.TEST_DATABASE_URL ?? ''

void describe(
  'pg: database logins of requests and of work across tenants',
  { skip: adminUrl === '' ? 'needs TEST_DATABASE_URL' : false },
  () => {
    const suffix = crypto.randomBytes(5).toString('hex')
    const dbName = `collab_logins_${suffix}`
    const roles = {
      app: `collab_t_app_${suffix}`,
      worker: `collab_t_worker_${suffix}`,
      weak: `collab_t_weak_${suffix}`
    }
    const urlAs = (user?: string): string => {
      const u = new URL(adminUrl)
      u.pathname = `/${dbName}`
      if (user !== undefined) {
        u.username = user
        u.password = 'secret-for-tests'
      }
      return u.toString()
    }
    const admin = async (statements: string[], url = adminUrl): Promise<void> => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try {
        for (const s of statements) await c.query(s)
      } finally {
        await c.end()
      }
    }
    const dirs: string[] = []
    const configWith = (env: Record<string, string>) => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-logins-'))
      dirs.push(dataDir)
      return loadConfig({ DATA_DIR: dataDir, WORKERS: 'false', DATABASE_URL: urlAs(), ...env })
    }

    before(async () => {
      await admin([`create database ${dbName}`])
      const handle = await createDatabase({ databaseUrl: urlAs() })
      await migrate(handle) // creates collab_app and grants it DML
      await handle.close()
      await admin([
        // the request login: confined by row-level security, as docs/deployment.md describes
        `create role ${roles.app} login password 'secret-for-tests' nosuperuser nobypassrls in role collab_app`,
        // the worker login: passes row-level security
        `create role ${roles.worker} login password 'secret-for-tests' nosuperuser bypassrls in role collab_app`,
        // it keeps the job queue's schema (pg-boss creates it on first start)
        `grant create on database ${dbName} to ${roles.worker}`,
        // a login that cannot work across tenants (like a non-superuser owner of the tables)
        `create role ${roles.weak} login password 'secret-for-tests' nosuperuser nobypassrls in role collab_app`
      ])
    })
    after(async () => {
      await admin([
        `drop database if exists ${dbName} with (force)`,
        ...Object.values(roles).map(r => `drop role if exists ${r}`)
      ])
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
    })

    void it('refuses to start, naming DATABASE_WORKER_URL, when the worker login cannot pass ' +
      'row-level security', async () => {
      const config = configWith({ DATABASE_APP_URL: urlAs(roles.app), DATABASE_WORKER_URL: urlAs(roles.weak) })
      await assert.rejects(
        buildApp(config, { logger: false }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.variable === 'DATABASE_WORKER_URL' &&
          err.message.includes(roles.weak) &&
          err.message.includes('BYPASSRLS')
      )
    })

    void it('refuses to start, naming DATABASE_URL, when that login has no BYPASSRLS and no worker ' +
      'login is given', async () => {
      const config = configWith({ DATABASE_URL: urlAs(roles.weak) })
      await assert.rejects(
        buildApp(config, { logger: false }),
        (err: unknown) =>
          err instanceof ConfigError && err.variable === 'DATABASE_URL' && /DATABASE_WORKER_URL/.test(err.message)
      )
    })

    void it('the process stops at start with one line naming the variable', async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-logins-'))
      dirs.push(dataDir)
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        env: {
          ...process.env,
          PORT: '0',
          DATA_DIR: dataDir,
          WORKERS: 'false',
          DATABASE_URL: urlAs(),
          DATABASE_APP_URL: urlAs(roles.app),
          DATABASE_WORKER_URL: urlAs(roles.weak)
        },
        stdio: ['ignore', 'pipe', 'pipe']
      })
      let stderr = ''
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString()
      })
      child.stdout.resume()
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000) // a server that started would never exit
      const code = await new Promise(resolve => child.on('exit', resolve))
      clearTimeout(killer)
      assert.equal(code, 1, `the server started: ${stderr}`)
      assert.equal(stderr.trim().split('\n').length, 1, stderr)
      assert.match(stderr, /^invalid configuration: DATABASE_WORKER_URL /)
    })

    for (const setup of [
      'a worker login of its own (DATABASE_WORKER_URL)',
      "DATABASE_URL's login (no DATABASE_WORKER_URL)"
    ] as const) {
      void it('with an RLS-bound request login, delivers a tenant\'s notification and finds a public ' +
        `page as ${setup}`, async () => {
        const config = configWith({
          DATABASE_APP_URL: urlAs(roles.app),
          ...(setup.startsWith('a worker') ? { DATABASE_WORKER_URL: urlAs(roles.worker) } : {})
        })
        const { app, ctx } = await buildApp(config, { logger: false })
        try {
          await app.ready()
          const who = async (db: typeof ctx.db): Promise<string> =>
            (await sql<{ u: string }>`select session_user as u`.execute(db)).rows[0]?.u ?? ''
          assert.equal(await who(ctx.db), roles.app, 'requests run as the RLS-bound login')
          assert.equal(
            await who(ctx.systemDb),
            setup.startsWith('a worker') ? roles.worker : new URL(adminUrl).username || 'postgres'
          )

          // a tenant's notification, queued by a request, is delivered by the cross-tenant worker
          const tenantId = `tenant-${crypto.randomUUID()}`
          const recipient = `ann-${suffix}@example.test`
          await withTenant(
            ctx.db,
            { tenantId },
            async trx =>
              await queueNotification(trx, {
                tenantId,
                channel: 'email',
                recipient,
                subject: 'Hello',
                body: 'a notification'
              })
          )
          const sent: Notification[] = []
          const r = await deliverPendingNotifications(ctx.db, {
            name: 'test',
            send: async n => {
              sent.push(n)
            }
          })
          assert.ok(r.sent >= 1, `delivered ${r.sent}`)
          assert.ok(
            sent.some(n => n.recipient === recipient && n.tenantId === tenantId),
            'the notification reached the sender'
          )
          const status = await withTenant(
            ctx.db,
            { tenantId },
            async trx =>
              await trx.selectFrom('notification_outbox').select('status').where('tenant_id', '=', tenantId).execute()
          )
          assert.deepEqual(
            status.map(s => s.status),
            ['sent']
          )

          // the public page resolves its space across tenants
          const keys = await loadOrCreateDevKeys(config.dataDir)
          const alice = await signDevToken(keys, { sub: 'alice', tenant: tenantId, roles: ['member'] })
          const auth = { authorization: `Bearer ${alice}` }
          /** a request of alice's: asserts `status`; the answer */
          const asAlice = async (method: 'GET' | 'POST', url: string, status: number, payload?: object) => {
            const res = await app.inject({ method, url, headers: auth, ...(payload !== undefined ? { payload } : {}) })
            assert.equal(res.statusCode, status, res.body)
            return res
          }
          const created = await asAlice('POST', '/api/v1/spaces', 201, { title: 'Open Garden', visibility: 40 })
          const id = created.json<{ id: number }>().id
          await asAlice('POST', `/api/v1/spaces/${id}/publish`, 204)
          const page = await app.inject({ method: 'GET', url: `/api/v1/public/spaces/${id}` })
          assert.equal(page.statusCode, 200, page.body)

          // the automation job queue starts on the worker login, takes a request's job and runs it
          const engine = ctx.engines.automation
          await engine.queue.ready()
          const event = await asAlice('POST', '/api/v1/events', 201, { title: 'Logged', visibility: 40 })
          const rule = await asAlice('POST', '/api/v1/automation/rules', 201, {
            name: 'log',
            scope: 'EVENT',
            scope_id: String(event.json<{ id: number }>().id),
            schedule: { event_type: 'schedule.cron', cron_expression: '0 0 1 1 *' },
            actions: [{ type: 'activity', message: 'ran' }]
          })
          const ruleId = rule.json<{ id: string }>().id
          await asAlice('POST', `/api/v1/automation/rules/${ruleId}/execute`, 202, {})
          const job = await (
            await engine.queue.ready()
          ).fetch<{ tenantId: string; executionId: string }>('automation-execution')
          assert.ok(job !== null && job.length === 1, "the request's job is in the queue")
          assert.equal((await runExecution(engine, job[0]?.data ?? { tenantId, executionId: '' })).outcome, 'succeeded')
          const history = await app.inject({
            method: 'GET',
            url: `/api/v1/automation/rules/${ruleId}/executions`,
            headers: auth
          })
          assert.deepEqual(
            history.json<{ items: Array<{ status: string }> }>().items.map(x => x.status),
            ['succeeded']
          )
        } finally {
          await app.close()
        }
      })
    }
  }
)

/**
 * PostgreSQL stopped and restarted under load (runs when TEST_DATABASE_URL is set). The service
 * runs on a throwaway cluster of its own (test/helpers/throwaway-pg.ts), never on the machine's:
 * writers and readers keep calling it while the cluster is stopped (once `fast`, once `immediate`,
 * i.e. a crash) and started again.
 *
 * Properties: while the database is away every answer is 503 ErrorModel with Retry-After, and
 * `GET /ready` says 503; the service recovers by itself (no restart); no answer is ever another
 * 5xx; every write acknowledged with 201 is present afterwards, read back by id.
 *
 * Errors that escape as uncaught exceptions (which would end a real server process: server.ts
 * shuts down on them) are recorded instead of failing the run, and checked by their own test.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createDatabase, type DatabaseHandle } from '../src/platform/db/database.ts'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { createThrowawayCluster, postgresBinDir, type ThrowawayCluster } from './helpers/throwaway-pg.ts'
import { problemIssues } from './helpers/problem.ts'

const enabled =
  process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== '' && postgresBinDir() !== undefined
const sleep = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))

void describe(
  'pg: database stopped and restarted while requests run',
  { skip: enabled ? false : 'needs TEST_DATABASE_URL and PostgreSQL binaries' },
  () => {
    let cluster: ThrowawayCluster
    let handle: DatabaseHandle
    let app: FastifyInstance
    let dataDir: string
    let token = ''
    /** uncaught exceptions seen while the database was stopped and started */
    const escaped: string[] = []
    let saved: NodeJS.UncaughtExceptionListener[] = []
    const capture: NodeJS.UncaughtExceptionListener = err => {
      escaped.push(`${err.name}: ${err.message}`)
    }

    before(async () => {
      cluster = await createThrowawayCluster()
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-faults-'))
      const config = loadConfig({
        DATA_DIR: dataDir,
        DATABASE_URL: cluster.url,
        WORKERS: 'false',
        RATE_LIMIT_CAPACITY: '1000000',
        RATE_LIMIT_REFILL_PER_SEC: '100000'
      })
      handle = await createDatabase({ databaseUrl: cluster.url, poolSize: 10 })
      ;({ app } = await buildApp(config, { database: handle, logger: false }))
      await app.ready()
      const keys = await loadOrCreateDevKeys(dataDir)
      token = await signDevToken(keys, { sub: 'writer', tenant: `tenant-${crypto.randomUUID()}`, roles: ['member'] })
    })
    after(async () => {
      await app?.close()
      await handle?.close()
      await cluster?.destroy()
      if (dataDir !== undefined) fs.rmSync(dataDir, { recursive: true, force: true })
    })

    void it('answers 503 while the database is away, recovers by itself, and loses no acknowledged write', async () => {
      const call = async (method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse> =>
        await app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${token}` },
          ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {})
        })
      const acknowledged = new Map<string, string>() // id → email
      const statuses = new Map<number, number>()
      const unexpected: string[] = []
      let phase: 'up' | 'down' | 'recovering' = 'up'
      const downStatuses = new Map<number, number>()
      const state = { running: true }

      const record = (res: LightMyRequestResponse, what: string): void => {
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        if (phase === 'down') downStatuses.set(res.statusCode, (downStatuses.get(res.statusCode) ?? 0) + 1)
        if (res.statusCode === 503) {
          const issues = problemIssues(res)
          if (issues.length > 0) unexpected.push(`${what} 503: ${issues.join('; ')}`)
          if (res.headers['retry-after'] === undefined) unexpected.push(`${what} 503 without Retry-After`)
        } else if (res.statusCode >= 300) {
          unexpected.push(`${what}: ${res.statusCode} ${res.body.slice(0, 200)}`)
        }
      }

      const writer = async (n: number): Promise<void> => {
        for (let i = 0; state.running; i++) {
          const email = `w${n}-${i}-${crypto.randomBytes(3).toString('hex')}@example.test`
          const res = await call('POST', '/api/v1/contacts', { email, first_name: `writer ${n}` })
          record(res, 'POST /api/v1/contacts')
          if (res.statusCode === 201) acknowledged.set(res.json<{ id: string }>().id, email)
          await sleep(phase === 'up' ? 5 : 50)
        }
      }
      const reader = async (): Promise<void> => {
        while (state.running) {
          const ids = [...acknowledged.keys()]
          const id = ids[Math.floor(Math.random() * ids.length)]
          const res = await call('GET', id === undefined ? '/api/v1/contacts' : `/api/v1/contacts/${id}`)
          record(res, 'GET /api/v1/contacts/:id')
          await sleep(phase === 'up' ? 5 : 50)
        }
      }
      const waitFor = async (what: string, ok: () => Promise<boolean>): Promise<void> => {
        for (let i = 0; i < 300; i++) {
          if (await ok()) return
          await sleep(100)
        }
        assert.fail(`gave up waiting: ${what}`)
      }
      const ready = async (): Promise<number> => (await app.inject({ method: 'GET', url: '/ready' })).statusCode

      saved = process.listeners('uncaughtException')
      process.removeAllListeners('uncaughtException')
      process.on('uncaughtException', capture)
      const workers = [...Array.from({ length: 6 }, async (_v, n) => await writer(n)), reader(), reader()]
      const cycles: string[] = []
      try {
        for (const mode of ['fast', 'immediate'] as const) {
          const before = acknowledged.size
          await waitFor('writes before the stop', async () => acknowledged.size >= before + 30)
          await cluster.stop(mode)
          phase = 'down'
          const readyDown = await app.inject({ method: 'GET', url: '/ready' })
          assert.equal(readyDown.statusCode, 503, 'GET /ready while the database is away')
          assert.deepEqual(problemIssues(readyDown), [])
          await waitFor('503 answers while the database is away', async () => (downStatuses.get(503) ?? 0) >= 20)
          await cluster.start()
          phase = 'recovering'
          await waitFor('GET /ready to answer 200 again', async () => (await ready()) === 200)
          const atRecovery = acknowledged.size
          phase = 'up'
          await waitFor('writes after the restart', async () => acknowledged.size >= atRecovery + 30)
          cycles.push(`${mode} stop: ${[...downStatuses.entries()].map(([s, c]) => `${s}×${c}`).join(' ')} while down`)
          downStatuses.clear()
        }
      } finally {
        state.running = false
        await Promise.all(workers)
        process.removeListener('uncaughtException', capture)
        for (const l of saved) process.on('uncaughtException', l)
      }

      // every acknowledged write is there, read back by id
      const missing: string[] = []
      for (const [id, email] of acknowledged) {
        const res = await call('GET', `/api/v1/contacts/${id}`)
        if (res.statusCode !== 200 || res.json<{ email: string }>().email !== email) {
          missing.push(`${id}: ${res.statusCode}`)
        }
      }
      console.log(
        `faults: ${escaped.length} uncaught exceptions; ${cycles.join('; ')}; all statuses ${[...statuses.entries()]
          .sort()
          .map(([s, c]) => `${s}×${c}`)
          .join(' ')}; ${acknowledged.size} acknowledged writes read back, ${missing.length} missing`
      )
      assert.deepEqual(unexpected.slice(0, 20), [])
      assert.deepEqual(missing, [])
      assert.ok((statuses.get(503) ?? 0) > 0)
    })

    void it('lets no error escape as an uncaught exception while the database restarts', () => {
      assert.deepEqual(escaped.slice(0, 5), [])
    })
  }
)

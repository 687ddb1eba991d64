/**
 * Backup and restore of the embedded PGlite database as docs/deployment.md ("Backups") says:
 * `npm run db:backup -- <file>` and `npm run db:restore -- <file>` while the service is stopped.
 * Data written, backed up, changed, restored: the original is read back and the change is gone.
 * Both refuse while the database is open, on PostgreSQL, and a damaged file changes nothing.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { run, type Run } from './helpers/process.ts'

async function npmRun (script: string, args: string[], env: Record<string, string>): Promise<Run> {
  const full: NodeJS.ProcessEnv = { ...process.env, ...env }
  for (const name of ['DATABASE_URL', 'DATABASE_APP_URL', 'DATABASE_WORKER_URL']) if (!(name in env)) delete full[name]
  return await run('npm', ['run', '--silent', script, '--', ...args], full)
}

void describe('pglite: npm run db:backup and db:restore', () => {
  let dataDir = ''
  let auth: Record<string, string> = {}
  const file = (): string => path.join(dataDir, '..', `${path.basename(dataDir)}-backup.tar.gz`)

  /** The service's app on DATA_DIR, for `fn`, closed after it (as a stopped service). */
  const withService = async <T>(
    fn: (
      inject: (
        method: 'GET' | 'POST' | 'DELETE',
        url: string,
        payload?: Record<string, unknown>
      ) => Promise<{ status: number; body: Record<string, unknown> }>
    ) => Promise<T>
  ): Promise<T> => {
    const { app } = await buildApp(loadConfig({ DATA_DIR: dataDir, WORKERS: 'false' }), { logger: false })
    try {
      await app.ready()
      return await fn(async (method, url, payload) => {
        const res = await app.inject({ method, url, headers: auth, ...(payload !== undefined ? { payload } : {}) })
        return { status: res.statusCode, body: res.body === '' ? {} : res.json<Record<string, unknown>>() }
      })
    } finally {
      await app.close()
    }
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-backup-'))
    const token = await signDevToken(await loadOrCreateDevKeys(dataDir), {
      sub: 'keeper',
      tenant: 'tenant-backup',
      roles: ['member']
    })
    auth = { authorization: `Bearer ${token}` }
  })
  after(() => {
    fs.rmSync(file(), { force: true })
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  void it('backs up, and a restore after a change reads the original back', async () => {
    const original = await withService(async (inject) => {
      const created = await inject('POST', '/api/v1/contacts', { first_name: 'Ada', email: 'ada@example.test' })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      // while the service has the database open, the backup refuses
      const refused = await npmRun('db:backup', [file()], { DATA_DIR: dataDir })
      assert.equal(refused.code, 1, refused.stdout + refused.stderr)
      assert.match(refused.stderr, /postmaster\.pid\): stop the service first/)
      assert.equal(fs.existsSync(file()), false)
      return String(created.body.id)
    })

    const backup = await npmRun('db:backup', [file()], { DATA_DIR: dataDir })
    assert.equal(backup.code, 0, backup.stdout + backup.stderr)
    assert.match(backup.stdout, /^backed up .* \(\d+ migrations, the last \d{4}_\w+\.sql\) to .* \(\d+ bytes\)\n$/)
    const again = await npmRun('db:backup', [file()], { DATA_DIR: dataDir })
    assert.equal(again.code, 1, 'a backup never overwrites a file')

    // the change the restore takes back
    const added = await withService(async (inject) => {
      assert.equal((await inject('DELETE', `/api/v1/contacts/${original}`)).status, 204)
      const created = await inject('POST', '/api/v1/contacts', { first_name: 'Grace', email: 'grace@example.test' })
      assert.equal(created.status, 201)
      return String(created.body.id)
    })

    const restored = await npmRun('db:restore', [file()], { DATA_DIR: dataDir })
    assert.equal(restored.code, 0, restored.stdout + restored.stderr)
    assert.match(restored.stdout, /the database it replaced is in .*pgdata\.before-restore-/)
    await withService(async (inject) => {
      const read = await inject('GET', `/api/v1/contacts/${original}`)
      assert.equal(read.status, 200, JSON.stringify(read.body))
      assert.equal(read.body.first_name, 'Ada')
      assert.equal(
        (await inject('GET', `/api/v1/contacts/${added}`)).status,
        404,
        'the change after the backup is gone'
      )
    })
    // the replaced database is kept beside it
    assert.equal(fs.readdirSync(dataDir).filter(f => f.startsWith('pgdata.before-restore-')).length, 1)
  })

  void it('a damaged file changes nothing, and PostgreSQL is refused', async () => {
    const damaged = path.join(dataDir, 'damaged.tar.gz')
    fs.writeFileSync(damaged, Buffer.from('not a backup'))
    const before = fs.readdirSync(path.join(dataDir, 'pgdata')).sort()
    const restore = await npmRun('db:restore', [damaged], { DATA_DIR: dataDir })
    assert.equal(restore.code, 1, restore.stdout + restore.stderr)
    assert.match(restore.stderr, /is not a database backup that opens/)
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'pgdata')).sort(), before)
    assert.deepEqual(fs.readdirSync(dataDir).filter(f => f.includes('.restoring-')), [])

    const pg = await npmRun('db:backup', [path.join(dataDir, 'pg.tar.gz')], {
      DATA_DIR: dataDir,
      DATABASE_URL: 'postgres://collab@127.0.0.1:5432/collab'
    })
    assert.equal(pg.code, 1)
    assert.match(pg.stderr, /DATABASE_URL is set: back up PostgreSQL with pg_dump/)
  })
})

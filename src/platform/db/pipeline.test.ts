/**
 * The pipelined pool (pipeline.ts) on PostgreSQL, when `databases()` includes pg (TEST_DATABASE_URL,
 * TEST_DATABASES): a scope statement that fails stops the query behind it, a client released with
 * statements queued is dropped, a statement whose cached plan changed result type is prepared again,
 * BEGIN, the scope and the first query leave together, in one write, and so do statements sent together
 * (together.ts), the first failure among them thrown. The `pg` version check's decision runs everywhere.
 *
 * A pool of one connection, so that each test knows which connection it gets; scratch tables with
 * random names, dropped afterwards.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import type { Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Kysely, PostgresDialect, sql, type PostgresPool } from 'kysely'
import pg from 'pg'
import { databases } from '../../../test/helpers/build-app.ts'
import { checkPgVersion, PG_VERSIONS, pipelinedPool, socketOf, supportsPg, UnsupportedPg } from './pipeline.ts'
import type { Tx } from './tenant.ts'
import { together } from './together.ts'

void describe('the pg versions the pipelined pool supports', () => {
  void it('accepts the releases of PG_VERSIONS and nothing else', () => {
    const table: Array<[string, boolean]> = [
      ['8.23.1', true],
      ['8.23.2', true],
      ['8.23.10', true], // numbers, not text
      ['8.23.0', false],
      ['8.22.9', false],
      ['8.24.0', false],
      ['8.100.0', false],
      ['9.0.0', false],
      ['7.23.1', false],
      ['8.23.2-beta.1', false], // a prerelease is not a release
      ['8.23', false],
      ['v8.23.1', false],
      ['', false],
      ['latest', false]
    ]
    for (const [version, supported] of table) assert.equal(supportsPg(version), supported, version)
  })

  void it('refuses another with a message naming it and the range; the installed pg passes', () => {
    assert.throws(
      () => checkPgVersion('8.24.0'),
      (err: Error) => err instanceof UnsupportedPg && err.message.includes('pg 8.24.0 is installed') &&
        err.message.includes(`pg >=${PG_VERSIONS.from} <${PG_VERSIONS.below}`)
    )
    checkPgVersion()
  })
})

const pgUrl = databases().includes('pg') ? process.env.TEST_DATABASE_URL ?? '' : ''
const skip = pgUrl === '' ? 'needs TEST_DATABASE_URL (and pg in TEST_DATABASES)' : false

/** Polls `done` until it holds (5 s at most). */
async function until (done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await done()) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  assert.fail('not within 5 s')
}

void describe('pg: the pipelined pool', { skip }, () => {
  const suffix = crypto.randomBytes(5).toString('hex')
  const rows = `pipeline_rows_${suffix}`
  const plans = `pipeline_plans_${suffix}`
  let admin: pg.Client
  let pool: pg.Pool
  let pipelined: PostgresPool
  let db: Kysely<unknown>

  before(async () => {
    admin = new pg.Client({ connectionString: pgUrl })
    await admin.connect()
    await admin.query(`create table ${rows} (id int primary key)`)
    await admin.query(`create table ${plans} (id int primary key)`)
    await admin.query(`insert into ${plans} (id) values (1)`)
    pool = new pg.Pool({ connectionString: pgUrl, max: 1, pipeline: true })
    pool.on('error', () => {})
    pipelined = pipelinedPool(pool)
    db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: pipelined }) })
  })

  after(async () => {
    await db.destroy()
    await admin.query(`drop table if exists ${rows}, ${plans}`)
    await admin.end()
  })

  void it('a scope statement that fails makes the query behind it fail, and that query never runs', async () => {
    const role = `collab_missing_${suffix}`
    let queried = false
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await sql.raw("set local app.tenant_id = 'tenant-a'").execute(trx)
        // answered at once; PostgreSQL refuses it with the insert
        await sql.raw(`set local role ${role}`).execute(trx)
        queried = true
        await sql`insert into ${sql.table(rows)} (id) values (${1})`.execute(trx)
      }),
      // the scope statement's own error, not the 25P02 of the insert behind it
      (err: { code?: string, message: string }) => err.code === '22023' && err.message.includes(role)
    )
    assert.equal(queried, true)
    const { rows: found } = await admin.query(`select count(*)::int as n from ${rows}`)
    assert.equal(found[0].n, 0)
  })

  void it('a client Kysely discards (a failed rollback) is dropped, not reused', async () => {
    const client = await pipelined.connect()
    const { rows: [first] } = await client.query<{ pid: number }>('select pg_backend_pid() as pid', [])
    ;(client.release as (discard?: boolean) => void)(true)
    assert.equal(pool.totalCount, 0)
    const next = await pipelined.connect()
    try {
      const { rows: [seen] } = await next.query<{ pid: number }>('select pg_backend_pid() as pid', [])
      assert.notEqual(seen?.pid, first?.pid)
    } finally {
      next.release()
    }
  })

  void it('a client released with statements queued is dropped, and the next sees no transaction', async () => {
    const first = await pipelined.connect()
    const { rows: [before] } = await first.query<{ pid: number }>('select pg_backend_pid() as pid', [])
    const pid = before?.pid
    await first.query('begin', [])
    await first.query("set local app.tenant_id = 'left-behind'", [])
    first.release()
    assert.equal(pool.totalCount, 0)

    let raw: pg.PoolClient | undefined
    pool.once('acquire', (client: pg.PoolClient) => { raw = client })
    const next = await pipelined.connect()
    try {
      const { rows: [seen] } = await next.query<{ pid: number, tenant: string | null }>(
        "select pg_backend_pid() as pid, current_setting('app.tenant_id', true) as tenant", []
      )
      assert.notEqual(seen?.pid, pid)
      assert.notEqual(seen?.tenant, 'left-behind')
      assert.equal(raw?.getTransactionStatus(), 'I')
    } finally {
      next.release()
    }
    // and its session ends on the server
    await until(async () =>
      (await admin.query('select count(*)::int as n from pg_stat_activity where pid = $1', [pid])).rows[0].n === 0)
  })

  void it('a statement whose cached plan changed result type fails once, ' +
    'then is prepared under a new name', async () => {
    const query = sql<Record<string, unknown>>`select * from ${sql.table(plans)} where id = ${1}`
    const read = async (): Promise<unknown[]> => (await query.execute(db)).rows
    assert.deepEqual(await read(), [{ id: 1 }])
    await admin.query(`alter table ${plans} add column note text not null default 'added'`)
    await assert.rejects(read(), (err: { code?: string }) => err.code === '0A000')
    assert.deepEqual(await read(), [{ id: 1, note: 'added' }])
    const { rows: names } = await sql<{ name: string }>`
        select name from pg_prepared_statements where statement = ${query.compile(db).sql} order by prepare_time
    `.execute(db)
    assert.equal(names.length, 2)
    assert.notEqual(names[0]?.name, names[1]?.name)
  })

  /** Counts the socket's writes while `fn` runs (each a write to the server: `_write` or `_writev`). */
  async function writesDuring<T> (socket: Socket, fn: () => Promise<T>): Promise<{ value: T, writes: number }> {
    const s = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>
    const original = { _write: s._write, _writev: s._writev }
    let writes = 0
    for (const k of ['_write', '_writev'] as const) {
      s[k] = function (this: unknown, ...args: unknown[]) { writes++; return original[k].apply(this, args) }
    }
    try {
      return { value: await fn(), writes }
    } finally {
      s._write = original._write
      s._writev = original._writev
    }
  }

  void it('BEGIN and the scope are held and leave with the first query in one write; the query sees them', async () => {
    let raw: pg.PoolClient | undefined
    pool.once('acquire', (client: pg.PoolClient) => { raw = client })
    const seen = await db.transaction().execute(async (trx) => {
      await sql.raw("set local app.tenant_id = 'tenant-d'").execute(trx)
      await sql.raw("set local app.user_id = 'user-d'").execute(trx)
      const socket = socketOf(raw!) as Socket
      assert.equal(socket.writableLength, 0, 'BEGIN and the scope are held, not written')
      const { value, writes } = await writesDuring(socket, async () => (await sql<{ tenant: string, user: string }>`
          select current_setting('app.tenant_id') as tenant, current_setting('app.user_id') as "user",
            ${'x'}::text as parameter
      `.execute(trx)).rows[0])
      assert.equal(writes, 1)
      assert.equal(socket.writableCorked, 0)
      return value
    })
    assert.deepEqual(seen, { tenant: 'tenant-d', user: 'user-d', parameter: 'x' })
    assert.equal(raw?.getTransactionStatus(), 'I')
  })

  void it('statements sent together (together.ts) leave in one write, each with its own answer', async () => {
    let raw: pg.PoolClient | undefined
    pool.once('acquire', (client: pg.PoolClient) => { raw = client })
    const { value, writes } = await db.transaction().execute(async (trx) => {
      await sql.raw("set local app.tenant_id = 'tenant-e'").execute(trx)
      await sql<{ one: number }>`select ${1}::int as one`.execute(trx)
      return await writesDuring(socketOf(raw!) as Socket, async () => await together(trx as Tx, [
        sql<{ n: number }>`select ${2}::int as n`,
        sql<{ n: number, tenant: string }>`select ${3}::int as n, current_setting('app.tenant_id') as tenant`
      ]))
    })
    assert.equal(writes, 1)
    assert.deepEqual(value, [[{ n: 2 }], [{ n: 3, tenant: 'tenant-e' }]])
  })

  void it('of statements sent together, the first failure is the one thrown', async () => {
    await assert.rejects(db.transaction().execute(async (trx) => await together(trx as Tx, [
      sql`select 1 / ${0}::int as n`,
      sql`select ${1}::int as n`
    ])), (err: { code?: string }) => err.code === '22012')
  })

  void it('a statement sent as a pg Submittable after held statements runs in their scope', async () => {
    const client = await pipelined.connect()
    try {
      await client.query('begin', [])
      await client.query("set local app.tenant_id = 'tenant-f'", [])
      const submitted = new pg.Query("select current_setting('app.tenant_id', true) as tenant")
      const rows = await new Promise<unknown[]>((resolve, reject) => {
        const out: unknown[] = []
        const q = (client as unknown as { query: (q: pg.Query) => pg.Query }).query(submitted)
        q.on('row', (row: unknown) => out.push(row)).on('end', () => { resolve(out) }).on('error', reject)
      })
      assert.deepEqual(rows, [{ tenant: 'tenant-f' }])
      await client.query('commit', [])
    } finally {
      client.release()
    }
  })
})

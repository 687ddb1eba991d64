/**
 * The service's PostgreSQL sessions (database.ts), when `databases()` includes pg: they run without JIT
 * compilation (docs/performance.md, "Lists at scale, third pass"), in a tenant's transaction as outside one, and an
 * `options` parameter of the database URL takes precedence. Everywhere: timestamps read from PostgreSQL's text are the
 * instants the `pg` driver reads, with the text kept.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql, type Kysely } from 'kysely'
import { databases, freshDatabase } from '../../../test/helpers/build-app.ts'
import pg from 'pg'
import { createDatabase, exactTimestamp, exactTimestamptz, type Database } from './database.ts'
import { withTenant } from './tenant.ts'

const skip = databases().includes('pg') ? false : 'needs TEST_DATABASE_URL (and pg in TEST_DATABASES)'

async function jitOf (db: Kysely<Database>): Promise<string | undefined> {
  const { rows } = await sql<{ jit: string }>`select current_setting('jit') as jit`.execute(db)
  return rows[0]?.jit
}

void describe('pg: the sessions of the service', { skip }, () => {
  void it('compile no statement with JIT, unless the URL says otherwise', async () => {
    const fresh = await freshDatabase('pg')
    try {
      assert.equal(await jitOf(fresh.handle.db), 'off')
      assert.equal(await jitOf(fresh.handle.systemDb), 'off')
      const inTenant = await withTenant(fresh.handle.db, { tenantId: 't-jit' }, async trx => await jitOf(trx))
      assert.equal(inTenant, 'off')

      const url = new URL(fresh.url ?? '')
      url.searchParams.set('options', '-c jit=on')
      const own = await createDatabase({ databaseUrl: url.toString(), poolSize: 1 })
      try {
        assert.equal(await jitOf(own.db), 'on')
      } finally {
        await own.close()
      }
    } finally {
      await fresh.drop()
    }
  })
})

void describe('timestamps read from PostgreSQL', () => {
  void it('are the instants the pg driver reads, in every form PostgreSQL writes, with their text kept', () => {
    const driver = pg.types.getTypeParser(1184, 'text') as (v: string) => Date | number | string
    const texts = [
      '2026-11-29 17:44:40+00', '2026-11-29 17:44:40.1+00', '2026-11-29 17:44:40.12+00',
      '2026-11-29 17:44:40.123+00', '2026-11-29 17:44:40.1234+00', '2026-11-29 17:44:40.123456+00',
      '2026-03-29 01:59:59.999999+01', '2026-11-29 17:44:40.5-03', '2026-11-29 23:15:00.000001+05:30',
      '2026-01-01 00:00:00-09:30', '1883-11-18 12:00:00+00:53:28', '0042-05-01 10:00:00+00', '0001-01-01 00:00:00+00',
      '1999-12-31 23:59:59.999+00', '2000-02-29 12:00:00+14', '12345-01-01 00:00:00+00', '0042-05-01 10:00:00+00 BC',
      'infinity', '-infinity'
    ]
    for (const text of texts) {
      const ours = exactTimestamptz(text)
      const theirs = driver(text)
      if (theirs instanceof Date) {
        assert.ok(ours instanceof Date, text)
        assert.equal(ours.getTime(), theirs.getTime(), text)
        assert.equal(exactTimestamp(ours), text)
      } else {
        assert.equal(ours, theirs, text)
      }
    }
  })
})

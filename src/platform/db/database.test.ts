/**
 * The service's PostgreSQL sessions (database.ts), when `databases()` includes pg: they run without JIT
 * compilation (docs/performance.md, "Lists at scale, third pass"), in a tenant's transaction as outside one, and an
 * `options` parameter of the database URL takes precedence.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql, type Kysely } from 'kysely'
import { databases, freshDatabase } from '../../../test/helpers/build-app.ts'
import { createDatabase, type Database } from './database.ts'
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

/**
 * The job queue when several instances start at once (docs/deployment.md: two instances on one database). Each
 * instance creates the queue unless it exists; those that lose the race must start all the same.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { databases, freshDatabase } from '../../../test/helpers/build-app.ts'
import { BOSS_SCHEMA, createJobQueue, QUEUE } from './automation.queue.ts'

const INSTANCES = 4
const ROUNDS = 3

for (const kind of databases().filter(k => k === 'pg')) {
  describe(`${kind}: the job queue of instances starting together`, () => {
    it(`${INSTANCES} instances starting at once on a new database all start, and the queue exists once`, async () => {
      // a few rounds on new databases: the creations cross differently each time
      for (let round = 0; round < ROUNDS; round++) {
        const { handle, drop } = await freshDatabase(kind)
        try {
          const queues = Array.from({ length: INSTANCES }, () => createJobQueue(handle.db))
          const started = await Promise.allSettled(queues.map(async q => await q.ready()))
          const failed = started.flatMap(s => (s.status === 'rejected' ? [String(s.reason)] : []))
          assert.deepEqual(failed, [], `round ${round}: instances that did not start`)
          const found = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${BOSS_SCHEMA}.queue`)}
            where name = ${QUEUE}`.execute(handle.db)
          assert.equal(found.rows[0]?.n, 1)
          await Promise.all(queues.map(async q => { await q.stop() }))
        } finally {
          await drop()
        }
      }
    })
  })
}

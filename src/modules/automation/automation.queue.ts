/**
 * The job queue: pg-boss 10 in its own schema (`pgboss`), on PostgreSQL and on embedded PGlite
 * alike, through one adapter over the application's Kysely instance (pg-boss accepts any
 * `{ executeSql(text, values) }`). Every pg-boss statement runs in its own Kysely transaction:
 * on PGlite (one connection) that keeps it from running inside a request's transaction, and
 * pg-boss's multi-statement scripts (schema creation, `BEGIN; … COMMIT;` maintenance) are split
 * into single statements and run in that transaction, since PGlite prepares every statement.
 *
 * The statements themselves run in automation.queue.repository.ts.
 *
 * Jobs are sent inside the transaction that creates the execution row (`send(trx, …)`), so a
 * rolled-back transaction leaves no job; the job carries only the tenant and the execution id.
 */
import type { Kysely } from 'kysely'
import PgBoss from 'pg-boss'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { grantQueueSchema, runBossSql } from './automation.queue.repository.ts'

export const QUEUE = 'automation-execution'
export const BOSS_SCHEMA = 'pgboss'
/** Attempts per execution: the first run and 4 retries. */
export const MAX_ATTEMPTS = 5
/** Seconds before the first retry; pg-boss doubles it per retry (10 s, 20 s, 40 s, 80 s, with jitter). */
export const RETRY_DELAY_SEC = 10
/** A job (and an execution's claim) not finished after this many seconds is presumed dead and run again. */
export const EXPIRE_SEC = 120

export interface ExecutionJob { tenantId: string, executionId: string }

/** A pg-boss `db` that runs each call in its own transaction. */
export function bossDb (db: Kysely<Database>): PgBoss.Db {
  return {
    executeSql: async (text, values) => await db.transaction().execute(trx => runBossSql(trx, text, values ?? []))
  }
}

/** A pg-boss `db` bound to an open transaction (to send jobs atomically with the rows that need them). */
export function trxDb (trx: Tx): PgBoss.Db {
  return { executeSql: async (text, values) => await runBossSql(trx, text, values ?? []) }
}

export interface JobQueue {
  /** starts pg-boss (creating its schema the first time) and the queue; idempotent */
  ready (): Promise<PgBoss>
  /** sends the job of an execution inside `trx` */
  send (trx: Tx, job: ExecutionJob): Promise<string | null>
  stop (): Promise<void>
}

/** Attempts at creating the queue while other instances create it too (see createQueueOnce). */
const CREATE_ATTEMPTS = 5

/**
 * Creates the queue unless it exists. Instances starting together create it at the same time: pg-boss's
 * `create_queue` then fails in all but one, with a unique violation or, when their locks cross, a deadlock
 * (40P01) while the winner has not committed yet. A loser waits a moment and looks again, and tries once more
 * if the queue is still missing, a bounded number of times; any other failure is thrown at once.
 */
async function createQueueOnce (b: PgBoss): Promise<void> {
  for (let attempt = 1; (await b.getQueue(QUEUE)) === null; attempt++) {
    try {
      await b.createQueue(QUEUE, {
        name: QUEUE,
        retryLimit: MAX_ATTEMPTS - 1,
        retryDelay: RETRY_DELAY_SEC,
        retryBackoff: true,
        expireInSeconds: EXPIRE_SEC
      })
    } catch (err: unknown) {
      const code = (err as { code?: string }).code
      const concurrent = code === '40P01' || code === '40001' || code === '23505' || code === '42P07'
      if (!concurrent || attempt >= CREATE_ATTEMPTS) {
        if ((await b.getQueue(QUEUE)) !== null) return
        throw err
      }
      await new Promise(resolve => setTimeout(resolve, 100 * attempt))
    }
  }
}

export function createJobQueue (db: Kysely<Database>): JobQueue {
  let starting: Promise<PgBoss> | undefined
  let boss: PgBoss | undefined
  const start = async (): Promise<PgBoss> => {
    // no timers of its own: the worker loop calls maintain() (automation.workers.ts), tests call it directly
    const b = new PgBoss({ db: bossDb(db), schema: BOSS_SCHEMA, supervise: false, schedule: false, migrate: true })
    b.on('error', () => {})
    await b.start()
    await createQueueOnce(b)
    // requests send jobs in their own transactions, as the application role
    await db.transaction().execute(trx => grantQueueSchema(trx, BOSS_SCHEMA))
    boss = b
    return b
  }
  return {
    ready: async () => await (starting ??= start().catch((err: unknown) => { starting = undefined; throw err })),
    send: async (trx, job) => {
      if (boss === undefined) throw new Error('job queue not started: await ready() before the transaction')
      return await boss.send(QUEUE, job, {
        db: trxDb(trx),
        retryLimit: MAX_ATTEMPTS - 1,
        retryDelay: RETRY_DELAY_SEC,
        retryBackoff: true,
        expireInSeconds: EXPIRE_SEC
      })
    },
    stop: async () => {
      const b = boss ?? (starting !== undefined ? await starting.catch(() => undefined) : undefined)
      boss = undefined
      starting = undefined
      if (b !== undefined) await b.stop({ graceful: true, wait: true, timeout: 10_000 })
    }
  }
}

/**
 * The job queue's statements (automation.queue.ts): pg-boss's own SQL, run as it comes through
 * the adapter, and the grants that let requests send jobs as the application role.
 */
import { CompiledQuery } from 'kysely'
import { splitSql } from '../../platform/db/split-sql.ts'
import { APP_ROLE, type Tx } from '../../platform/db/tenant.ts'

/** Advisory lock key of the job queue's grants at start. */
const GRANT_LOCK = 7_446_221_005

const TX_CONTROL = /^(begin|commit|start\s+transaction|end)$/i

/**
 * Runs a pg-boss statement in `trx`: with values as one prepared statement; without, as a script
 * split into its statements (PGlite prepares each), its transaction control left to `trx`.
 */
export async function runBossSql (trx: Tx, text: string, values: unknown[]): Promise<{ rows: unknown[] }> {
  if (values.length > 0) return { rows: (await trx.executeQuery(CompiledQuery.raw(text, values))).rows }
  let rows: unknown[] = []
  for (const statement of splitSql(text)) {
    if (TX_CONTROL.test(statement)) continue
    rows = (await trx.executeQuery(CompiledQuery.raw(statement, []))).rows
  }
  return { rows }
}

/**
 * Grants the application role the use of the queue's schema and tables. Instances starting together
 * take turns (two concurrent GRANTs on one table fail with "tuple concurrently updated").
 */
export async function grantQueueSchema (trx: Tx, schema: string): Promise<void> {
  await runBossSql(
    trx,
    `select pg_advisory_xact_lock(${GRANT_LOCK}); grant usage on schema ${schema} to ${APP_ROLE}; grant select, ` +
    `insert, update on all tables in schema ${schema} to ${APP_ROLE}`,
    []
  )
}

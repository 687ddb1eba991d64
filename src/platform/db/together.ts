/**
 * Statements of one transaction sent together: written at once on its connection and answered in one round trip,
 * instead of one round trip each. Kysely runs a transaction's statements one at a time (each waits for the answer
 * to the one before, whatever `Promise.all` around them asks), so independent reads of a request (a page and its
 * total, the fields other tables supply for a page) are sent through here. On the pipelined pool (pipeline.ts) they
 * leave in one write; PGlite, which has one connection, runs them in turn. The answers are Kysely's, plugins
 * included; the first failure in their order is the one thrown (PostgreSQL runs them in order, and those behind a
 * failed one fail in its aborted transaction).
 *
 * @example
 *   const [rows, [count]] = await together(trx, [page, trx.selectNoFrom(total.as('total'))])
 */
import type { Compilable, CompiledQuery, DatabaseConnection, QueryResult, RawBuilder } from 'kysely'
import type { Tx } from './tenant.ts'

/** A query builder's statement, or a `sql` template's; undefined: none to send, no rows. */
type Statement = Compilable<any> | RawBuilder<any> | undefined

type RowsOf<Q> = Q extends Compilable<infer R> ? R[] : Q extends RawBuilder<infer R> ? R[] : never[]

export async function together<const Q extends readonly Statement[]> (
  trx: Tx,
  queries: Q
): Promise<{ -readonly [K in keyof Q]: RowsOf<Q[K]> }> {
  const executor = trx.getExecutor()
  const compiled: Array<CompiledQuery | undefined> =
    queries.map(q => q === undefined ? undefined : 'isRawBuilder' in q ? q.compile(trx) : q.compile())
  const results = await executor.provideConnection(async (connection: DatabaseConnection) => {
    // the same connection, without waiting for the statement before: each answer goes through Kysely's plugins
    const direct = executor.withConnectionProvider({ provideConnection: async consumer => await consumer(connection) })
    const settled = await Promise.allSettled(compiled.map(async q =>
      q === undefined ? { rows: [] } : await direct.executeQuery(q)))
    // in the statements' order: the first that failed is the cause, those behind it failed in its aborted transaction
    const failed = settled.find(r => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    return settled.map(r => (r as PromiseFulfilledResult<QueryResult<unknown>>).value)
  })
  return results.map(r => r.rows) as { -readonly [K in keyof Q]: RowsOf<Q[K]> }
}

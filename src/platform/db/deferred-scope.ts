/**
 * BEGIN and the tenant scope sent with the first statement behind them, in one round trip
 * (docs/performance.md).
 *
 * `withTenant` runs BEGIN, then the scope's `SET LOCAL` statements, then the request's queries, then
 * COMMIT, each awaited: seven round trips for a one-query request. Nobody reads the results of BEGIN
 * and of a `SET LOCAL`, so they are queued without waiting for them (the socket is corked), and the
 * next statement leaves with them in one write; its promise settles only after theirs, and the first
 * failure among them is the one thrown. Nothing else changes: the statements, their order, the
 * transaction and the RLS scope are the same, and a query can never run outside the scope, because
 * PostgreSQL executes a connection's statements in order and an error in BEGIN or a `SET LOCAL`
 * aborts the transaction, so the queries behind it fail (25P02) instead of running unscoped.
 * A client released with statements still queued is dropped, never reused. What it relies on of `pg`: pipeline.ts.
 */
import type pg from 'pg'

type Result = pg.QueryResult

/** A client's socket (pipeline.ts finds it): corked while statements wait for the next one. */
export interface Corkable { cork?: () => void, uncork?: () => void }

/**
 * Statements sent without waiting for their result: what Kysely sends to open a transaction, and `SET LOCAL`s (the
 * tenant scope's).
 */
const deferred = (text: string, parameters: readonly unknown[] | undefined): boolean =>
  (parameters === undefined || parameters.length === 0) && (text === 'begin' || text.startsWith('set local '))

const answered = (text: string): Result => ({
  command: text === 'begin' ? 'BEGIN' : 'SET',
  rowCount: null,
  oid: 0,
  fields: [],
  rows: []
})

/** One client's statements sent and not yet answered. */
export class DeferredScope {
  #socket: Corkable | undefined
  #pending: Array<Promise<Result>> = []

  constructor (socket: Corkable | undefined) {
    this.#socket = socket
  }

  /** Sends a statement (`send` writes it): BEGIN and `SET LOCAL` are answered at once, the others after those. */
  query (text: string, parameters: readonly unknown[] | undefined, send: () => Promise<Result>): Promise<Result> {
    if (deferred(text, parameters)) {
      if (this.#pending.length === 0) this.#socket?.cork?.()
      const sent = send()
      sent.catch(() => {}) // observed with the next statement
      this.#pending.push(sent)
      return Promise.resolve(answered(text))
    }
    const sent = send()
    if (this.#pending.length === 0) return sent
    const before = this.#pending
    this.#pending = []
    this.#socket?.uncork?.()
    sent.catch(() => {})
    return Promise.all(before).then(async () => await sent)
  }

  /**
   * What to release the client with: an error (drop the connection) when statements are still queued, a transaction
   * opened and never finished (it cannot happen through Kysely); they leave first.
   */
  release (): Error | undefined {
    const broken = this.#pending.length > 0
    if (broken) this.#socket?.uncork?.()
    this.#pending = []
    return broken ? new Error('released with statements in flight') : undefined
  }
}

/**
 * BEGIN and the tenant scope sent with the first statement behind them, in one round trip and one
 * write (docs/performance.md).
 *
 * `withTenant` runs BEGIN, then the scope's `SET LOCAL` statements, then the request's queries, then
 * COMMIT, each awaited: seven round trips for a one-query request. Nobody reads the results of BEGIN
 * and of a `SET LOCAL`, so they are answered at once and held; the next statement takes them along
 * as one simple query (`begin; set local …; set local …`), written together with it, and its
 * promise settles only after theirs, the first failure among them being the one thrown. Nothing else
 * changes: the statements, their order, the transaction and the RLS scope are the same, and a query
 * can never run outside the scope, because PostgreSQL executes a connection's statements in order
 * and an error in BEGIN or a `SET LOCAL` aborts the transaction, so the queries behind it fail
 * (25P02) instead of running unscoped.
 *
 * The two leave in one write (the socket corked around them). A client released with statements
 * still held is dropped, never reused. What it relies on of `pg`: pipeline.ts.
 */
import type pg from 'pg'

type Result = pg.QueryResult

/** A client's socket (pipeline.ts finds it): corked while the scope and the statement behind it are written. */
export interface Corkable { cork?: () => void, uncork?: () => void }

/** Writes a statement on the client (`parameters` undefined: the simple protocol). */
export type Send = (text: string, parameters: readonly unknown[] | undefined) => Promise<Result>

/**
 * Statements held until the next one: what Kysely sends to open a transaction, and `SET LOCAL`s (the tenant scope's).
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

/** One client's statements held. */
export class DeferredScope {
  #socket: Corkable | undefined
  #held: string[] = []

  constructor (socket: Corkable | undefined) {
    this.#socket = socket
  }

  /** Sends a statement: BEGIN and `SET LOCAL` are answered at once and held, the others sent with what is held. */
  query (text: string, parameters: readonly unknown[] | undefined, send: Send): Promise<Result> {
    if (deferred(text, parameters)) {
      this.#held.push(text)
      return Promise.resolve(answered(text))
    }
    if (this.#held.length === 0) return send(text, parameters)
    // one write for both: pg corks the socket for each query; ours around the two holds theirs
    this.#socket?.cork?.()
    let scope: Promise<Result>
    let sent: Promise<Result>
    try {
      scope = send(this.#held.join('; '), undefined)
      sent = send(text, parameters)
    } finally {
      this.#held = []
      this.#socket?.uncork?.()
    }
    scope.catch(() => {}) // observed through the statement's promise
    sent.catch(() => {})
    return scope.then(async () => await sent)
  }

  /**
   * What to release the client with: an error (drop the connection) when statements are still held, a transaction
   * opened and never finished (it cannot happen through Kysely).
   */
  release (): Error | undefined {
    const broken = this.#held.length > 0
    this.#held = []
    return broken ? new Error('released with statements held') : undefined
  }
}

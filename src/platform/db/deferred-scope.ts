/**
 * BEGIN and the tenant scope sent with the first statement behind them, in one round trip and one
 * write, and statements sent together in one write (docs/performance.md).
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
 * What is sent in one moment leaves in one write (`#gather`): the scope with the statement behind it,
 * and statements sent together (together.ts), which PostgreSQL then answers in one round trip. A
 * client released with statements still held is dropped, never reused. What it relies on of `pg`:
 * pipeline.ts.
 */
import type pg from 'pg'

type Result = pg.QueryResult

/** A client's socket (pipeline.ts finds it): corked while the statements of one moment are written. */
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
  #corked = false

  constructor (socket: Corkable | undefined) {
    this.#socket = socket
  }

  /** Sends a statement: BEGIN and `SET LOCAL` are answered at once and held, the others sent with what is held. */
  query (text: string, parameters: readonly unknown[] | undefined, send: Send): Promise<Result> {
    if (deferred(text, parameters)) {
      this.#held.push(text)
      return Promise.resolve(answered(text))
    }
    this.#gather()
    if (this.#held.length === 0) return send(text, parameters)
    const scope = send(this.#held.join('; '), undefined)
    this.#held = []
    scope.catch(() => {}) // observed through the statement's promise
    const sent = send(text, parameters)
    sent.catch(() => {})
    return scope.then(async () => await sent)
  }

  /**
   * Sends what is held on its own, ahead of a statement that does not go through `query` (a `pg` Submittable), so
   * that it too runs in the scope.
   */
  flush (send: Send): void {
    if (this.#held.length === 0) return
    const scope = send(this.#held.join('; '), undefined)
    this.#held = []
    scope.catch(() => {}) // a failure aborts the transaction: the statement behind it fails (25P02)
  }

  /**
   * Corks the socket until the promise jobs of the moment are done (`process.nextTick` runs after them), so that
   * what they send leaves in one write: the held scope and the statement behind it, and statements sent together
   * (together.ts). pg corks the socket around each statement's messages; ours around theirs holds them.
   */
  #gather (): void {
    const socket = this.#socket
    if (this.#corked || socket?.cork === undefined || socket.uncork === undefined) return
    socket.cork()
    this.#corked = true
    process.nextTick(() => {
      this.#corked = false
      socket.uncork?.()
    })
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

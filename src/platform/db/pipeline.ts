/**
 * One round trip for the tenant scope and the first query, and prepared statements
 * (docs/performance.md).
 *
 * `withTenant` runs BEGIN, then the scope's `SET LOCAL` statements, then the request's queries, then
 * COMMIT, each awaited: seven round trips for a one-query request. Nobody reads the results of BEGIN
 * and of a `SET LOCAL`, so on PostgreSQL the pool's clients run in `pg`'s pipeline mode and this
 * wrapper queues those statements without waiting for them (the socket is corked), and the next
 * statement leaves with them in one write; its promise settles only after theirs, and the first
 * failure among them is the one thrown. Nothing else changes: the statements, their order, the
 * transaction and the RLS scope are the same, and a query can never run outside the scope, because
 * PostgreSQL executes a connection's statements in order and an error in BEGIN or a `SET LOCAL`
 * aborts the transaction, so the queries behind it fail (25P02) instead of running unscoped.
 */
import pg from 'pg'
import type { PostgresPool, PostgresPoolClient } from 'kysely'

/**
 * Statements sent without waiting for their result: what Kysely sends to open a transaction, and `SET LOCAL`s (the
 * tenant scope's).
 */
const deferred = (text: string, parameters: readonly unknown[] | undefined): boolean =>
  (parameters === undefined || parameters.length === 0) && (text === 'begin' || text.startsWith('set local '))

type Result = pg.QueryResult

const answered = (text: string): Result => ({
  command: text === 'begin' ? 'BEGIN' : 'SET',
  rowCount: null,
  oid: 0,
  fields: [],
  rows: []
})

interface Corkable { cork?: () => void, uncork?: () => void }

/**
 * Named (prepared) statements, by text: parsed once per connection, and planned once when
 * PostgreSQL finds its generic plan as good as the custom ones. Bounded: at most NAMES_MAX texts
 * (each connection keeps those it used), none with more than PARAMS_MAX parameters (lists of ids
 * and bulk inserts, whose text varies with their length).
 */
const NAMES = new Map<string, string>()
const NAMES_MAX = 500
// the events list's page and count (a branch each, every branch naming the tenant) have 40 – 50
const PARAMS_MAX = 64
let generation = 0

function named (text: string, values: unknown[] | undefined): string | pg.QueryConfig {
  if (values === undefined || values.length === 0 || values.length > PARAMS_MAX) return text
  let name = NAMES.get(text)
  if (name === undefined) {
    if (NAMES.size >= NAMES_MAX) return text
    name = `k${generation}_${NAMES.size}`
    NAMES.set(text, name)
  }
  return { name, text, values }
}

/**
 * After a schema change under a running process ("cached plan must not change result type"): new names, parsed again.
 */
function forgetStatement (text: string, err: unknown): void {
  if ((err as { code?: string }).code === '0A000' && NAMES.delete(text)) generation++
}

class PipelinedClient {
  #client: pg.PoolClient
  #stream: Corkable | undefined
  #pending: Array<Promise<Result>> = []

  constructor (client: pg.PoolClient) {
    this.#client = client
    this.#stream = (client as unknown as { connection?: { stream?: Corkable } }).connection?.stream
  }

  query (text: unknown, parameters?: readonly unknown[]): unknown {
    if (typeof text !== 'string') return this.#client.query(text as pg.Submittable)
    if (deferred(text, parameters)) {
      if (this.#pending.length === 0) this.#stream?.cork?.()
      const sent = this.#send(text, parameters)
      sent.catch(() => {}) // observed with the next statement
      this.#pending.push(sent)
      return Promise.resolve(answered(text))
    }
    const sent = this.#send(text, parameters)
    if (this.#pending.length === 0) return sent
    const before = this.#pending
    this.#pending = []
    this.#stream?.uncork?.()
    sent.catch(() => {})
    return Promise.all(before).then(async () => await sent)
  }

  #send (text: string, parameters: readonly unknown[] | undefined): Promise<Result> {
    const q = named(text, parameters as unknown[] | undefined)
    if (typeof q === 'string') return this.#client.query(q, parameters as unknown[])
    const sent = this.#client.query(q)
    sent.catch((err: unknown) => { forgetStatement(text, err) })
    return sent
  }

  release (): void {
    // a transaction opened and never finished (it cannot happen through Kysely): drop the connection
    const broken = this.#pending.length > 0
    if (broken) this.#stream?.uncork?.()
    this.#pending = []
    this.#client.release(broken ? new Error('released with statements in flight') : undefined)
  }
}

/**
 * A `pg` pool whose clients pipeline BEGIN and the tenant scope and prepare statements (give the pool `pipeline:
 * true`).
 */
export function pipelinedPool (pool: pg.Pool): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, PipelinedClient>()
  return {
    Client: pg.Client,
    options: pool.options,
    async connect () {
      const client = await pool.connect()
      let w = wrapped.get(client)
      if (w === undefined) {
        w = new PipelinedClient(client)
        wrapped.set(client, w)
      }
      return w as unknown as PostgresPoolClient
    },
    end: async () => { await pool.end() }
  }
}

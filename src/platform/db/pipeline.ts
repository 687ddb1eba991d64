/**
 * The pool of PostgreSQL's requests: a `pg` pool in pipeline mode whose clients send BEGIN and the
 * tenant scope with the first statement (deferred-scope.ts) and prepare the statements they run
 * (prepared-statements.ts). docs/performance.md.
 *
 * What the two rely on of `pg` beyond sending a query, all named here:
 * - pipeline mode (`pipeline: true` on the pool, new in 8.23.0): a client writes each query as it is
 *   called, without waiting for the answers before it (deferred-scope.ts);
 * - `client.connection.stream`, the socket, undocumented: corked while the held scope and the statement
 *   behind it are written, so that they leave in one write (`socketOf`, deferred-scope.ts);
 * - a simple query of several statements (`begin; set local …`), the scope held until the first statement;
 * - `release(err)` ends the connection and removes it from the pool (deferred-scope.ts's release rule);
 * - a query config with `name`: parsed once per connection, then only bound and executed, so a cached
 *   plan whose result type changed fails with 0A000 (prepared-statements.ts).
 * PG_VERSIONS is the range of `pg` releases this was tested on (pipeline.test.ts); on another, the
 * pool refuses to be created and so the service to start. Widen it after running those tests on one.
 */
import pg from 'pg'
import pgPackage from 'pg/package.json' with { type: 'json' }
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import { DeferredScope, type Corkable } from './deferred-scope.ts'
import { sendPrepared } from './prepared-statements.ts'

/**
 * The `pg` releases this module supports: from `from`, below `below`. Not 8.23.0: a cursor on a pipelined client
 * (passed through as it is) got other queries' rows there; 8.23.1 refuses it.
 */
export const PG_VERSIONS = { from: '8.23.1', below: '8.24.0' } as const

const release = (version: string): number[] | undefined => {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version)
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3])]
}

const compare = (a: number[], b: number[]): number =>
  (a[0]! - b[0]!) || (a[1]! - b[1]!) || (a[2]! - b[2]!)

/** Whether `version` is in PG_VERSIONS: releases only (a prerelease or another form is not). */
export function supportsPg (version: string): boolean {
  const v = release(version)
  return v !== undefined &&
    compare(v, release(PG_VERSIONS.from)!) >= 0 && compare(v, release(PG_VERSIONS.below)!) < 0
}

/** The installed `pg` is outside PG_VERSIONS: the service refuses to start (one line, exit 1: src/server.ts). */
export class UnsupportedPg extends Error {
  override name = 'UnsupportedPg'
}

/**
 * Throws, naming both, unless `version` is in PG_VERSIONS; by default the version of the `pg` this process runs (its
 * package.json, which the build bundles with it).
 */
export function checkPgVersion (version: string = pgPackage.version): void {
  if (supportsPg(version)) return
  throw new UnsupportedPg(
    `pg ${version} is installed; the pipelined pool (src/platform/db/pipeline.ts) ` +
    `relies on pg internals and supports pg >=${PG_VERSIONS.from} <${PG_VERSIONS.below} only: ` +
    `install a pg in that range, or run src/platform/db/pipeline.test.ts on ${version} and widen PG_VERSIONS`
  )
}

/** The client's socket (`client.connection.stream`), if it has one to cork. */
export const socketOf = (client: pg.PoolClient): Corkable | undefined =>
  (client as unknown as { connection?: { stream?: Corkable } }).connection?.stream

class PipelinedClient {
  #client: pg.PoolClient
  #scope: DeferredScope

  constructor (client: pg.PoolClient) {
    this.#client = client
    this.#scope = new DeferredScope(socketOf(client))
  }

  query (text: unknown, parameters?: readonly unknown[]): unknown {
    if (typeof text !== 'string') {
      this.#scope.flush((t, p) => sendPrepared(this.#client, t, p))
      return this.#client.query(text as pg.Submittable)
    }
    return this.#scope.query(text, parameters, (t, p) => sendPrepared(this.#client, t, p))
  }

  /** `discard`: Kysely marks a connection it must not reuse (a failed rollback); it is dropped like a broken one. */
  release (discard?: boolean): void {
    this.#client.release(this.#scope.release() ?? (discard === true ? new Error('discarded by Kysely') : undefined))
  }
}

/**
 * A `pg` pool whose clients pipeline BEGIN and the tenant scope and prepare statements (give the pool `pipeline:
 * true`). Throws when the installed `pg` is not in PG_VERSIONS.
 */
export function pipelinedPool (pool: pg.Pool): PostgresPool {
  checkPgVersion()
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

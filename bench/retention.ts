/**
 * Retention beside requests: a backlog of prunable domain events (1 000 000 processed outbox rows
 * a month old, BENCH_PRUNE_ROWS to change) is seeded, then the read route of `get-event` is
 * measured twice on our service, once alone and once while `pruneRetention` (src/platform/retention.ts,
 * the defaults of RETENTION_*: batches of 1 000) deletes the backlog from this process, as a worker
 * instance beside the serving one would. PostgreSQL and Citus only: an embedded PGlite belongs to the one
 * process that opened it.
 *
 *   npm run bench -- --db pg --only prune-backlog
 */
import { loadConfig } from '../src/config.ts'
import { createDatabase } from '../src/platform/db/database.ts'
import { pruneRetention } from '../src/platform/retention.ts'
import { SCENARIOS, type Scenario } from './scenarios.ts'
import { TENANTS, tenantId } from './seed.ts'
import { pgRunner } from './sql-runner.ts'

export interface BesideEnv {
  kind: 'pg' | 'pglite' | 'citus'
  /** the bench database (PostgreSQL) */
  databaseUrl: string | undefined
  log: (line: string) => void
}

/** Work that runs beside a scenario's second measurement, on the same database. */
export interface Beside {
  /** what runs beside, for the report */
  label: string
  /** before the scenario's measurements: seed what the work needs (both measurements see it) */
  prepare (env: BesideEnv): Promise<void>
  /** starts the work; `stop` ends it (between two statements) and says what it did */
  start (env: BesideEnv): Promise<{ stop: () => Promise<string> }>
}

const ROWS = Number(process.env.BENCH_PRUNE_ROWS ?? 1_000_000)

const pruneBeside: Beside = {
  label: 'pruning a backlog of processed outbox rows',
  async prepare (env) {
    if (env.databaseUrl === undefined) throw new Error('prune-backlog needs PostgreSQL')
    const db = pgRunner(env.databaseUrl, 1)
    try {
      const t0 = performance.now()
      // a month old, processed: every row is past RETENTION_OUTBOX (7 days); spread over the tenants
      await db.query(
        `insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, created_at,
                             processed_at)
        select 'bench-t' || lpad((g % ${TENANTS})::text, 3, '0'), 'event.updated', 'event', g::text, 'u0001',
          jsonb_build_object('event_id', g, 'title', 'Event ' || g, 'template', 'generic', 'state', 'draft'),
          now() - interval '30 days' - make_interval(secs => g % 86400), now() - interval '30 days'
        from generate_series(1, $1::int) g`,
        [ROWS]
      )
      await db.query('vacuum analyze outbox')
      env.log(
        `${env.kind}: prune-backlog: ${ROWS.toLocaleString('en')} processed outbox rows of ` +
        `${tenantId(0)}…${tenantId(TENANTS - 1)} seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`
      )
    } finally {
      await db.close()
    }
  },
  async start (env) {
    if (env.databaseUrl === undefined) throw new Error('prune-backlog needs PostgreSQL')
    const handle = await createDatabase({ databaseUrl: env.databaseUrl, poolSize: 2 })
    const retention = loadConfig({}).retention
    const abort = new AbortController()
    const t0 = performance.now()
    let finishedMs: number | undefined
    // one pass, as the job runs it: until the backlog is gone or the measurement stops it
    // a failure of the pruning is reported by stop() (the measurement beside it goes on), not thrown
    const running = pruneRetention(handle.db, { retention, now: new Date(), signal: abort.signal })
      .then((r) => { if (r.complete) finishedMs = performance.now() - t0; return r }, (err: unknown) => err as Error)
    return {
      async stop () {
        abort.abort()
        const ms = performance.now() - t0
        const result = await running
        await handle.close()
        if (result instanceof Error) {
          const code = (result as { code?: string }).code
          return `pruning failed: ${code !== undefined ? `[${code}] ` : ''}${result.message}`
        }
        const { kinds: { outbox } } = result
        const rate = outbox.deleted / ((finishedMs ?? ms) / 1000)
        return (
          `${outbox.deleted.toLocaleString('en')} rows deleted by ${outbox.statements} statements ` +
          `(at most ${outbox.largest} each) in ${((finishedMs ?? ms) / 1000).toFixed(1)} s, ` +
          `${Math.round(rate).toLocaleString('en')} ` +
          `rows/s${finishedMs === undefined
            ? ', still pruning when the measurement ended'
            : ', backlog gone before the measurement ended'}`
        )
      }
    }
  }
}

const getEvent = SCENARIOS.find(s => s.name === 'get-event')

/** The scenarios with work beside them; run.ts runs them after SCENARIOS. */
export const BESIDE_SCENARIOS: Array<Scenario & { beside: Beside }> = [
  {
    name: 'prune-backlog',
    title: 'GET one event, alone and beside retention pruning a 1 M row outbox backlog',
    group: 'single-read',
    route: 'GET /api/v1/events/{id}',
    // below saturation, so that p95 shows the database's share rather than the queue of 50 connections
    connections: 10,
    ...(getEvent?.build !== undefined ? { build: getEvent.build } : {}),
    beside: pruneBeside
  }
]

/**
 * The confirmation race (docs/event-collaboration.md, "Registration"): 50 clients confirm 50 contacts on one event of
 * capacity 10 with a waitlist, all at once (`POST /api/v1/events/{id}/attendees`, status confirmed), five rounds, a
 * new event each. Each round checks the outcome in the database (exactly 10 confirmed, 40 waitlisted at positions
 * 1..40) and reports the time until the last answer, confirmations per second, each request's latency (p50, p95,
 * max) and the service's resident set size. Confirmations of one event wait for each other on the event's row lock:
 * the figures say what that costs.
 *
 * Opt-in: only with `--only confirmation-race`. PostgreSQL and Citus (the bench seeds the event beside the service).
 *
 *   npm run bench -- --db pg --only confirmation-race
 */
import { BIG_TENANT, ORG, userId } from './seed.ts'
import type { Caller } from './scenarios.ts'
import { measuredRun, type ExportRun, type ExportScenario } from './export.ts'
import { pgRunner } from './sql-runner.ts'

const CLIENTS = 50
const CAPACITY = 10
const ROUNDS = 5
const CALLER: Caller = { tenant: BIG_TENANT, user: userId(1) }

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? 0

export const RACE_SCENARIOS: ExportScenario[] = [
  {
    name: 'confirmation-race',
    title: `${CLIENTS} confirmations racing for ${CAPACITY} seats (waitlist on), ${ROUNDS} rounds`,
    async run (env) {
      if (env.kind === 'pglite' || env.databaseUrl === undefined) {
        env.log('confirmation-race: not measured: PostgreSQL and Citus only')
        return []
      }
      const db = pgRunner(env.databaseUrl, 1)
      const runs: ExportRun[] = []
      try {
        for (let round = 1; round <= ROUNDS; round++) {
          const [event] = await db.query<{ id: number }>(
            `insert into events (tenant_id, org_id, creator_id, title, start_dt, end_dt, visibility, status,
                                 published_at, version, capacity, waitlist_enabled, registration_inherited)
             values ($1, $2, $3, 'Race bench', now() + interval '7 days', now() + interval '7 days 2 hours', 10,
                     'published', now(), 1, $4, true, false)
             returning id`,
            [BIG_TENANT, ORG, CALLER.user, CAPACITY]
          )
          if (event === undefined) throw new Error('the race event was not created')
          // contacts dated now: removed with the run's other writes (run.ts, removeRunWrites)
          const contacts = await db.query<{ id: string }>(
            `insert into contacts (tenant_id, org_id, owner_id, first_name, email)
             select $1, $2, $3, 'Racer' || g, 'racer' || g || '-' || $4 || '@bench.example'
             from generate_series(1, $5::int) g returning id`,
            [BIG_TENANT, ORG, CALLER.user, event.id, CLIENTS]
          )
          const latencies: number[] = []
          const { run } = await measuredRun(env.pid, `round ${round}`, async () => {
            const statuses = await Promise.all(contacts.map(async c => {
              const s0 = performance.now()
              const res = await fetch(`${env.url}/api/v1/events/${event.id}/attendees`, {
                method: 'POST',
                headers: { authorization: `Bearer ${env.token(CALLER)}`, 'content-type': 'application/json' },
                body: JSON.stringify({ contact_id: c.id, status: 'confirmed' })
              })
              await res.arrayBuffer()
              latencies.push(performance.now() - s0)
              return res.status
            }))
            const refused = statuses.filter(s => s !== 201)
            if (refused.length > 0) throw new Error(`confirmation-race: answers ${JSON.stringify(refused)}`)
          }, () => ({ rows: CLIENTS, bytes: 0 }))
          const [outcome] = await db.query<{ confirmed: number, positions: number[] }>(
            `select count(*) filter (where status = 'confirmed')::int as confirmed,
                    coalesce(array_agg(waitlist_position order by waitlist_position)
                             filter (where status = 'waitlisted'), '{}') as positions
             from attendees where tenant_id = $1 and event_id = $2`,
            [BIG_TENANT, event.id]
          )
          const expected = Array.from({ length: CLIENTS - CAPACITY }, (_, i) => i + 1).join()
          if (outcome?.confirmed !== CAPACITY || outcome.positions.join() !== expected) {
            throw new Error(`confirmation-race: round ${round} gave ${JSON.stringify(outcome)}`)
          }
          latencies.sort((a, b) => a - b)
          const r: ExportRun = {
            ...run,
            label: `round ${round}: ${CAPACITY} confirmed, ${CLIENTS - CAPACITY} waitlisted at ` +
              `1..${CLIENTS - CAPACITY}; ` +
              `request latency p50 ${percentile(latencies, 0.5).toFixed(1)} ms, ` +
              `p95 ${percentile(latencies, 0.95).toFixed(1)} ms, ` +
              `max ${(latencies.at(-1) ?? 0).toFixed(1)} ms`
          }
          env.log(`${env.kind}: confirmation-race: ${r.label} ${CLIENTS} in ${r.ms.toFixed(0)} ms`)
          runs.push(r)
        }
      } finally {
        await db.close()
      }
      return runs
    }
  }
]

/**
 * The attendee export (`GET /api/v1/events/{id}/attendees/export`, docs/exports.md) of one event with 100 000
 * attendees (BENCH_EXPORT_ROWS to change): seeded with SQL in the bench's style (generate_series, as the table owner),
 * then exported three times by one client reading as fast as it can. Each run reports the time to the last byte,
 * rows/s, bytes, and the service process's resident set size before the export and at its peak during it (VmRSS of
 * /proc/<pid>/status sampled every 50 ms, and VmHWM after resetting it through /proc/<pid>/clear_refs where the kernel
 * allows it). A fourth run reads slowly (BENCH_EXPORT_SLOW_KBS kB/s, default 2 048) to show that a slow client holds no
 * more memory: the service reads a chunk only when the client has taken the one before.
 *
 * Opt-in (it seeds 100 000 contacts and attendees): only with `--only attendee-export`. PostgreSQL and Citus only:
 * an embedded PGlite belongs to the service process, which the bench cannot seed beside it. The rows it adds are past
 * the seed's watermarks and removed before the next run (run.ts, removeRunWrites).
 *
 *   npm run bench -- --db pg --only attendee-export
 */
import fs from 'node:fs'
import { BIG_TENANT, ORG, userId } from './seed.ts'
import type { Caller } from './scenarios.ts'
import { pgRunner } from './sql-runner.ts'

export interface ExportEnv {
  kind: 'pg' | 'pglite' | 'citus'
  databaseUrl: string | undefined
  /** the service's base URL and process id */
  url: string
  pid: number
  token: (c: Caller) => string
  log: (line: string) => void
}

export interface ExportRun {
  label: string
  rows: number
  bytes: number
  ms: number
  rowsPerSecond: number
  rssBeforeMb: number
  rssPeakMb: number
  /** VmHWM after clear_refs: the kernel's own peak of the export (undefined where it cannot be reset) */
  hwmMb: number | undefined
}

export interface ExportScenario {
  name: string
  title: string
  run: (env: ExportEnv) => Promise<ExportRun[]>
}

const ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 100_000)
const SLOW_KBS = Number(process.env.BENCH_EXPORT_SLOW_KBS ?? 2048)
const CALLER: Caller = { tenant: BIG_TENANT, user: userId(1) }

/** A field of /proc/<pid>/status in MB (0 where it cannot be read). */
export function status (pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m?.[1] !== undefined ? Number(m[1]) / 1024 : 0
  } catch {
    return 0
  }
}

/** Resets the process's VmHWM to its current RSS (Linux ≥ 4.0, same user); false where not allowed. */
export function resetPeak (pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/**
 * Runs `work` (one measured request) after a moment for earlier work to settle, sampling the service's RSS every
 * 50 ms; `rows` and `bytes` of the run come from its result. The figures of the run, as the report lists them.
 */
export async function measuredRun<T> (
  pid: number,
  label: string,
  work: (t0: number) => Promise<T>,
  size: (result: T) => { rows: number, bytes: number }
): Promise<{ run: ExportRun, result: T }> {
  await new Promise(resolve => setTimeout(resolve, 300))
  const rssBeforeMb = status(pid, 'VmRSS')
  const reset = resetPeak(pid)
  let peak = rssBeforeMb
  const sampler = setInterval(() => { peak = Math.max(peak, status(pid, 'VmRSS')) }, 50)
  const t0 = performance.now()
  let result: T
  try {
    result = await work(t0)
  } finally {
    clearInterval(sampler)
  }
  const ms = performance.now() - t0
  peak = Math.max(peak, status(pid, 'VmRSS'))
  const { rows, bytes } = size(result)
  return {
    result,
    run: {
      label,
      rows,
      bytes,
      ms,
      rowsPerSecond: rows / (ms / 1000),
      rssBeforeMb,
      rssPeakMb: peak,
      hwmMb: reset ? status(pid, 'VmHWM') : undefined
    }
  }
}

/** An event of u0001 (private) with ROWS attendees, each a contact of the organization (their names are exported). */
async function seedExport (databaseUrl: string, log: (line: string) => void): Promise<number> {
  const db = pgRunner(databaseUrl, 1)
  try {
    const t0 = performance.now()
    const [event] = await db.query<{ id: number }>(
      `insert into events (tenant_id, org_id, creator_id, title, description, start_dt, end_dt, timezone,
                           visibility, status, published_at, version)
       values ($1, $2, $3, 'Export bench', 'One event with many attendees', now() + interval '30 days',
               now() + interval '30 days 2 hours', 'Europe/Zurich', 10, 'published', now(), 1)
       returning id`,
      [BIG_TENANT, ORG, CALLER.user]
    )
    if (event === undefined) throw new Error('the export event was not created')
    // contacts dated now: removeRunWrites removes them with the run's other writes
    await db.query(
      `with made as (
         insert into contacts (tenant_id, org_id, owner_id, first_name, last_name, email, company, job_title)
         select $1, $2, 'u' || lpad((1 + g % 1000)::text, 4, '0'), 'Export' || g, 'Attendee, ' || g,
                'export' || g || '@bench.example', (array['Acme','Globex','=Initech','Umbrella "U"'])[1 + g % 4],
                'Guest'
         from generate_series(1, $3::int) g
         returning id, first_name)
       insert into attendees (tenant_id, event_id, contact_id, org_id, status, notes, responded_at)
       select $1, $4, m.id, $2,
              (array['confirmed','confirmed','tentative','declined','invited','checked_in'])[1 +
                substr(m.first_name, 7)::int % 6],
              case when substr(m.first_name, 7)::int % 10 = 0 then 'Vegetarian, aisle seat; said "maybe"' end,
              now() - interval '3 days'
       from made m`,
      [BIG_TENANT, ORG, ROWS, event.id]
    )
    await db.query('analyze attendees')
    await db.query('analyze contacts')
    log(`attendee-export: event ${event.id} with ${ROWS.toLocaleString('en')} attendees seeded in ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s`)
    return Number(event.id)
  } finally {
    await db.close()
  }
}

/** One export read to its end, at most `kbs` kB/s when given; the figures of the run. */
async function exportOnce (env: ExportEnv, eventId: number, label: string, kbs?: number): Promise<ExportRun> {
  const { run } = await measuredRun(env.pid, label, async t0 => {
    let bytes = 0
    let lines = 0
    const res = await fetch(`${env.url}/api/v1/events/${eventId}/attendees/export`, {
      headers: { authorization: `Bearer ${env.token(CALLER)}` }
    })
    if (res.status !== 200 || res.body === null) throw new Error(`export answered ${res.status}: ${await res.text()}`)
    const reader = res.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      bytes += value.byteLength
      // records end in CRLF, and the seeded values hold no line break
      for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++
      if (kbs !== undefined) {
        const due = (bytes / 1024 / kbs) * 1000 - (performance.now() - t0)
        if (due > 0) await new Promise(resolve => setTimeout(resolve, due))
      }
    }
    return { rows: lines - 1, bytes }
  }, r => r)
  return run
}

export const EXPORT_SCENARIOS: ExportScenario[] = [
  {
    name: 'attendee-export',
    title: `CSV export of one event's ${ROWS.toLocaleString('en')} attendees`,
    async run (env) {
      if (env.kind === 'pglite' || env.databaseUrl === undefined) {
        env.log('attendee-export: not measured: PostgreSQL and Citus only')
        return []
      }
      const eventId = await seedExport(env.databaseUrl, env.log)
      const runs: ExportRun[] = []
      for (const label of ['first', 'second', 'third']) runs.push(await exportOnce(env, eventId, label))
      runs.push(await exportOnce(env, eventId, `slow client (${SLOW_KBS} kB/s)`, SLOW_KBS))
      for (const r of runs) {
        if (r.rows !== ROWS) throw new Error(`attendee-export (${r.label}): ${r.rows} rows, expected ${ROWS}`)
        env.log(`${env.kind}: attendee-export: ${exportText(r)}`)
      }
      return runs
    }
  }
]

/** One run as a line of the report. */
export function exportText (r: ExportRun): string {
  // bytes 0: a run of requests (bench/race.ts), not a download
  const amount = r.bytes === 0
    ? `${r.rows.toLocaleString('en')} requests in ${(r.ms / 1000).toFixed(2)} s, ` +
      `${Math.round(r.rowsPerSecond).toLocaleString('en')} requests/s`
    : `${r.rows.toLocaleString('en')} rows, ${(r.bytes / 2 ** 20).toFixed(1)} MiB in ` +
      `${(r.ms / 1000).toFixed(2)} s, ${Math.round(r.rowsPerSecond).toLocaleString('en')} rows/s`
  return `${r.label}: ${amount}; service RSS ` +
    `${r.rssBeforeMb.toFixed(0)} MB before, ${r.rssPeakMb.toFixed(0)} MB peak (sampled every 50 ms)` +
    `${r.hwmMb !== undefined ? `, VmHWM ${r.hwmMb.toFixed(0)} MB` : ''}`
}

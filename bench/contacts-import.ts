/**
 * The CSV import (`POST /api/v1/contacts/import`, docs/contacts.md "CSV import") of a 50 000-row file
 * (BENCH_IMPORT_ROWS to change) through the real route, by one member of the largest tenant's organization, in three
 * phases: the file once (every row a new contact), the same file again (every row unchanged), then the file with one
 * field (job_title) changed in every row (every row updated). Each phase reports the time to the answer, rows/s, the
 * size of the file, and the service process's resident set size before and at its peak (VmRSS of /proc/<pid>/status
 * sampled every 50 ms, and VmHWM after resetting it through /proc/<pid>/clear_refs where the kernel allows it).
 *
 * Opt-in (minutes with one statement per row): only with `--only contacts-import`. The contacts it creates are dated
 * now and its events are past the outbox watermark: removed before the next run (run.ts, removeRunWrites); on PGlite
 * each run starts from a fresh copy of the seeded files.
 *
 *   npm run bench -- --db pg --only contacts-import
 */
import http from 'node:http'
import { BIG_TENANT, userId } from './seed.ts'
import type { Caller } from './scenarios.ts'
import { measuredRun, type ExportRun, type ExportScenario } from './export.ts'

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 50_000)
const CALLER: Caller = { tenant: BIG_TENANT, user: userId(1) }

/** The CSV of ROWS contacts, unique e-mails of this run (`run`), `title` the job title of every row. */
function csvOf (run: string, title: string): Buffer {
  const lines = ['email,first_name,last_name,company,job_title,city,tags']
  for (let i = 1; i <= ROWS; i++) {
    lines.push(`import${i}.${run}@import.bench.example,First${i},"Last, ${i}",Company ${i % 500},${title},` +
      `City ${i % 97},imported;batch-${i % 10}`)
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n`)
}

/**
 * POST of the file with node:http (fetch's undici gives up on an answer after 300 s, which the import of the old code
 * may take); the status and the parsed body.
 */
async function post (url: string, token: string, body: Buffer): Promise<{ status: number, json: unknown }> {
  return await new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/v1/contacts/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv', 'content-length': body.length }
    }, res => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) })
        } catch {
          resolve({ status: res.statusCode ?? 0, json: text })
        }
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

interface ImportAnswer { created: number, updated: number, unchanged: number }

/** One import, checked against the counts it must answer; the figures of the run. */
async function importOnce (
  env: Parameters<ExportScenario['run']>[0],
  label: string,
  body: Buffer,
  expect: ImportAnswer
): Promise<ExportRun> {
  const { run, result: answer } = await measuredRun(env.pid, label, async () =>
    await post(env.url, env.token(CALLER), body), () => ({ rows: ROWS, bytes: body.length }))
  const got = answer.json as Partial<ImportAnswer>
  if (answer.status !== 200 || got.created !== expect.created || got.updated !== expect.updated ||
    got.unchanged !== expect.unchanged) {
    const shown = JSON.stringify(answer.json).slice(0, 500)
    throw new Error(
      `contacts-import (${label}): answered ${answer.status} ${shown}, expected ${JSON.stringify(expect)}`)
  }
  return run
}

export const IMPORT_SCENARIOS: ExportScenario[] = [
  {
    name: 'contacts-import',
    title: `CSV import of ${ROWS.toLocaleString('en')} contacts (new, then unchanged, then updated)`,
    async run (env) {
      // e-mails of this run alone, so that a run never meets the contacts of another (on PGlite they stay)
      const run = Date.now().toString(36)
      const first = csvOf(run, 'Guest')
      const changed = csvOf(run, 'Speaker')
      const none = { created: 0, updated: 0, unchanged: 0 }
      const runs = [
        await importOnce(env, 'all new', first, { ...none, created: ROWS }),
        await importOnce(env, 'same file again (all unchanged)', first, { ...none, unchanged: ROWS }),
        await importOnce(env, 'one field changed in every row (all updated)', changed, { ...none, updated: ROWS })
      ]
      for (const r of runs) {
        env.log(`${env.kind}: contacts-import: ${r.label}: ${(r.ms / 1000).toFixed(2)} s, ` +
          `${Math.round(r.rowsPerSecond).toLocaleString('en')} rows/s, service RSS ${r.rssBeforeMb.toFixed(0)} MB ` +
          `before, ${r.rssPeakMb.toFixed(0)} MB peak`)
      }
      return runs
    }
  }
]

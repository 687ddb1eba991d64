/**
 * The plan shapes of the hot statements, on PostgreSQL (docs/performance.md, "The plan-shape guard"). The bench's data
 * set (bench/seed.ts, at a small scale) is loaded into the test database, and every read scenario of the bench
 * (bench/scenarios.ts) is sent to the service as the bench sends it, by a caller of the largest tenant. Each statement
 * the request sent is then explained as the service runs it: in a transaction with the request's own scope (its SET
 * LOCALs, so as the request's role, under row-level security), prepared, with the request's values, with the plan the
 * request's settings choose (a generic and a custom plan where it left the choice to PostgreSQL), under EXPLAIN
 * ANALYZE, and with sequential scans priced out (`enable_seqscan = off`): the small data set would make them cheap
 * anywhere, so one that remains is one no index can replace.
 *
 * A plan fails when a node reads more than the request needs, in the two shapes that made hot reads slow:
 * - a sequential scan of a tenant's table that reads more than SEQ_SCAN_ROWS rows;
 * - a node run once per row of another (a nested loop's inner side, a correlated subplan) that reads more than
 *   PER_LOOP_ROWS rows each time: a walk over a tenant's rows for every row, as GET one event's spaces once were;
 * and a single-row read fails when any of its nodes reads more than SINGLE_ROW_ROWS rows in all. "Reads" counts the
 * rows a node returned and those its filters removed, over all its loops. The guard is checked against a planted
 * sequential scan and a planted per-row walk, so that it can be seen to fail. Statements per request are asserted too:
 * a single-row read is BEGIN, the scope, one statement and COMMIT.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { buildManifest, type Manifest } from '../bench/manifest.ts'
import { SCENARIOS, isRead, type BenchContext, type Scenario } from '../bench/scenarios.ts'
import { BIG_TENANT, seed, sizesFor } from '../bench/seed.ts'
import { pgRunner } from '../bench/sql-runner.ts'
import { tokenBook } from '../bench/tokens.ts'
import { scopeStatements } from '../src/platform/db/tenant.ts'
import { databases, useTestApp } from './helpers/build-app.ts'
import { rowsRead, type PlanNode } from './helpers/plans.ts'
import { watchStatements, type StatementWatch } from './helpers/statements.ts'

/** The bench's data set at this scale: 4 000 contacts and 1 000 events in its largest tenant, 200 spaces. */
const SCALE = 0.01
const SEQ_SCAN_ROWS = 100
const PER_LOOP_ROWS = 50
const SINGLE_ROW_ROWS = 200

interface Sent { text: string, values: unknown[] }

const SCOPE = /^\s*(begin|commit|rollback|set local|select set_config)/i
const READ = /^\s*(select|with)\b/i

const SCANS = new Set([
  'Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Heap Scan', 'Bitmap Index Scan', 'Tid Scan', 'Tid Range Scan'
])

/** The plan's faults: the nodes that read more than the shape allows. */
export function planFaults (plan: PlanNode, tenantTables: Set<string>, singleRow: boolean): string[] {
  const faults: string[] = []
  const walk = (n: PlanNode, path: string) => {
    const here = `${path}${n['Node Type']}${n['Relation Name'] !== undefined ? ` on ${n['Relation Name']}` : ''}` +
      `${n['Index Name'] !== undefined ? ` using ${n['Index Name']}` : ''}`
    const loops = n['Actual Loops'] ?? 0
    const read = rowsRead(n)
    if (SCANS.has(n['Node Type'])) {
      if (n['Node Type'] === 'Seq Scan' && tenantTables.has(n['Relation Name'] ?? '') && read > SEQ_SCAN_ROWS) {
        faults.push(`${here}: a sequential scan of a tenant table read ${read} rows (> ${SEQ_SCAN_ROWS})`)
      }
      if (loops > 1 && read / loops > PER_LOOP_ROWS) {
        faults.push(`${here}: run ${loops} times, reading ${Math.round(read / loops)} rows each (> ${PER_LOOP_ROWS})`)
      }
      if (singleRow && read > SINGLE_ROW_ROWS) {
        faults.push(`${here}: a single-row read read ${read} rows here (> ${SINGLE_ROW_ROWS})`)
      }
    }
    for (const child of n.Plans ?? []) walk(child, `${here} > `)
  }
  walk(plan, '')
  return faults
}

/** The tenant claim of a bearer token (undefined without one). */
function tenantOf (authorization: string | undefined): string | undefined {
  const payload = authorization?.split('.')[1]
  if (payload === undefined) return undefined
  return (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { tenant_id?: string }).tenant_id
}

/** A value as a SQL literal: its text as `pg` sends it (dates in ISO form, arrays as array literals). */
function literal (v: unknown): string {
  return v === null || v === undefined ? 'null' : pg.escapeLiteral(textOf(v))
}

function textOf (v: unknown): string {
  if (v instanceof Date) return v.toISOString()
  if (Array.isArray(v)) {
    return `{${v.map(x => (x === null ? 'NULL' : `"${textOf(x).replace(/["\\]/g, m => `\\${m}`)}"`)).join(',')}}`
  }
  if (Buffer.isBuffer(v)) return `\\x${v.toString('hex')}`
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
}

if (databases().includes('pg')) {
  void describe('pg: plan shapes and statements of the hot reads (the bench data set, small scale)', () => {
    // every answer read from the database (an anonymous answer kept in memory sends no statement to explain)
    const t = useTestApp('pg', { env: { PUBLIC_PAGE_CACHE_MS: '0' } })
    let manifest: Manifest
    let ctx: BenchContext
    let url: string
    let explainer: pg.Client
    let tenantTables: Set<string>
    /** the statements of the request being sent (undefined while the plans are explained) */
    let sent: Sent[] | undefined
    let watch: StatementWatch | undefined

    before(async () => {
      const databaseUrl = t.config.databaseUrl ?? ''
      const runner = pgRunner(databaseUrl, 4)
      try {
        await seed(runner, sizesFor(SCALE), () => {})
        manifest = await buildManifest(runner)
      } finally {
        await runner.close()
      }
      const tokens = await tokenBook(t.config.dataDir, manifest)
      ctx = { side: 'ours', manifest, token: tokens.token, forged: tokens.forged, webhookSecret: '' }
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      const address = t.app.server.address()
      url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
      explainer = new pg.Client({ connectionString: databaseUrl })
      // the app's own after hook may drop the database (and this connection) before this suite's runs
      explainer.on('error', () => {})
      await explainer.connect()
      tenantTables = new Set((await explainer.query<{ name: string }>(
        "select table_name as name from information_schema.columns where column_name = 'tenant_id' " +
        "and table_schema = 'public'")).rows.map(r => r.name))
      watch = watchStatements(t, (text, values) => { sent?.push({ text, values }) })
    })

    after(async () => {
      watch?.restore()
      await explainer?.end()
    })

    /**
     * The statements of one request of the scenario, sent twice: all those of both (the first may fill a cache the
     * second reads) and those of the second alone (the user gate's cache is warm then).
     */
    async function statementsOf (s: Scenario): Promise<{ all: Sent[], second: Sent[] }> {
      const next = (s.build as NonNullable<Scenario['build']>)(ctx)
      // the scenarios pick their callers at random: a request of the largest tenant's (or anonymous), whose data
      // the plans are about
      let r = next()
      for (let i = 0; i < 1000 && ![undefined, BIG_TENANT].includes(tenantOf(r.headers?.authorization)); i++) r = next()
      const all: Sent[] = []
      let second: Sent[] = []
      for (let i = 0; i < 2; i++) {
        sent = []
        const res = await fetch(`${url}${r.path}`, {
          method: r.method,
          headers: r.headers,
          ...(r.body !== undefined ? { body: r.body } : {})
        })
        await res.arrayBuffer()
        all.push(...sent)
        second = sent
        sent = undefined
        assert.ok(res.status < 300, `${s.name}: ${r.method} ${r.path} answered ${res.status}`)
      }
      return { all, second }
    }

    /**
     * The plans of a request's read statements, as the request ran them: its scope first, each statement prepared
     * and explained with its values, under the plan cache mode the request set, or both generic and custom.
     */
    async function plansOf (statements: Sent[]): Promise<Array<{ text: string, mode: string, plan: PlanNode }>> {
      const out: Array<{ text: string, mode: string, plan: PlanNode }> = []
      await explainer.query('begin')
      // at this scale a sequential scan can cost less than an index for any table; with sequential scans priced out,
      // one is chosen only where no index serves the statement (a missing index, or a condition row-level security
      // keeps from the index: docs/performance.md, "Row-level security and indexes")
      await explainer.query('set local enable_seqscan = off')
      try {
        let chosen: string | undefined
        let n = 0
        for (const s of statements) {
          if (/^\s*(begin|commit|rollback)\b/i.test(s.text)) continue
          if (SCOPE.test(s.text)) {
            await explainer.query(s.text, s.values)
            // the plan the request asked for (tenant.ts: planForValues, planList), in the text or as a value
            if (/plan_cache_mode/i.test(s.text)) {
              chosen = /force_\w+/.exec(s.text)?.[0] ?? s.values.map(String).find(v => v.startsWith('force_'))
            }
            continue
          }
          if (!READ.test(s.text)) continue
          const name = `guard_${++n}`
          await explainer.query(`prepare ${name} as ${s.text}`)
          const args = s.values.length > 0 ? `(${s.values.map(literal).join(', ')})` : ''
          for (const mode of chosen !== undefined ? [chosen] : ['force_generic_plan', 'force_custom_plan']) {
            await explainer.query(`set local plan_cache_mode = ${mode}`)
            const { rows } = await explainer.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
              `explain (analyze, format json) execute ${name}${args}`)
            const plan = rows[0]?.['QUERY PLAN'][0]?.Plan
            if (plan !== undefined) out.push({ text: s.text, mode, plan })
          }
          await explainer.query(`deallocate ${name}`)
        }
      } finally {
        await explainer.query('rollback')
      }
      return out
    }

    void it('the guard fails on a planted sequential scan and on a planted per-row walk', async () => {
      const tenant = Object.keys(manifest.events)[0] ?? ''
      const scope = scopeStatements({ tenantId: tenant, userId: 'u0001' }).map(text => ({ text, values: [] }))
      const planted = async (settings: string, text: string, values: unknown[]) => {
        const plans = await plansOf([...scope, { text: settings, values: [] }, { text, values }])
        return plans.flatMap(p => planFaults(p.plan, tenantTables, true))
      }
      const seqScan = await planted(
        "select set_config('enable_seqscan', 'on', true), set_config('enable_indexscan', 'off', true), " +
        "set_config('enable_bitmapscan', 'off', true), set_config('plan_cache_mode', 'force_custom_plan', true)",
        'select id, title from events where tenant_id = $1 and id = $2', [tenant, manifest.events[tenant]?.[0]])
      assert.ok(seqScan.some(f => f.includes('sequential scan of a tenant table')), seqScan.join('\n'))
      // the spaces of one event found by walking every space of the tenant, as GET one event once did
      const walk = await planted(
        "select set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true), " +
        "set_config('plan_cache_mode', 'force_custom_plan', true)",
        `select s.id from spaces s join event_spaces es on es.tenant_id = s.tenant_id and es.space_id = s.id
          where s.tenant_id = $1 and es.event_id + 0 = $2`, [tenant, manifest.events[tenant]?.[0]])
      assert.ok(walk.some(f => /run \d+ times|single-row read read/.test(f)), walk.join('\n'))
    })

    const reads = SCENARIOS.filter(s => isRead(s) && s.build !== undefined)
    for (const s of reads) {
      void it(`${s.name}: no sequential scan of a tenant table, no per-row walk over a tenant's rows`, async () => {
        await s.prepare?.(ctx, url)
        const statements = await statementsOf(s)
        const plans = await plansOf(statements.all)
        assert.ok(plans.length > 0, `${s.name}: no read statement explained`)
        const faults = plans.flatMap(p =>
          planFaults(p.plan, tenantTables, s.group === 'single-read').map(f =>
            `${f}\n    (${p.mode}) ${p.text.replace(/\s+/g, ' ').slice(0, 300)}`))
        assert.deepEqual(faults, [], `${s.name}:\n${faults.join('\n')}`)
        if (s.group === 'single-read') {
          // BEGIN, the scope's SET LOCALs, the one statement and COMMIT
          assert.equal(statements.second.length, 1 + scopeStatements({ tenantId: 't' }).length + 1 + 1,
            `${s.name}: ${statements.second.map(x => x.text.slice(0, 60)).join(' | ')}`)
        }
      })
    }
  })
}

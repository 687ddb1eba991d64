/**
 * The report: one table per database (ours beside the baseline, ratio of requests/s), light-load
 * p95 where a budget asks for it, then the budget lines (pass / fail / not measured).
 */
import type { LoadResult } from './load.ts'
import type { Scenario } from './scenarios.ts'

export interface ScenarioOutcome {
  scenario: Scenario
  missing: boolean
  ours?: LoadResult
  baseline?: LoadResult
  /** our p95 at light load (for the latency budgets) */
  light?: LoadResult
  /** the baseline's p95 at light load: the floor the machine and the data set give the same SQL */
  baselineLight?: LoadResult
  /** the reference (the fastest SQL for the same answer), at full and at light load */
  reference?: LoadResult
  referenceLight?: LoadResult
  /** a bare server sending the service's own answers from memory (bench/wire-server.ts), and their mean size */
  wire?: LoadResult
  wireBytes?: number
  /** the mean number of items an answer holds or aggregates (Scenario.items), for the growth of the cost per item */
  items?: number
  /** whether the reference answered as the baseline did (run.ts, checkReference) */
  referenceCheck?: string
  /** ours again, with work running beside it (bench/retention.ts), and what that work did */
  beside?: LoadResult
  besideNote?: string
  /** the service's log lines of level warn and above during this scenario (both sides' runs), by text */
  serviceLog?: LogEntry[]
  /** the baseline's failed requests during this scenario, by error text */
  baselineLog?: LogEntry[]
}

export interface LogEntry { text: string, count: number }

export type DatabaseKind = 'pg' | 'pglite' | 'citus'

export function headingOf (kind: DatabaseKind): string {
  switch (kind) {
    case 'pg': return 'PostgreSQL'
    case 'pglite': return 'PGlite'
    case 'citus': return 'Citus (coordinator + 2 workers)'
  }
}

export interface DatabaseRun {
  kind: DatabaseKind
  scale: number
  startMs: number
  outcomes: ScenarioOutcome[]
  /** PGlite as a newcomer meets it: `npm start` on a new and on an existing data directory */
  npmStart?: NpmStart
}

export interface BudgetLine { ok: boolean | undefined, text: string, enforced: boolean }

const f0 = (n: number): string => n.toFixed(0)
const f1 = (n: number): string => n.toFixed(1)

/** A markdown table's lines: its head, the rule (the first column left, the others right) and a line per row. */
const markdown = (head: string[], rows: string[][]): string[] => [
  `| ${head.join(' | ')} |`,
  `|---|${head.slice(1).map(() => '---:|').join('')}`,
  ...rows.map(r => `| ${r.join(' | ')} |`)
]
const ms = (n: number): string => n < 10 ? n.toFixed(2) : n.toFixed(1)

export function table (run: DatabaseRun, connections: number, lightConnections: number): string {
  const head =
    '| scenario | ours req/s | baseline req/s | ours/baseline | reference req/s | ours/reference | ours p50 / p99 ms ' +
    '| baseline p50 / p99 ms | ' +
    'ours peak RSS MB | baseline peak RSS MB | server CPU ms/req ours / baseline | database CPU ms/req ours / ' +
    'baseline / reference | ' +
    `light-load p95 ms ours / baseline / reference (${lightConnections} conn.) | non-2xx ours / baseline |`
  const rows = [head, '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
  const opt = (r: LoadResult | undefined, f: (r: LoadResult) => string) => r === undefined ? '-' : f(r)
  for (const o of run.outcomes) {
    const s = o.scenario
    const conns = s.connections ?? connections
    const label = `${s.title}${conns !== connections ? ` (${conns} conn.)` : ''}`
    if (o.missing || o.ours === undefined) {
      rows.push(`| ${label} | not measured: route missing | | | | | | | | | | | | |`)
      continue
    }
    const a = o.ours
    const b = o.baseline
    const r = o.reference
    const db = (x: LoadResult | undefined) =>
      opt(x, y => (y.dbCpuMsPerRequest !== undefined ? ms(y.dbCpuMsPerRequest) : '-'))
    rows.push(
      `| ${label} | ${f0(a.rps)} | ${opt(b, x => f0(x.rps))} | ` +
        `${opt(b, x => (a.rps / Math.max(x.rps, 1e-9)).toFixed(2))} | ` +
        `${opt(r, x => f0(x.rps))} | ` +
        `${opt(r, x => (a.rps / Math.max(x.rps, 1e-9)).toFixed(2))} | ${ms(a.p50)} / ${ms(a.p99)} | ` +
        `${opt(b, x => `${ms(x.p50)} / ${ms(x.p99)}`)} | ${f0(a.peakRssMb)} | ` +
        `${opt(b, x => f0(x.peakRssMb))} | ${ms(a.cpuMsPerRequest)} / ${opt(b, x => ms(x.cpuMsPerRequest))} | ` +
        `${db(a)} / ${db(b)} / ${db(r)} | ` +
        `${o.light !== undefined
          ? `${ms(o.light.p95)} / ${opt(o.baselineLight, x => ms(x.p95))} / ${opt(o.referenceLight, x => ms(x.p95))}`
          : ''} | ${a.non2xx} / ${opt(b, x => String(x.non2xx))} |`
    )
  }
  return rows.join('\n')
}

/**
 * How the read scenarios grow with the data: for each database measured at two or more scales, the
 * light-load p95 and the requests/s at the largest scale against the smallest, with the budget
 * (page-shaped answers: light-load p95 grows at most 1.3 x for 5 x the data) as lines.
 */
export function growth (runs: DatabaseRun[]): { text: string, lines: BudgetLine[] } {
  const out: string[] = []
  const lines: BudgetLine[] = []
  for (const kind of [...new Set(runs.map(r => r.kind))]) {
    const mine = runs.filter(r => r.kind === kind).sort((x, y) => x.scale - y.scale)
    const small = mine[0]
    const large = mine[mine.length - 1]
    if (small === undefined || large === undefined || small === large) continue
    out.push(
      `Growth on ${headingOf(kind)}, scale ${small.scale} → ${large.scale} ` +
      `(${(large.scale / small.scale).toFixed(0)} x the data):`,
      '',
      '| scenario | light-load p95 ms | p95 growth | req/s (50 conn.) | req/s growth | reference p95 growth |',
      '|---|---:|---:|---:|---:|---:|'
    )
    for (const o of large.outcomes) {
      const before = small.outcomes.find(x => x.scenario.name === o.scenario.name)
      const write = o.scenario.group === 'write'
      const p0 = before?.light?.p95
      const p1 = o.light?.p95
      const r0 = before?.ours?.rps
      const r1 = o.ours?.rps
      if (r0 === undefined || r1 === undefined) continue
      const pg = p0 !== undefined && p1 !== undefined ? p1 / Math.max(p0, 1e-9) : undefined
      const refGrowth =
        before?.referenceLight !== undefined && o.referenceLight !== undefined
          ? o.referenceLight.p95 / Math.max(before.referenceLight.p95, 1e-9)
          : undefined
      out.push(
        `| ${o.scenario.title} | ${p0 !== undefined ? ms(p0) : '-'} → ${p1 !== undefined ? ms(p1) : '-'} | ` +
          `${pg !== undefined ? `${pg.toFixed(2)} x` : '-'} | ` +
          `${f0(r0)} → ${f0(r1)} | ${(r0 / Math.max(r1, 1e-9)).toFixed(2)} x slower | ` +
          `${refGrowth !== undefined ? `${refGrowth.toFixed(2)} x` : '-'} |`
      )
      // a light-load run with no successful answer has no p95 worth the name: it fails, whatever the ratio says
      const answered = (r: LoadResult | undefined) => r !== undefined && r.requests > r.non2xx
      if (!write && pg !== undefined) {
        // page-shaped answers hold their p95 within 1.3 x; an answer that grows with the data (a month, a feed,
        // analytics of every linked event) holds its p95 per item it returns or aggregates within 1.3 x; one whose
        // items the bench does not count is printed for information
        const ok = answered(before?.light) && answered(o.light)
        const paged = PAGE_SHAPED.has(o.scenario.name) || o.scenario.group === 'single-read'
        const i0 = before?.items
        const i1 = o.items
        const perItem = !paged && i0 !== undefined && i1 !== undefined && i0 > 0 && i1 > 0
          ? pg / (i1 / i0)
          : undefined
        const scale = `for ${(large.scale / small.scale).toFixed(0)} x the data`
        const none = '- (no successful answer at light load)'
        lines.push(paged
          ? {
              ok: ok && pg <= 1.3,
              enforced: kind === 'pg',
              text: `growth ${o.scenario.name}: light-load p95 ${ok ? `${pg.toFixed(2)} x` : none} <= 1.3 x ${scale}`
            }
          : perItem !== undefined
            ? {
                ok: ok && perItem <= 1.3,
                enforced: kind === 'pg',
                text:
                  `growth ${o.scenario.name}: light-load p95 per item ${ok ? `${perItem.toFixed(2)} x` : none} ` +
                  `<= 1.3 x ${scale} (p95 ${pg.toFixed(2)} x, items an answer ` +
                  `${(i0 ?? 0).toFixed(0)} → ${(i1 ?? 0).toFixed(0)})`
              }
            : {
                ok: undefined,
                enforced: false,
                text:
                  `growth ${o.scenario.name}: light-load p95 ${ok ? `${pg.toFixed(2)} x` : none} ${scale} ` +
                  '(an answer that grows with the data, its items not counted)'
              })
      }
    }
    out.push('')
  }
  return { text: out.join('\n'), lines }
}

/** The scenarios measured against the wire: ours beside a bare server sending the same answers from memory. */
export function wireText (run: DatabaseRun, connections: number): string {
  const rows = run.outcomes.filter(o => o.ours !== undefined && o.wire !== undefined)
  if (rows.length === 0) return ''
  return [
    'Against the wire (a bare `node:http` server sending the service\'s own answers from memory, ' +
    `bench/wire-server.ts; ${connections} connections):`,
    '',
    ...markdown(
      ['scenario', 'bytes an answer', 'ours req/s', 'wire req/s', 'ours/wire', 'ours MB/s', 'wire MB/s',
        'server CPU ms/req ours / wire'],
      rows.map(o => {
        const a = o.ours as LoadResult
        const w = o.wire as LoadResult
        const bytes = o.wireBytes ?? 0
        return [o.scenario.title, f0(bytes), f0(a.rps), f0(w.rps), (a.rps / Math.max(w.rps, 1e-9)).toFixed(2),
          f1(a.rps * bytes / 1e6), f1(w.rps * bytes / 1e6), `${ms(a.cpuMsPerRequest)} / ${ms(w.cpuMsPerRequest)}`]
      })
    )
  ].join('\n')
}

/**
 * The floor (scenario `floor`: the least an authenticated request in the tenant's scope costs) and, for each list
 * with a reference, what ours/reference would be if the list's own work cost exactly the reference's: the floor's
 * time a request, plus the reference's, less what the bare server spends answering at all (the floor's wire).
 * A ceiling for the service as it authenticates and scopes every request, measured in the same run.
 */
export function floorText (run: DatabaseRun): string {
  const floor = outcome(run, 'floor')
  const ours = floor?.ours
  const wire = floor?.wire
  if (ours === undefined || wire === undefined) return ''
  const rows = run.outcomes.filter(o => o.reference !== undefined && o.ours !== undefined)
  const out = [
    `The floor: an authenticated request in the tenant's scope answers ${f0(ours.rps)} req/s` +
      `${floor?.baseline !== undefined ? ` (the same statement bare: ${f0(floor.baseline.rps)})` : ''}; ` +
      `a bare server sends the same answer ${f0(wire.rps)} times a second.`
  ]
  if (rows.length > 0) {
    out.push('', ...markdown(
      ['list', 'reference req/s', 'ours req/s', 'ours/reference', 'ceiling: floor + the reference\'s work',
        'ceiling/reference'],
      rows.map(o => {
        const ref = o.reference as LoadResult
        const mine = o.ours as LoadResult
        const ceiling = 1 / (1 / ours.rps + 1 / ref.rps - 1 / wire.rps)
        return [o.scenario.name, f0(ref.rps), f0(mine.rps), (mine.rps / ref.rps).toFixed(2), f0(ceiling),
          (ceiling / ref.rps).toFixed(2)]
      })
    ))
  }
  return out.join('\n')
}

/** What the check of each reference against the baseline found. */
export function referenceText (run: DatabaseRun): string {
  const rows = run.outcomes.filter(o => o.referenceCheck !== undefined)
  if (rows.length === 0) return ''
  return [
    'References (the fastest SQL for the same answer, bench/reference-handlers.ts) checked against the baseline:',
    '',
    ...rows.map(o => `- ${o.scenario.name}: ${o.referenceCheck ?? ''}`)
  ].join('\n')
}

/** Scenarios measured alone and beside other work: the same route's figures side by side. */
export function besideText (run: DatabaseRun, connections: number): string {
  const rows = run.outcomes.filter(o => o.ours !== undefined && o.beside !== undefined)
  if (rows.length === 0) return ''
  const lines = [
    '| scenario | alone req/s | alone p50 / p95 / p99 ms | beside req/s | beside p50 / p95 / p99 ms | beside |',
    '|---|---:|---:|---:|---:|---|'
  ]
  for (const o of rows) {
    const a = o.ours as LoadResult
    const b = o.beside as LoadResult
    lines.push(
      `| ${o.scenario.title} (${o.scenario.connections ?? connections} conn.) ` +
      `| ${f0(a.rps)} | ${ms(a.p50)} / ${ms(a.p95)} / ${ms(a.p99)} | ${f0(b.rps)} | ${ms(b.p50)} / ${ms(b.p95)} / ` +
      `${ms(b.p99)} | ${o.besideNote ?? ''} |`
    )
  }
  return lines.join('\n')
}

/**
 * What the service logged at warn and above, per scenario (the first lines of each text, as the service wrote them).
 */
export function errorText (run: DatabaseRun): string {
  const rows = run.outcomes.filter(o => (o.serviceLog?.length ?? 0) + (o.baselineLog?.length ?? 0) > 0)
  if (rows.length === 0) return ''
  const lines = [`Service log, level warn and above, and the baseline's failures (${headingOf(run.kind)}):`, '']
  const cut = (text: string) => text.length > 600 ? `${text.slice(0, 600)}…` : text
  for (const o of rows) {
    for (const e of o.serviceLog ?? []) lines.push(`- ${o.scenario.name}, service: ${e.count} x ${cut(e.text)}`)
    for (const e of o.baselineLog ?? []) lines.push(`- ${o.scenario.name}, baseline: ${e.count} x ${cut(e.text)}`)
  }
  return lines.join('\n')
}

function outcome (run: DatabaseRun, name: string): ScenarioOutcome | undefined {
  return run.outcomes.find(o => o.scenario.name === name)
}

const ratioOf = (o: ScenarioOutcome | undefined): number | undefined =>
  o?.ours !== undefined && o.baseline !== undefined ? o.ours.rps / Math.max(o.baseline.rps, 1e-9) : undefined

/** More than 1 % of our answers were not 2xx: the figures do not measure the intended work. */
const failing = (o: ScenarioOutcome | undefined): boolean =>
  [o?.ours, o?.light].some(r => r !== undefined && r.non2xx > r.requests * 0.01)

/** Reads whose answer is a page of 20 – 100 items or one row: their light-load p95 is held under 15 ms. */
const PAGE_SHAPED = new Set([
  'list-events', 'list-events-first', 'list-events-deep', 'list-contacts', 'search-contacts', 'space-activity',
  'rule-executions', 'public-space', 'search-contacts-phone', 'list-contacts-phone', 'contact-duplicates'
])

/** Lists of the issue that have no independent reference in the bench yet: reported as not measured. */
const LISTS_WITHOUT_REFERENCE = [
  'search-contacts-phone', 'list-contacts-phone', 'contact-duplicates', 'contact-duplicates-email',
  'contact timeline', 'sync pages', 'attendees with registration counts'
]

export interface NpmStart {
  /** spawn of `npm start` to its first answer, on a new data directory and on the same one again */
  newMs: number
  existingMs: number
  /** resident set of the service's process, idle 10 s after each start */
  newIdleRssMb: number
  existingIdleRssMb: number
}

/**
 * The budget (docs/performance.md, "Budget"). Ratios, latencies and RSS are enforced on PostgreSQL; on PGlite (one
 * WASM connection, the database inside the service's process) and on Citus (three PostgreSQL servers on the same
 * machine, every statement through the coordinator) they are printed for information. PGlite's own start and idle
 * memory through `npm start` are enforced wherever measured.
 */
export function budgets (run: DatabaseRun, connections: number): BudgetLine[] {
  const enforced = run.kind === 'pg'
  const lines: BudgetLine[] = []
  const add = (ok: boolean | undefined, text: string, always = false) =>
    lines.push({ ok, text, enforced: enforced || always })
  const errors = (o: ScenarioOutcome | undefined) => failing(o) ? ' (error answers)' : ''
  const ratio = (a: LoadResult | undefined, b: LoadResult | undefined) =>
    a !== undefined && b !== undefined ? a.rps / Math.max(b.rps, 1e-9) : undefined

  // single-row reads and writes against the baseline (the same statements, bare)
  for (const [name, floor, label] of [
    ['get-event', 0.6, 'single-row read'], ['get-contact', 0.6, 'single-row read'],
    ['create-contact', 0.7, 'write'], ['patch-event', 0.7, 'write']
  ] as const) {
    const o = outcome(run, name)
    const r = ratioOf(o)
    add(
      r === undefined ? undefined : r >= floor && !failing(o),
      `${label} ${name}: ours/baseline ${r?.toFixed(2) ?? '-'} >= ${floor.toFixed(2)} at ${connections} connections` +
        errors(o)
    )
  }

  // lists against their independent reference (the fastest SQL written for the same answer)
  for (const o of run.outcomes) {
    if (o.reference === undefined || o.ours === undefined) continue
    const name = o.scenario.name
    const r = ratio(o.ours, o.reference) ?? 0
    const ours = o.ours.dbCpuMsPerRequest
    const ref = o.reference.dbCpuMsPerRequest
    const cpu = ours !== undefined && ref !== undefined ? ours / Math.max(ref, 1e-9) : undefined
    add(
      r >= 0.7 && (cpu === undefined || cpu <= 1.5) && !failing(o),
      `list ${name}: ours/reference ${r.toFixed(2)} >= 0.70 in req/s, ` +
        `database CPU ${ours !== undefined ? ms(ours) : '-'} ` +
        `ms/req <= 1.5 x the reference's ${ref !== undefined ? ms(ref) : '-'} ` +
        `(${cpu !== undefined ? `${cpu.toFixed(2)} x` : 'not measured'})${errors(o)}`
    )
    if (PAGE_SHAPED.has(name)) {
      const p = o.light?.p95
      add(
        p === undefined ? undefined : p < 15 && !failing(o),
        `page ${name}: light-load p95 ${p !== undefined ? ms(p) : '-'} ms < 15 ms` +
          `${o.referenceLight !== undefined ? ` (reference ${ms(o.referenceLight.p95)} ms)` : ''}${errors(o)}`
      )
    }
  }
  for (const name of LISTS_WITHOUT_REFERENCE) {
    const o = outcome(run, name)
    if (o?.reference !== undefined) continue
    add(undefined, `list ${name}: no independent reference in the bench yet`)
  }

  // large answers and the refusal against the wire (a bare server sending the same answers from memory)
  for (const [name, label] of [
    ['calendar-month', 'large answer calendar-month'], ['space-feed', 'large answer space-feed'],
    ['calendar-month-br', 'large answer calendar-month, brotli'], ['space-feed-gzip', 'large answer space-feed, gzip'],
    ['unauthorized', '401 path']
  ] as const) {
    const o = outcome(run, name)
    const r = ratio(o?.ours, o?.wire)
    add(
      r === undefined ? undefined : r >= 0.5 && (name === 'unauthorized' || !failing(o)),
      `${label}: ours/wire ${r?.toFixed(2) ?? '-'} >= 0.50 (${o?.ours !== undefined ? f0(o.ours.rps) : '-'} ` +
        `against ${o?.wire !== undefined ? f0(o.wire.rps) : '-'} req/s` +
        `${o?.wireBytes !== undefined ? `, ${(o.wireBytes / 1024).toFixed(1)} KB an answer` : ''})`
    )
  }

  // latency budgets of earlier issues, unchanged
  const p95 = (name: string, limit: number, label: string) => {
    const o = outcome(run, name)
    const v = o?.light?.p95
    const floor = o?.baselineLight?.p95
    add(
      v === undefined ? undefined : v < limit && !failing(o),
      `${label}: p95 ${v !== undefined ? ms(v) : '-'} ms < ${limit} ms` +
        `${floor !== undefined ? ` (baseline, same SQL: ${ms(floor)} ms)` : ''}` +
        `${o?.missing === true ? ' (not measured: route missing)' : ''}${errors(o)}`
    )
  }
  p95(
    'search-contacts',
    20,
    `contact search on ${run.scale >= 1 ? '1 M' : `${Math.round(run.scale * 1e6).toLocaleString('en')}`} contacts`
  )
  // issue #23, the largest tenant (400 000 contacts at scale 1): docs/performance-log.md, "Phone search and
  // duplicates"
  p95('search-contacts-phone', 20, 'contact search by phone number (largest tenant)')
  p95('list-contacts-phone', 20, 'contacts list searched by phone number (largest tenant)')
  p95('contact-duplicates', 35, 'duplicate contacts, first page of 20 groups (largest tenant)')
  p95('contact-duplicates-email', 100, 'duplicate contacts by e-mail, a page that walks its 20 000-entry budget')
  p95('calendar-month', 25, 'calendar month (largest tenant)')
  p95('create-series', 150, 'series creation with 500 occurrences')
  p95('space-analytics', 100, 'space analytics')
  const first = outcome(run, 'list-events-first')
  const deep = outcome(run, 'list-events-deep')
  if (first?.ours !== undefined && deep?.ours !== undefined) {
    const r = deep.ours.rps / Math.max(first.ours.rps, 1e-9)
    const p =
      deep.light !== undefined && first.light !== undefined
        ? deep.light.p95 / Math.max(first.light.p95, 1e-9)
        : undefined
    add(
      r >= 0.8 && (p === undefined || p <= 1.25) && !failing(deep),
      `page 500 by cursor costs what page 1 costs: ${f0(deep.ours.rps)} req/s against ${f0(first.ours.rps)} ` +
        `(${r.toFixed(2)} >= 0.80), light-load p95 ${p !== undefined ? `${p.toFixed(2)} x` : '-'} <= 1.25 x`
    )
  }
  const rss = Math.max(0, ...run.outcomes.map(o => o.ours?.peakRssMb ?? 0))
  if (run.outcomes.length > 0) add(rss < 250, `RSS under load: peak ${f1(rss)} MB < 250 MB`)
  if (run.kind !== 'pglite') add(run.startMs < 1500, `start to first answer: ${f0(run.startMs)} ms < 1500 ms`)
  else if (!Number.isNaN(run.startMs)) {
    add(undefined, `start to first answer of the bench's service: ${f0(run.startMs)} ms (see npm start below)`)
  }
  const n = run.npmStart
  if (n !== undefined) {
    add(n.newMs <= 5000, `PGlite, npm start on a new data directory: first answer after ${f0(n.newMs)} ms <= 5000 ms`,
      true)
    add(n.existingMs <= 1500,
      `PGlite, npm start on an existing data directory: first answer after ${f0(n.existingMs)} ms <= 1500 ms`, true)
    add(n.existingIdleRssMb <= 350 && n.newIdleRssMb <= 350,
      `PGlite, idle after npm start: ${f0(n.newIdleRssMb)} MB (new data directory), ${f0(n.existingIdleRssMb)} MB ` +
      '(existing) <= 350 MB', true)
  }
  return lines
}

export function budgetText (lines: BudgetLine[]): string {
  return lines.map(l => {
    const mark = l.ok === undefined ? 'NOT MEASURED' : l.ok ? 'PASS' : l.enforced ? 'FAIL' : 'info: missed'
    return `${mark.padEnd(12)} ${l.text}`
  }).join('\n')
}

/**
 * The bench's growth lines (bench/report.ts, `growth`), from two runs made up here: a page-shaped answer holds its
 * light-load p95 within 1.3 x; an answer that grows with the data holds its p95 per item within 1.3 x; one whose items
 * are not counted is printed and not judged.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { growth, type DatabaseRun, type ScenarioOutcome } from '../bench/report.ts'
import type { LoadResult } from '../bench/load.ts'
import { SCENARIOS } from '../bench/scenarios.ts'

const load = (p95: number): LoadResult => ({
  requests: 100,
  rps: 100,
  p50: p95 / 2,
  p95,
  p99: p95 * 2,
  non2xx: 0,
  statuses: { 200: 100 },
  errors: 0,
  peakRssMb: 100,
  cpuMsPerRequest: 1
})

const scenario = (name: string) => {
  const s = SCENARIOS.find(x => x.name === name)
  if (s === undefined) throw new Error(`no scenario ${name}`)
  return s
}

const outcome = (name: string, p95: number, items?: number): ScenarioOutcome => ({
  scenario: scenario(name), missing: false, ours: load(p95), light: load(p95), ...(items !== undefined ? { items } : {})
})

const run = (scale: number, outcomes: ScenarioOutcome[]): DatabaseRun =>
  ({ kind: 'pg', scale, startMs: 0, outcomes })

const lineOf = (lines: Array<{ text: string, ok: boolean | undefined, enforced: boolean }>, name: string) => {
  const line = lines.find(l => l.text.startsWith(`growth ${name}:`))
  assert.ok(line !== undefined, `no growth line for ${name}`)
  return line
}

void describe('bench growth lines', () => {
  void it('judges page-shaped answers by p95 and growing answers by p95 per item', () => {
    const { lines } = growth([
      run(1, [outcome('list-events', 10), outcome('calendar-month', 10, 1000), outcome('space-feed', 5, 280),
        outcome('get-series', 20)]),
      run(5, [outcome('list-events', 12), outcome('calendar-month', 60, 5000), outcome('space-feed', 5, 280),
        outcome('get-series', 90)])
    ])
    const page = lineOf(lines, 'list-events')
    assert.equal(page.ok, true)
    assert.equal(page.enforced, true)

    // five times the items in six times the time: 1.2 x per item
    const month = lineOf(lines, 'calendar-month')
    assert.equal(month.ok, true, month.text)
    assert.equal(month.enforced, true)
    assert.match(month.text, /per item 1\.20 x/)
    assert.match(month.text, /items an answer 1000 → 5000/)

    // items counted on one side only: printed, not judged
    const series = lineOf(lines, 'get-series')
    assert.equal(series.ok, undefined)
    assert.equal(series.enforced, false)
  })

  void it('fails a growing answer whose cost per item grows, and a page whose p95 grows', () => {
    const { lines } = growth([
      run(1, [outcome('list-events', 10), outcome('calendar-month', 10, 1000)]),
      run(5, [outcome('list-events', 14), outcome('calendar-month', 80, 5000)])
    ])
    assert.equal(lineOf(lines, 'list-events').ok, false)
    const month = lineOf(lines, 'calendar-month')
    assert.equal(month.ok, false)
    assert.match(month.text, /per item 1\.60 x/)
  })
})

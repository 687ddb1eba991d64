/**
 * The README's configuration table names every variable the service reads: `loadConfig` is run on an environment
 * that records each name it asks for, and each must stand in the first column of the table (docs/deployment.md
 * points there). A variable added to src/config.ts without a row fails here.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { loadConfig } from '../src/config.ts'

/** The names `loadConfig` reads from an environment. */
function namesRead (): string[] {
  const asked = new Set<string>()
  const env = new Proxy<Record<string, string | undefined>>({}, {
    get (_target, name) {
      if (typeof name === 'string') asked.add(name)
      return undefined
    }
  })
  loadConfig(env)
  return [...asked].sort()
}

/** The variables of the README's configuration table: the backticked names of each row's first column. */
function namesInReadme (): Set<string> {
  const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const names = new Set<string>()
  for (const line of readme.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1] ?? ''
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1] ?? '')
  }
  return names
}

void describe("the README's configuration table", () => {
  void it('names every variable src/config.ts reads', () => {
    const read = namesRead()
    assert.ok(read.length > 40, `the recorder saw ${read.length} names: ${read.join(', ')}`)
    const table = namesInReadme()
    assert.deepEqual(read.filter(n => !table.has(n)), [], 'variables read but not in the README table')
  })
})

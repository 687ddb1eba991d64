#!/usr/bin/env node
// The module graph of src (docs/architecture.md, "Modules and their public faces"): which module of src/modules
// imports which, type imports counted, read by madge with the project's .madgerc (as `npx madge --circular src`).
// Prints the pairs of modules that depend on each other both ways, the modules in layers (when there is no cycle
// among them) and the file-level cycles madge finds; exits 1 if there is a two-way pair or a cycle.
// Tests and fixtures (`*.test.ts`, `*.fixtures.ts`) may reach into any module and are left out of the module graph.
//   npm run module-graph                     the two-way pairs, the layers and the cycles
//   npm run module-graph -- --edges          also every module edge, with the files that make it
import fs from 'node:fs'
import path from 'node:path'
import madge from 'madge'

const root = path.resolve(import.meta.dirname, '..')
const config = JSON.parse(fs.readFileSync(path.join(root, '.madgerc'), 'utf8'))
const showEdges = process.argv.includes('--edges')

const result = await madge(path.join(root, 'src'), {
  ...config, baseDir: path.join(root, 'src'), tsConfig: path.join(root, config.tsConfig)
})
const graph = result.obj()

const moduleOf = file => /^modules\/([^/]+)\//.exec(file)?.[1]
const isTest = file => /\.(test|fixtures)\.ts$/.test(file)

/** module → module → the file edges that make the dependency */
const edges = new Map()
for (const [file, deps] of Object.entries(graph)) {
  const from = moduleOf(file)
  if (from === undefined || isTest(file)) continue
  for (const dep of deps) {
    const to = moduleOf(dep)
    if (to === undefined || to === from) continue
    if (!edges.has(from)) edges.set(from, new Map())
    const byTarget = edges.get(from)
    if (!byTarget.has(to)) byTarget.set(to, [])
    byTarget.get(to).push(`${file} -> ${dep}`)
  }
}

const dependsOn = (a, b) => edges.get(a)?.has(b) ?? false
const modules = [...new Set(Object.keys(graph).map(moduleOf).filter(m => m !== undefined))].sort()

if (showEdges) {
  process.stdout.write('module edges:\n')
  for (const from of modules) {
    for (const [to, files] of [...(edges.get(from) ?? new Map())].sort(([a], [b]) => a.localeCompare(b))) {
      process.stdout.write(`  ${from} -> ${to}\n`)
      for (const f of files) process.stdout.write(`      ${f}\n`)
    }
  }
}

const pairs = []
for (const [i, a] of modules.entries()) {
  for (const b of modules.slice(i + 1)) if (dependsOn(a, b) && dependsOn(b, a)) pairs.push([a, b])
}
process.stdout.write(`modules depending on each other both ways: ${pairs.length}\n`)
for (const [a, b] of pairs) {
  process.stdout.write(`  ${a} <-> ${b}\n`)
  for (const f of [...edges.get(a).get(b), ...edges.get(b).get(a)]) process.stdout.write(`      ${f}\n`)
}

// the modules in layers when the module graph has no cycle: each imports only modules of the layers before it
const layerOf = new Map()
const layer = (m, seen = new Set()) => {
  if (layerOf.has(m)) return layerOf.get(m)
  if (seen.has(m)) return Number.NaN
  seen.add(m)
  const below = [...(edges.get(m)?.keys() ?? [])].map(d => layer(d, seen))
  const at = below.length === 0 ? 0 : Math.max(...below) + 1
  layerOf.set(m, at)
  return at
}
for (const m of modules) layer(m)
if ([...layerOf.values()].every(Number.isFinite)) {
  process.stdout.write('module layers, lowest first (each imports only modules of lower layers):\n')
  const depth = Math.max(...layerOf.values())
  for (let i = 0; i <= depth; i++) {
    const here = modules.filter(m => layerOf.get(m) === i)
    const named = here.map(m => edges.has(m) ? `${m} (${[...edges.get(m).keys()].sort().join(', ')})` : m)
    process.stdout.write(`  ${i}: ${named.join('; ')}\n`)
  }
}

const cycles = result.circular()
process.stdout.write(`file cycles (madge --circular): ${cycles.length}\n`)
for (const cycle of cycles) process.stdout.write(`  ${cycle.join(' > ')}\n`)

process.exitCode = pairs.length > 0 || cycles.length > 0 ? 1 : 0

#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's test runner (through tsx). Node 20's
// --test expands no glob patterns, so the file list is built here. Extra arguments are passed on
// (e.g. a file path or --test-name-pattern).
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

function find (dir) {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : find(p)
    return e.name.endsWith('.test.ts') ? [p] : []
  })
}

const args = process.argv.slice(2)
const explicit = args.filter(a => a.endsWith('.ts'))
const options = args.filter(a => !a.endsWith('.ts'))
const files = explicit.length > 0 ? explicit : [...find('src'), ...find('test')].sort()
const concurrency = process.env.TEST_CONCURRENCY ?? '2'
const result = spawnSync(process.execPath, [
  '--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...options, ...files
], { stdio: 'inherit' })
process.exit(result.status ?? 1)

// A node:test reporter that writes, slowest first, each test file's time (the sum of its top-level tests'
// durations), its number of top-level tests and failures: scripts/run-tests.mjs adds it when TEST_FILE_TIMES
// names a file to write, so that a slow run shows where its time goes.
export default async function * testFileTimes (source) {
  const files = new Map()
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue
    const file = event.data.file ?? '(no file)'
    const entry = files.get(file) ?? { ms: 0, tests: 0, failed: 0 }
    entry.ms += event.data.details?.duration_ms ?? 0
    entry.tests += 1
    if (event.type === 'test:fail') entry.failed += 1
    files.set(file, entry)
  }
  const cwd = `${process.cwd()}/`
  yield 'seconds\ttop-level tests\tfailed\tfile\n'
  for (const [file, e] of [...files].sort((a, b) => b[1].ms - a[1].ms)) {
    yield `${(e.ms / 1000).toFixed(1)}\t${e.tests}\t${e.failed}\t` +
      `${file.startsWith(cwd) ? file.slice(cwd.length) : file}\n`
  }
}

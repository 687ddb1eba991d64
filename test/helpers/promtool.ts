/**
 * Prometheus's `promtool` for the check of the metrics exposition: the first found (PROMTOOL_PATH, then PATH), and the
 * skip reason of a suite when there is none, so `npm test` passes on a machine without it. In CI (`CI=true`) a
 * missing promtool is not a reason to skip: `.ci/run` installs Debian's `prometheus` package, and the suite fails
 * when it is not there rather than pass without checking anything.
 */
import fs from 'node:fs'
import path from 'node:path'

export function findPromtool (): string | undefined {
  const fromEnv = process.env.PROMTOOL_PATH
  if (fromEnv !== undefined && fromEnv !== '' && fs.existsSync(fromEnv)) return fromEnv
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir, 'promtool')
    if (fs.existsSync(file)) return file
  }
  return undefined
}

/** The promtool to run, and `skip` for node:test: false, or why the suite cannot run (never in CI). */
export function promtoolOrSkip (): { executable: string | undefined, skip: string | false } {
  const executable = findPromtool()
  const missing = 'no promtool found (install Debian\'s `prometheus` package or set PROMTOOL_PATH)'
  return { executable, skip: executable === undefined && process.env.CI !== 'true' ? missing : false }
}

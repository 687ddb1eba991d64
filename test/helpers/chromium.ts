/**
 * The browser of the browser tests: the first Chromium found (CHROMIUM_PATH, then the usual names on PATH), and the
 * skip reason of a suite when there is none, so `npm test` passes on a machine without it (`.ci/run` installs
 * Debian's `chromium` package).
 */
import fs from 'node:fs'
import path from 'node:path'

export function findChromium (): string | undefined {
  const fromEnv = process.env.CHROMIUM_PATH
  if (fromEnv !== undefined && fromEnv !== '' && fs.existsSync(fromEnv)) return fromEnv
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
      const file = path.join(dir, name)
      if (fs.existsSync(file)) return file
    }
  }
  return undefined
}

/** The Chromium to launch, and `skip` for node:test: false, or why the suite cannot run. */
export function chromiumOrSkip (): { executable: string | undefined, skip: string | false } {
  const executable = findChromium()
  return {
    executable,
    skip: executable === undefined
      ? 'no chromium binary found (install Debian\'s `chromium` package or set CHROMIUM_PATH)'
      : false
  }
}

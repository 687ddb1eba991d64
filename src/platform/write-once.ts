/** Files a process creates once and every process then shares (the dev signing key, the token secret). */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

/**
 * Writes `content` to `file` (mode 0600) unless it exists: written aside, then linked into place, so two processes
 * starting at once keep one file (the first link wins; the other's content is dropped). Creates the folder.
 */
export function writeOnce (file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`
  fs.writeFileSync(tmp, content, { mode: 0o600, flag: 'wx' })
  try {
    fs.linkSync(tmp, file) // another process may have won the race: keep theirs
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  } finally {
    fs.unlinkSync(tmp)
  }
}

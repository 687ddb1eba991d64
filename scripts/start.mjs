/**
 * `npm start`: builds dist/server.js when a source file, the lockfile or the build script is newer
 * than it (about a second), then runs it in this process.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const OUT = path.join(ROOT, 'dist', 'server.js')

function newest (p) {
  const st = fs.statSync(p)
  if (!st.isDirectory()) return st.mtimeMs
  let max = 0
  for (const name of fs.readdirSync(p)) max = Math.max(max, newest(path.join(p, name)))
  return max
}

const built = fs.existsSync(OUT) ? fs.statSync(OUT).mtimeMs : 0
const inputs = ['src', 'package-lock.json', 'scripts/build.mjs'].map(p => newest(path.join(ROOT, p)))
if (Math.max(...inputs) > built) {
  const { build } = await import('./build.mjs')
  await build()
}
await import(pathToFileURL(OUT).href)

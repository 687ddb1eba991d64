/**
 * SQL scripts as single statements: pg-boss' multi-statement scripts on PGlite, which prepares every
 * statement (automation.queue.ts), and the migrations on a Citus cluster, where DDL sent in one
 * multi-statement query is refused once it must reach the shards (migrate.ts).
 */

/** Splits a SQL script into statements at top-level semicolons (quotes, dollar quotes and comments respected). */
export function splitSql (script: string): string[] {
  const out: string[] = []
  let start = 0
  let i = 0
  while (i < script.length) {
    const c = script[i] as string
    if (c === '\'' || c === '"') {
      const end = script.indexOf(c, i + 1)
      i = end < 0 ? script.length : end + 1
    } else if (c === '-' && script[i + 1] === '-') {
      const end = script.indexOf('\n', i)
      i = end < 0 ? script.length : end + 1
    } else if (c === '/' && script[i + 1] === '*') {
      const end = script.indexOf('*/', i + 2)
      i = end < 0 ? script.length : end + 2
    } else if (c === '$') {
      const m = /^\$[A-Za-z_0-9]*\$/.exec(script.slice(i))
      if (m === null) { i++; continue }
      const end = script.indexOf(m[0], i + m[0].length)
      i = end < 0 ? script.length : end + m[0].length
    } else if (c === ';') {
      out.push(script.slice(start, i))
      start = ++i
    } else {
      i++
    }
  }
  out.push(script.slice(start))
  return out.map(s => s.trim()).filter(s => s !== '')
}

/** The physical lines of an uploaded text body (a CSV, a calendar), for errors that name a line. */

export const LF = 0x0a
export const CR = 0x0d

/** Calls `each(line, start, end)` for every physical line of `bytes` (end excludes the line break). */
export function forEachLine (bytes: Uint8Array, each: (line: number, start: number, end: number) => void): void {
  let line = 1
  let start = 0
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]
    if (c !== LF && c !== CR) continue
    each(line, start, i)
    if (c === CR && bytes[i + 1] === LF) i++
    line++
    start = i + 1
  }
  if (start < bytes.length) each(line, start, bytes.length)
}

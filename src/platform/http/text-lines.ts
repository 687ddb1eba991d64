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

/** The bytes of a body without a leading UTF-8 byte order mark (Excel and some calendar apps write one). */
export const withoutBom = (raw: Buffer): Buffer =>
  raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw

/**
 * The text of UTF-8 bytes, or the line (1-based) of the first byte that is not UTF-8: a line break is never part of a
 * multi-byte sequence, so the first line that does not decode holds it.
 */
export function utf8OrBadLine (bytes: Uint8Array): { text: string } | { badLine: number } {
  try {
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes) }
  } catch {
    let bad = 0
    forEachLine(bytes, (line, start, end) => {
      if (bad !== 0) return
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(start, end))
      } catch {
        bad = line
      }
    })
    return { badLine: Math.max(bad, 1) }
  }
}

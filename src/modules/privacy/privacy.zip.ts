/**
 * A ZIP file of an export, streamed (fflate): `personal-data.json`, deflated, and any stored file the export lists
 * (none today: docs/privacy.md). The file is made as the client reads it; the JSON itself is bounded by the sections'
 * limits.
 */
import { PassThrough, type Readable } from 'node:stream'
import { Zip, ZipDeflate } from 'fflate'

export interface ZipEntry { name: string, data: Uint8Array }

export function zipStream (entries: readonly ZipEntry[]): Readable {
  const out = new PassThrough()
  const zip = new Zip((err, chunk, final) => {
    if (err !== null) {
      out.destroy(err)
      return
    }
    out.write(Buffer.from(chunk))
    if (final) out.end()
  })
  // one entry after the other, so that a large file is compressed as the client takes the bytes
  setImmediate(() => {
    try {
      for (const entry of entries) {
        const file = new ZipDeflate(entry.name, { level: 6 })
        zip.add(file)
        file.push(entry.data, true)
      }
      zip.end()
    } catch (err) {
      out.destroy(err as Error)
    }
  })
  return out
}

/**
 * Answers compressed when the client asks (docs/api-conventions.md, "Compression"): `Accept-Encoding` with `br` or
 * `gzip` gets a compressible answer (JSON, text, CSV, iCalendar, XML) of 1 KiB or more in that coding, through
 * @fastify/compress; `Vary: Accept-Encoding` on what was compressed. Request bodies are read as sent: a compressed
 * request body is not accepted.
 *
 * An answer kept in memory (a public space's feed) is compressed once per coding and kept beside its text
 * (`KeptBody`), and sent with its coding set, which the plugin then leaves as it is.
 */
import zlib from 'node:zlib'
import compress from '@fastify/compress'
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/** The codings sent, the preferred first when a client weighs them alike. */
export const ENCODINGS = ['br', 'gzip'] as const
export type Encoding = typeof ENCODINGS[number]

/** Smaller answers go as they are: the coding's headers and work cost more than the bytes saved. */
export const COMPRESS_THRESHOLD = 1024
/** Bodies in memory up to this size are compressed in one call (larger ones, and streams, through a zlib stream). */
const SYNC_MAX = 4 << 20

// brotli at quality 4, gzip at level 6: a calendar month (370 KB of JSON) in 1.5 ms to 19 KB, and in 2.0 ms to 21 KB
// (docs/performance.md, "Compression")
const BROTLI = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }
const GZIP = { level: 6 }

export async function registerCompression (app: FastifyInstance): Promise<void> {
  await app.register(compress, {
    encodings: [...ENCODINGS],
    threshold: COMPRESS_THRESHOLD,
    brotliOptions: BROTLI,
    zlibOptions: GZIP,
    // a body in memory is compressed in one call, on this thread: through a zlib stream in the thread pool, a
    // calendar month (370 KB) cost 13 ms of CPU a request in brotli against 4.8 ms as it is (docs/performance.md,
    // "Compression"); streams (exports) stay streams
    syncThreshold: SYNC_MAX,
    // request bodies: as sent (a Content-Encoding on a request is not decoded)
    globalDecompression: false
  })
}

/** The coding of `ENCODINGS` the request's Accept-Encoding prefers, as the plugin chooses it; none for identity. */
export function encodingFor (request: FastifyRequest): Encoding | undefined {
  const header = request.headers['accept-encoding']
  if (header === undefined || header === '') return undefined
  const chosen = negotiate(header.toLowerCase().replace(/\*|x-gzip/g, 'gzip'), [...ENCODINGS])
  return chosen === null ? undefined : chosen as Encoding
}

/** A body kept in memory, with each coding of it made once, when first asked for. */
export class KeptBody {
  private readonly coded = new Map<Encoding, Buffer>()
  constructor (readonly text: Buffer) {}

  /** The bytes in `encoding` (the text itself when it is below the threshold or no coding is asked). */
  in (encoding: Encoding | undefined): { bytes: Buffer, encoding: Encoding | undefined } {
    if (encoding === undefined || this.text.length < COMPRESS_THRESHOLD) {
      return { bytes: this.text, encoding: undefined }
    }
    let bytes = this.coded.get(encoding)
    if (bytes === undefined) {
      bytes = encoding === 'br' ? zlib.brotliCompressSync(this.text, BROTLI) : zlib.gzipSync(this.text, GZIP)
      this.coded.set(encoding, bytes)
    }
    return { bytes, encoding }
  }

  /** Sends the body in the coding the request prefers, with `Content-Encoding` and `Vary` when coded. */
  send (request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const { bytes, encoding } = this.in(encodingFor(request))
    if (encoding !== undefined) {
      const vary = reply.getHeader('vary')
      void reply.header('content-encoding', encoding)
        .header('vary', vary === undefined ? 'accept-encoding' : `${String(vary)}, accept-encoding`)
    }
    return reply.send(bytes)
  }
}

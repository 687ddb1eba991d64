/**
 * JSON Lines answers (https://jsonlines.org): one JSON value a line, `\n` after each, UTF-8, as
 * `application/jsonl`. Rows are read in keyset chunks as the CSV answers read them (csv.ts, `keysetRows`): memory
 * stays flat, a slow client holds at most one chunk, and a failure after the first byte cuts the transfer short.
 */
import { Transform, pipeline } from 'node:stream'
import type { FastifyReply } from 'fastify'
import { keysetRows } from './csv.ts'

/** Sends the rows of a keyset read as a JSON Lines attachment named `filename`. The access checks must have run. */
export async function sendJsonLines<T, K> (
  reply: FastifyReply,
  filename: string,
  read: (after: K | undefined) => Promise<T[]>,
  keyOf: (row: T) => K,
  map: (row: T) => unknown = row => row
): Promise<FastifyReply> {
  const lines = new Transform({
    writableObjectMode: true,
    transform (row: T, _encoding, done) { done(null, JSON.stringify(map(row)) + '\n') }
  })
  const out = pipeline(keysetRows(read, keyOf), lines, err => {
    if (err === null || err === undefined) return
    if ((err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') {
      reply.log.info({ export: filename }, 'JSON Lines export: the client went away; reading stopped')
    } else {
      reply.log.error({ err, export: filename }, 'JSON Lines export failed: the answer was cut short')
    }
  })
  return await reply
    .header('content-type', 'application/jsonl; charset=utf-8')
    .header('content-disposition', `attachment; filename="${filename.replace(/[^\w.-]/g, '_')}"`)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(out)
}

/**
 * CSV answers (docs/exports.md): RFC 4180 text (`text/csv; charset=utf-8`, CRLF line ends, a field holding a comma,
 * a quote or a line break quoted, quotes doubled, the header row first), after a UTF-8 byte-order mark unless the
 * request says `bom=false` (Excel on Windows reads UTF-8 only after one; a program asks without it: docs/exports.md,
 * "Encoding and byte-order mark"), written by csv-stringify from rows read in
 * keyset chunks, each chunk in a short transaction of its own. Memory stays flat whatever the number of rows: a
 * chunk is read only when the client has taken what came before (the stream's backpressure), so a slow client holds
 * at most one chunk and the socket's buffers, and no transaction.
 *
 * Formula injection (OWASP "CSV Injection"): a text cell beginning with `=`, `+`, `-`, `@`, a tab or a carriage
 * return (and their full-width forms, which some spreadsheets read alike) is prefixed with `'`, so a spreadsheet shows
 * it as text instead of running it. Numbers are not text and are never prefixed (csv-stringify's `escape_formulas`).
 *
 * Failures: the access checks and whatever else can refuse run before the stream is made (an ordinary problem answer).
 * A chunk that fails before the first byte is an ordinary error answer too (nothing was sent); after it, the status
 * line is gone: the stream is destroyed, the client sees a truncated transfer (no terminating chunk), and the failure
 * is logged.
 *
 * @example
 *   return await sendCsv(reply, 'attendees.csv', COLUMNS,
 *     async after => await withTenant(db, auth, trx => repo.chunk(trx, after)), row => row.id)
 */
import { Readable, pipeline } from 'node:stream'
import { Type } from '@sinclair/typebox'
import { stringify } from 'csv-stringify'
import type { FastifyReply } from 'fastify'
import { QueryFlag } from './schema.ts'

/** Rows read per chunk (and per transaction) by the exports. */
export const CSV_CHUNK_ROWS = 2000

/** What a cell may hold: text is neutralised, numbers written as they are, dates as ISO 8601 UTC, null as empty. */
export type CsvCell = string | number | boolean | Date | null | undefined

/** One column of a CSV answer: its header and how a row gives its cell. */
export interface CsvColumn<T> {
  header: string
  cell: (row: T) => CsvCell
}

/**
 * The rows of a keyset read as an object stream: `read(after)` gives the chunk after the key of the last row read
 * (undefined: the first chunk); an empty chunk ends the stream. A chunk is read only when the consumer wants data, and
 * never two at once. A failing read destroys the stream with its error.
 */
export function keysetRows<T, K, O = T> (
  read: (after: K | undefined) => Promise<T[]>,
  keyOf: (row: T) => K,
  map: (row: T) => O = row => row as unknown as O
): Readable {
  let after: K | undefined
  return new Readable({
    objectMode: true,
    // one row is enough to tell the consumer's pace; a chunk is pushed whole, then waits until it is taken
    highWaterMark: 1,
    read () {
      read(after).then(rows => {
        if (this.destroyed) return
        const last = rows[rows.length - 1]
        if (last === undefined) {
          this.push(null)
          return
        }
        after = keyOf(last)
        for (const row of rows) this.push(map(row))
      }, (err: unknown) => { this.destroy(err instanceof Error ? err : new Error(String(err))) })
    }
  })
}

/**
 * The query parameter of every CSV route: whether the text begins with a UTF-8 byte-order mark (default true).
 * Spread into the route's querystring schema: `Type.Object({ ...CsvQuery.properties, … })`.
 */
export const CsvQuery = Type.Object({
  bom: Type.Optional(QueryFlag(
    'Begin the text with a UTF-8 byte-order mark (EF BB BF), which Excel needs to read UTF-8; false for programs ' +
    'that do not drop one (csv-parse without `bom: true`, Python without `utf-8-sig`)', { default: true }))
})

/** What a CSV answer may be asked for beside its rows. */
export interface CsvOptions {
  /** a UTF-8 byte-order mark first (default true; `CsvQuery`) */
  bom?: boolean
}

/** The stringifier of every CSV answer: RFC 4180 with CRLF, header row, formulas neutralised, a BOM if asked. */
function csvWriter (headers: string[], bom: boolean) {
  return stringify({
    bom,
    header: true,
    columns: headers,
    record_delimiter: 'windows',
    // with a record delimiter given, csv-stringify would quote only fields holding CRLF: a lone LF or CR must be
    // quoted too
    quote_record_delimiter: true,
    escape_formulas: true,
    cast: {
      date: d => d.toISOString(),
      boolean: b => (b ? 'true' : 'false')
    }
  })
}

/**
 * Sends the rows of a keyset read (`read` and `keyOf` as `keysetRows` takes them) as a CSV attachment named
 * `filename`, one line per row in the order of `columns`. The access checks must have run. A failure after the first
 * byte cuts the answer short (see the header comment) and is logged here with the export's name; a client that goes
 * away stops the reads (the streams are destroyed together). `options.bom` (default true): a byte-order mark first.
 */
export async function sendCsv<T, K> (
  reply: FastifyReply,
  filename: string,
  columns: ReadonlyArray<CsvColumn<T>>,
  read: (after: K | undefined) => Promise<T[]>,
  keyOf: (row: T) => K,
  { bom = true }: CsvOptions = {}
): Promise<FastifyReply> {
  const cells = keysetRows(read, keyOf, (row: T): CsvCell[] => columns.map(c => c.cell(row)))
  const out = pipeline(cells, csvWriter(columns.map(c => c.header), bom), err => {
    if (err === null || err === undefined) return
    if ((err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') {
      reply.log.info({ export: filename }, 'CSV export: the client went away; reading stopped')
    } else {
      reply.log.error({ err, export: filename }, 'CSV export failed: the answer was cut short')
    }
  })
  return await reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${filename.replace(/[^\w.-]/g, '_')}"`)
    // personal data: not to be kept by caches on the way
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(out)
}

/**
 * The documented 200 of a CSV route: `produces: ['text/csv']` beside `response: { 200: csvBody(…) }` (the document
 * shows the body as text, with an example; the stream is sent as it is, never serialized).
 */
export const csvBody = (description: string, example: string) =>
  Type.Unsafe<string>({ type: 'string', description, examples: [example] })

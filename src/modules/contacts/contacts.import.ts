/**
 * The CSV import's reading of a file (docs/contacts.md, "CSV import"): the body's bytes checked before anything is
 * parsed (UTF-8, line lengths), the records parsed (RFC 4180, csv-parse), the header mapped to contact fields, and
 * each data row turned into the item of an upsert and validated by the upsert item's schema. Writing is
 * `importContacts` (contacts.service.ts).
 *
 * Lines are physical lines of the file (1 is the header; `\n`, `\r\n` and a lone `\r` end one), so a message names the
 * line an editor shows; a record with a quoted line break is named by the line it starts on.
 */
import { parse, CsvError } from 'csv-parse/sync'
import type { ValidateFunction } from 'ajv'
import {
  ApiError, error400BadRequest, fieldError, type ErrorDetail
} from '../../platform/http/errors.ts'
import { toErrorDetails, validatorCompiler } from '../../platform/http/validation.ts'
import {
  IMPORT_MAX_BYTES, IMPORT_MAX_LINE_BYTES, IMPORT_MAX_ROWS, UpsertContactItem, WRITABLE_FIELDS, type WritableField
} from './contacts.schemas.ts'
import { CR, forEachLine, LF, utf8OrBadLine, withoutBom } from '../../platform/http/text-lines.ts'

/** A data row of the file: the line it starts on and the upsert item it stands for. */
export interface ImportRow {
  line: number
  item: UpsertContactItem
}

/** A problem of one data row, with the line it is sorted by. */
export interface RowError {
  line: number
  error: ErrorDetail
}

/** The data rows of a file: those that are valid items, the problems of the others, and how many there are. */
export interface ParsedImport {
  rows: ImportRow[]
  rowErrors: RowError[]
  total: number
}

export interface ImportOptions {
  delimiter: ',' | ';' | '\t'
  /** `Header Name=field,…` (query `mapping`) */
  mapping?: string | undefined
  ignoreUnknown: boolean
}

const DELIMITER_NAMES: Record<ImportOptions['delimiter'], string> = {
  ',': 'a comma (,)', ';': 'a semicolon (;)', '\t': 'a tab'
}

const lineLocation = (line: number): string => `body.line[${line}]`

/** A 400 naming a line of the file. */
const lineError = (line: number, message: string, detail = 'the CSV cannot be read'): ApiError =>
  error400BadRequest(detail, [fieldError(lineLocation(line), message)])

/**
 * The text of a `text/csv` body, checked before it is parsed: a leading UTF-8 BOM dropped (Excel writes one), then a
 * 400 naming the line of the first line longer than 64 KiB, NUL character (PostgreSQL text cannot hold one) or byte
 * that is not UTF-8.
 */
export function decodeCsvBody (raw: Buffer): string {
  const bytes = withoutBom(raw)
  const nul = bytes.indexOf(0)
  forEachLine(bytes, (line, start, end) => {
    if (end - start > IMPORT_MAX_LINE_BYTES) {
      throw lineError(line, `line ${line} is longer than ${IMPORT_MAX_LINE_BYTES} bytes (64 KiB)`)
    }
    if (nul >= start && nul < end) throw lineError(line, `line ${line} holds a NUL character`)
  })
  const decoded = utf8OrBadLine(bytes)
  if ('badLine' in decoded) {
    throw lineError(decoded.badLine, `line ${decoded.badLine} is not UTF-8 text (the file must be encoded in UTF-8)`)
  }
  return decoded.text
}

/** The 1-based physical line of byte offsets asked for in increasing order (one pass over the file). */
class LineCounter {
  private offset = 0
  private line = 1
  constructor (private readonly bytes: Uint8Array) {}

  /** The line of the first byte at or after `offset` that is not a line break: where a record starts. */
  recordStart (offset: number): number {
    let at = offset
    while (at < this.bytes.length && (this.bytes[at] === LF || this.bytes[at] === CR)) at++
    return this.lineAt(at)
  }

  lineAt (offset: number): number {
    if (offset < this.offset) {
      this.offset = 0
      this.line = 1
    }
    const b = this.bytes
    for (let i = this.offset; i < offset; i++) {
      if (b[i] === LF || (b[i] === CR && b[i + 1] !== LF)) this.line++
    }
    this.offset = offset
    return this.line
  }
}

/** `Header Name=field,…` → field by lower-cased, trimmed header name; 400 at `query.mapping` when malformed. */
function parseMapping (mapping: string | undefined): Map<string, { header: string, field: WritableField }> {
  const out = new Map<string, { header: string, field: WritableField }>()
  if (mapping === undefined || mapping.trim() === '') return out
  const problems: ErrorDetail[] = []
  for (const pair of mapping.split(',')) {
    const at = pair.lastIndexOf('=')
    const header = pair.slice(0, Math.max(at, 0)).trim()
    const field = pair.slice(at + 1).trim().toLowerCase()
    if (at <= 0 || header === '') {
      problems.push(fieldError('query.mapping', `expected "Header Name=field", got "${pair}"`, mapping))
    } else if (!(WRITABLE_FIELDS as string[]).includes(field)) {
      problems.push(fieldError('query.mapping', `"${field}" is not a contact field (${header}=${field})`, mapping))
    } else if (out.has(header.toLowerCase())) {
      problems.push(fieldError('query.mapping', `the header "${header}" is mapped twice`, mapping))
    } else out.set(header.toLowerCase(), { header, field: field as WritableField })
  }
  if (problems.length > 0) throw error400BadRequest('validation failed', problems)
  return out
}

/** The contact field of each column (undefined: an ignored column); 400 naming every problem of the header. */
function mapHeader (header: string[], options: ImportOptions): Array<WritableField | undefined> {
  const mapping = parseMapping(options.mapping)
  const problems: ErrorDetail[] = []
  const columnOf = new Map<WritableField, string>()
  const used = new Set<string>()
  const fields = header.map((raw, i) => {
    const name = raw.trim()
    const key = name.toLowerCase()
    const field = mapping.get(key)?.field ??
      ((WRITABLE_FIELDS as string[]).includes(key) ? key as WritableField : undefined)
    if (mapping.has(key)) used.add(key)
    if (field === undefined) {
      if (!options.ignoreUnknown) {
        problems.push(fieldError(
          lineLocation(1),
          `column ${i + 1}, "${name}", names no contact field: map it (mapping=${name || 'Header'}=field) or pass ` +
            'ignore_unknown=true',
          name
        ))
      }
      return undefined
    }
    const other = columnOf.get(field)
    if (other !== undefined) {
      problems.push(fieldError(lineLocation(1), `columns "${other}" and "${name}" both map to ${field}`, name))
    } else columnOf.set(field, name)
    return field
  })
  for (const [key, { header: name }] of mapping) {
    if (!used.has(key)) problems.push(fieldError('query.mapping', `no column of the header is named "${name}"`))
  }
  if (!columnOf.has('email') && problems.length === 0) {
    problems.push(fieldError(lineLocation(1), 'expected a column for email: contacts are matched by e-mail'))
  }
  if (problems.length > 0) throw error400BadRequest('the CSV header cannot be mapped to contact fields', problems)
  return fields
}

/** A trimmed cell as the value of its field: tags split on `;`, is_favorite `true`/`false`; undefined when empty. */
function cellValue (field: WritableField, cell: string): unknown {
  const text = cell.trim()
  if (text === '') return undefined
  if (field === 'tags') {
    const tags = text.split(';').map(t => t.trim()).filter(t => t !== '')
    return tags.length === 0 ? undefined : tags
  }
  if (field === 'is_favorite') {
    const flag = text.toLowerCase()
    return flag === 'true' ? true : flag === 'false' ? false : text
  }
  return text
}

const validateItem = validatorCompiler({
  schema: UpsertContactItem,
  httpPart: 'body',
  method: 'POST',
  url: '/api/v1/contacts/import'
}) as ValidateFunction

/** What a parse error of csv-parse means, by its code, for the line where the record that failed starts. */
const CSV_PROBLEMS: Record<string, (line: number) => string> = {
  CSV_QUOTE_NOT_CLOSED: line => `line ${line}: a quoted field is not closed before the end of the file`,
  CSV_RECORD_INCONSISTENT_FIELDS_LENGTH: line => `line ${line}: expected as many fields as the header has`,
  CSV_MAX_RECORD_SIZE: line => `the record of line ${line} is longer than ${IMPORT_MAX_LINE_BYTES} bytes (64 KiB)`,
  INVALID_OPENING_QUOTE: line => `line ${line}: a quote inside a field must be in a quoted field and doubled ("")`,
  CSV_INVALID_CLOSING_QUOTE: line => `line ${line}: a closing quote must end its field (a quote inside is doubled: "")`
}

/** A parse error of csv-parse as a 400 naming the line where the record that failed starts. */
function csvProblem (err: CsvError, line: number): ApiError {
  const say = CSV_PROBLEMS[err.code]
  return lineError(line, say !== undefined ? say(line) : `line ${line}: ${err.message}`)
}

/** The first record of a file that does not parse (the wrong delimiter is the likelier story), if it parses. */
function firstRecord (bytes: Buffer, options: ImportOptions): string[] | undefined {
  try {
    return parse(bytes, { delimiter: options.delimiter, skip_empty_lines: true, to: 1 })[0]
  } catch {
    return undefined
  }
}

/** When the header is one column holding another delimiter: a 400 naming it. */
function otherDelimiter (header: string[] | undefined, options: ImportOptions): ApiError | undefined {
  if (header?.length !== 1) return undefined
  for (const [d, name] of Object.entries(DELIMITER_NAMES)) {
    if (d !== options.delimiter && (header[0] ?? '').includes(d)) {
      return lineError(
        1,
        `line 1 reads as a single column but holds ${name}: the file looks delimited by ${name}; ` +
          `pass delimiter=${d === '\t' ? 'tab' : encodeURIComponent(d)}`,
        `the CSV looks delimited by ${name}, not ${DELIMITER_NAMES[options.delimiter]}`
      )
    }
  }
  return undefined
}

/**
 * The data rows of a decoded CSV body as upsert items. A problem of the file (malformed CSV, its header, over 50 000
 * data rows) is thrown (400, 413); a problem of a row is kept in `rowErrors`, naming its line, the column and the
 * contact field (the import answers 422 with them): a value the upsert item's schema refuses. A row may repeat the
 * e-mail of an earlier row: it then applies to that row's contact (`importContacts`).
 */
export function parseContactsCsv (text: string, options: ImportOptions): ParsedImport {
  const bytes = Buffer.from(text, 'utf8')
  const lines = new LineCounter(bytes)
  // where each record starts: where the one before it ended (csv-parse's byte count when it is emitted)
  const starts: number[] = []
  let lastEnd = 0
  let records: string[][]
  try {
    records = parse(bytes, {
      delimiter: options.delimiter,
      skip_empty_lines: true,
      max_record_size: IMPORT_MAX_LINE_BYTES,
      // the header and one row past the limit: enough to refuse, no more parsed
      to: IMPORT_MAX_ROWS + 2,
      on_record: (fields, context) => {
        starts.push(lastEnd)
        lastEnd = context.bytes
        return fields
      }
    })
  } catch (err) {
    if (!(err instanceof CsvError)) throw err
    throw otherDelimiter(firstRecord(bytes, options), options) ??
      csvProblem(err, new LineCounter(bytes).recordStart(lastEnd))
  }
  const header = records[0]
  if (header === undefined) throw lineError(1, 'expected a header line naming the columns')
  const wrongDelimiter = otherDelimiter(header, options)
  if (wrongDelimiter !== undefined) throw wrongDelimiter
  if (records.length - 1 > IMPORT_MAX_ROWS) {
    throw new ApiError(413, `the CSV has more than ${IMPORT_MAX_ROWS} data rows; nothing was imported`, [
      fieldError('body', `expected at most ${IMPORT_MAX_ROWS} data rows (after the header line)`)
    ])
  }
  const fields = mapHeader(header, options)

  const rows: ImportRow[] = []
  const rowErrors: RowError[] = []
  for (const [r, cells] of records.entries()) {
    if (r === 0) continue
    const line = lines.recordStart(starts[r] ?? 0)
    const item: Record<string, unknown> = {}
    const columnOf: Record<string, string> = {}
    for (const [i, field] of fields.entries()) {
      if (field === undefined) continue
      const value = cellValue(field, cells[i] ?? '')
      columnOf[field] = (header[i] ?? '').trim()
      if (value !== undefined) item[field] = value
    }
    if (!validateItem(item)) {
      const details = toErrorDetails(validateItem.errors ?? [], 'body')
      // a cell is never null: of a nullable list (tags) only its items' problems explain anything
      const explained = details.filter(e => e.message !== 'expected null' ||
        !details.some(o => o.location?.startsWith(`${e.location ?? ''}[`) === true))
      for (const e of explained) {
        const path = (e.location ?? 'body').slice('body'.length)
        const field = /^\.([a-z_0-9]+)/.exec(path)?.[1] ?? ''
        const column = columnOf[field]
        rowErrors.push({
          line,
          error: {
            ...e,
            location: `${lineLocation(line)}${path}`,
            message: column !== undefined ? `column "${column}" (${field}): ${e.message ?? ''}` : e.message
          }
        })
      }
      continue
    }
    rows.push({ line, item: item as UpsertContactItem })
  }
  return { rows, rowErrors, total: records.length - 1 }
}

/** The 413 of a body over 16 MiB (Fastify's own error names no limit). */
export const tooLarge = (): ApiError =>
  new ApiError(413, 'the CSV is larger than 16 MiB; split it into several imports', [
    fieldError('body', `expected at most ${IMPORT_MAX_BYTES} bytes (16 MiB)`)
  ])

/** 415 unless the charset of a `text/csv` content type is absent or UTF-8. */
export function checkCharset (contentType: string | undefined): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '')?.[1]?.toLowerCase()
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(415, 'the CSV must be UTF-8', [
      fieldError('header.content-type', `expected text/csv with charset utf-8 or none, got charset ${charset}`)
    ])
  }
}

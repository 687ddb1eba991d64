/**
 * Keyset paging beside page/size (docs/pagination.md). Every list answers `next_cursor`: an opaque
 * string naming the last row of the page by its sort key; sent back as `cursor`, the next page is
 * read with `where <sort key> > <that key>` through the list's index, so page 500 costs what page 1
 * costs, where `page=500` makes the database read and skip 9 980 rows first.
 *
 * A cursor holds the sort key of the row it follows, the number of the page it opens, and a digest
 * of the list it belongs to (the route, the sort and the filters): sent to another list, or with
 * other filters, it is refused (400, field `cursor`). It grants nothing: the query that reads the
 * next page is the list's own, with the caller's visibility; a forged key only moves the position.
 *
 * @example
 *   const window = pageWindow(q, listScope('contacts', { sort: q.sort_by, dir: q.sort_dir, search: q.search }), keys)
 *   const rows = await base.$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, keys, window.after ??
 * [])))
 *     .orderBy(...).limit(window.limit).offset(window.offset).execute()
 *   return pageOf(rows, window, r => [r.created_at, r.id])
 */
import crypto from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import { exactTimestamp } from '../db/database.ts'
import { invalidField } from './errors.ts'

/** The query parameter, added to every list's query schema. */
export const CursorParam = Type.Optional(
  Type.String({
    minLength: 1,
    // a key may hold a title or a name of a few hundred characters, four bytes each in UTF-8, in base64
    maxLength: 4096,
    description:
      'Keyset cursor: the `next_cursor` of the previous page. Reads the page after it through the index ' +
      '(`page` is then ignored); ' +
      'valid only with the same filters and sort'
  })
)

/** The body field of every paged answer. */
export const NextCursorField = Type.Union([Type.String(), Type.Null()], {
  description: 'Cursor of the next page (send it as `cursor`), or null on the last page'
})

/** A sort key value as a cursor carries it: timestamps as ISO strings. */
export type KeyValue = string | number | boolean | null

interface CursorBody { k: KeyValue[], p: number, s: string }

/** Names one list with its sort and filters: a cursor is valid only where its scope matches. */
export function listScope (list: string, filters: Record<string, unknown>): string {
  const canonical = JSON.stringify(Object.keys(filters).sort().map(k => [k, filters[k] ?? null]))
  return crypto.createHash('sha256').update(list).update('\0').update(canonical).digest('base64url').slice(0, 16)
}

const toKeyValue = (v: unknown): KeyValue => {
  if (v instanceof Date) return exactTimestamp(v)
  if (typeof v === 'bigint') return v.toString()
  if (v === undefined) return null
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) return v
  return String(v)
}

export function encodeCursor (key: unknown[], page: number, scope: string): string {
  const body: CursorBody = { k: key.map(toKeyValue), p: page, s: scope }
  return Buffer.from(JSON.stringify(body)).toString('base64url')
}

const refused = (message: string) => invalidField('query.cursor', message)

/** PostgreSQL's text of a timestamptz (what exactTimestamp gives), or an ISO string. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}(:?\d{2})?)$/

/** Whether a cursor's value fits its column: a forged cursor must not reach the database as a wrong type (a 500). */
function fits (v: KeyValue, column: KeyColumn): boolean {
  if (v === null) return column.nullable === true
  switch (column.type) {
    case 'time':
      return typeof v === 'string' && TIMESTAMP.test(v)
    case 'int':
      return typeof v === 'number' && Number.isSafeInteger(v)
    case 'number':
      return typeof v === 'number' && Number.isFinite(v)
    case 'text':
      return typeof v === 'string' && v.length <= 2000
    case 'uuid':
      return typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)
    case 'bool':
      return typeof v === 'boolean'
  }
}

/** The key and page a cursor names; 400 (field `cursor`) when it is not one of this list's. */
export function decodeCursor (cursor: string, scope: string, keys: KeyColumn[]): { key: KeyValue[], page: number } {
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw refused('not a cursor of this service')
  }
  if (typeof body !== 'object' || body === null) throw refused('not a cursor of this service')
  const { k, p, s } = body as Partial<CursorBody>
  if (!Array.isArray(k) || typeof p !== 'number' || !Number.isSafeInteger(p) || p < 2 || typeof s !== 'string') {
    throw refused('not a cursor of this service')
  }
  if (s !== scope) throw refused('the cursor belongs to another list, or to other filters or another sort order')
  if (k.length !== keys.length || !keys.every((column, i) => fits(k[i] as KeyValue, column))) {
    throw refused('not a cursor of this service')
  }
  return { key: k, page: p }
}

/** The paging parameters of a list's query: the page (from 1), its size, and the cursor of a previous page. */
export interface PageParams {
  page: number
  size: number
  cursor?: string | undefined
}

/**
 * What a list reads: with a cursor, the rows after its key from the start; else the page's offset. One row more than
 * the page, to know whether another follows.
 */
export interface PageWindow {
  page: number
  size: number
  offset: number
  limit: number
  after: KeyValue[] | undefined
  scope: string
}

export function pageWindow (
  q: { page?: number | undefined; size: number; cursor?: string | undefined },
  scope: string,
  keys: KeyColumn[]
): PageWindow {
  if (q.cursor !== undefined) {
    const { key, page } = decodeCursor(q.cursor, scope, keys)
    return { page, size: q.size, offset: 0, limit: q.size + 1, after: key, scope }
  }
  const page = q.page ?? 1
  return { page, size: q.size, offset: (page - 1) * q.size, limit: q.size + 1, after: undefined, scope }
}

/** The page's rows (the extra one dropped), its number, and the cursor of the next page when there is one. */
export function pageOf<T> (
  rows: T[],
  window: PageWindow,
  keyOf: (row: T) => unknown[]
): { items: T[]; page: number; next_cursor: string | null } {
  const items = rows.length > window.size ? rows.slice(0, window.size) : rows
  const last = items[items.length - 1]
  const more = rows.length > window.size && last !== undefined
  return {
    items,
    page: window.page,
    next_cursor: more ? encodeCursor(keyOf(last), window.page + 1, window.scope) : null
  }
}

/** One column of a list's order: its SQL reference, direction, type, and whether it can be null (sorted last). */
export interface KeyColumn {
  ref: string
  dir: 'asc' | 'desc'
  type: 'time' | 'int' | 'number' | 'text' | 'uuid' | 'bool'
  nullable?: boolean
  /**
   * the order is by lower(ref) (names sort without case); the key then holds PostgreSQL's lower() of the row's value
   */
  lower?: boolean
}

/**
 * The order of rows by creation: `created_at`, then the integer `id` that tells apart rows of one instant; the
 * columns of `table` (an alias) when the list joins others.
 */
export function creationOrder (dir: 'asc' | 'desc', table?: string): KeyColumn[] {
  const column = (name: string) => (table === undefined ? name : `${table}.${name}`)
  return [
    { ref: column('created_at'), dir, type: 'time' },
    { ref: column('id'), dir, type: 'int' }
  ]
}

/** The SQL a key column orders by. */
export const keyExpression = (c: KeyColumn) => c.lower === true ? sql`lower(${sql.ref(c.ref)})` : sql.ref(c.ref)

/**
 * Rows strictly after `values` in the order of `columns` (the last column unique, e.g. the id).
 * Columns of one direction that cannot be null compare as one row value, `(a, b) > ($1, $2)`,
 * which PostgreSQL reads as an index range; otherwise the expanded form
 * `a > $1 or (a = $1 and b > $2)`, with nulls after every value.
 */
export function afterKey<DB, TB extends keyof DB> (
  eb: ExpressionBuilder<DB, TB>,
  columns: KeyColumn[],
  values: KeyValue[]
): Expression<SqlBool> {
  const first = columns[0]
  if (first === undefined) throw new Error('afterKey needs at least one column')
  const plain = columns.every(c => c.nullable !== true && c.dir === first.dir) && values.every(v => v !== null)
  if (plain) {
    const op = first.dir === 'asc' ? sql.raw('>') : sql.raw('<')
    return sql<SqlBool>`(${sql.join(columns.map(keyExpression))}) ${op} (${sql.join(values.map(v => sql`${v}`))})`
  }
  const branches: Array<Expression<SqlBool>> = []
  columns.forEach((c, i) => {
    const equal = columns.slice(0, i).map((p, j) => {
      const v = values[j] ?? null
      return v === null ? sql<SqlBool>`${keyExpression(p)} is null` : sql<SqlBool>`${keyExpression(p)} = ${v}`
    })
    const v = values[i] ?? null
    const ref = keyExpression(c)
    // nulls sort last: after a null only nulls follow (handled by the equality chain); after a value, greater values
    // and nulls
    if (v === null) return
    const beyond = c.dir === 'asc' ? sql<SqlBool>`${ref} > ${v}` : sql<SqlBool>`${ref} < ${v}`
    const step = c.nullable === true ? sql<SqlBool>`(${beyond} or ${ref} is null)` : beyond
    branches.push(equal.length === 0 ? step : eb.and([...equal, step]))
  })
  return branches.length === 0 ? sql<SqlBool>`false` : eb.or(branches)
}

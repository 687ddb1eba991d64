/**
 * Shared schema building blocks. One TypeBox declaration per wire schema validates the request,
 * serializes (and strips undeclared fields from) the response, types the handler and documents
 * OpenAPI; `$id` is the schema name of the spec and of `GET /schemas/<name>.json`.
 */
import { CursorParam, NextCursorField } from './cursor.ts'
import { Type, type Static, type TObject, type TProperties, type TSchema, type ObjectOptions } from '@sinclair/typebox'

const SchemaField = Type.Optional(
  Type.String({ format: 'uri', description: 'A URL to the JSON Schema for this object.', readOnly: true })
)

/**
 * A named object schema whose instances carry `$schema`. Unknown properties are refused
 * (no mass assignment), except `$schema`, which a client may send back and is ignored.
 *
 * @example
 *   export const Contact = model('Contact', { id: Type.String() })
 */
export function model<P extends TProperties> (
  name: string,
  properties: P,
  options: ObjectOptions = {}
): TObject<P & { $schema: typeof SchemaField }> {
  return Type.Object({ $schema: SchemaField, ...properties }, { additionalProperties: false, ...options, $id: name })
}

/** A request body schema: like `model` but anonymous unless named. */
export function body<P extends TProperties> (
  properties: P,
  options: ObjectOptions = {}
): TObject<P & { $schema: typeof SchemaField }> {
  return Type.Object({ $schema: SchemaField, ...properties }, { additionalProperties: false, ...options })
}

/** `T` or JSON null: optional fields of the upstream serialize as null when unset. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** A response timestamp: rows carry Date objects, serialized as ISO 8601 UTC strings. */
export const Timestamp = (description?: string) =>
  Type.Unsafe<Date | string>({ type: 'string', format: 'date-time', ...(description ? { description } : {}) })

/** A request timestamp: an RFC 3339 string. */
export const DateTimeInput = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}) })

export const PageQuery = Type.Object({
  // bounded so that the row offset, (page - 1) × size, stays a valid bigint (else a database error)
  page: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 1,
    description: 'Page number, 1-based (at most 1 000 000)'
  }),
  size: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page (1 to 100)' })
})
export type PageQuery = Static<typeof PageQuery>

/**
 * The `limit` and `cursor` of a list paged by cursor alone (no page numbers, no total): `limit` 1 to `max`, 20 by
 * default, what one item of the list is (`what`), and what more a client should know of a page (`note`).
 */
export const limitAndCursor = (max: number, what: string, note = '') => ({
  limit: Type.Integer({
    minimum: 1,
    maximum: max,
    default: 20,
    description: `${what} per page (1 to ${max})${note === '' ? '' : `; ${note}`}`
  }),
  cursor: CursorParam
})

/** page/size and the keyset cursor (docs/pagination.md): the query of every paged list. */
export const KeysetPageQuery = Type.Object({ ...PageQuery.properties, cursor: CursorParam })
export type KeysetPageQuery = Static<typeof KeysetPageQuery>

/** `{items, page, size, total}` with the Huma-style name (`PagedBodyContact`). */
export function pagedBody<T extends TSchema> (item: T, name: string) {
  return model(name, {
    items: Type.Array(item, { description: 'Items of the current page' }),
    page: Type.Integer({ description: 'Current page, 1-based' }),
    size: Type.Integer({ description: 'Page size' }),
    total: Type.Integer({ description: 'Total matching records' }),
    next_cursor: NextCursorField
  })
}

/** Path id of integer resources (events, spaces, series…). */
export const IntId = Type.Integer({ minimum: 1, maximum: 9_007_199_254_740_991 })
export const IdParams = Type.Object({ id: IntId })
export const UuidString = Type.String({ format: 'uuid' })

/** A schema enum from an `as const` list, keeping the literal union type. */
export function StringEnum<const T extends readonly string[]> (
  values: T,
  options: { description?: string; default?: T[number] } = {}
) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}

/**
 * A boolean query parameter (docs/api-conventions.md, "Query parameters"): `type: boolean` in the document, and on
 * the wire `true`, `false`, `1` or `0`; an empty value counts as not given. The query validator turns `1` and `0`
 * into booleans and drops an empty value before the schema runs (`normaliseQueryFlags`, validation.ts); Ajv's
 * coercion does `true` and `false`. The handler reads a boolean, or undefined when the flag has no default.
 */
export const QueryFlag = (description: string, options: { default?: boolean } = {}) =>
  Type.Boolean({ description: `${description} (\`true\` or \`false\`; \`1\` and \`0\` too)`, ...options })

/**
 * The search and sort parameters of a list query: `search` (at most 200 characters, matched against
 * what `searched` names), `sort_by` one of `fields` (default created_at, which every such list has)
 * and `sort_dir` (default desc).
 */
export function searchAndSort<const T extends readonly string[]> (searched: string, fields: T) {
  return {
    search: Type.Optional(Type.String({ maxLength: 200, description: `Matched against ${searched}` })),
    sort_by: Type.Optional(StringEnum(fields, { description: 'Sort field', default: 'created_at' as T[number] })),
    sort_dir: Type.Optional(StringEnum(['asc', 'desc'] as const, { description: 'Sort direction', default: 'desc' }))
  }
}

/**
 * What a list query of `KeysetPageQuery` and `searchAndSort` asks for, as the options of a list: the page, the search
 * trimmed, and the sort with its defaults (created_at, desc).
 */
export function searchedPageOf<F extends string> (q: {
  page: number
  size: number
  cursor?: string | undefined
  search?: string | undefined
  sort_by?: F | undefined
  sort_dir?: 'asc' | 'desc' | undefined
}) {
  return {
    page: q.page,
    size: q.size,
    cursor: q.cursor,
    search: q.search?.trim(),
    sortBy: q.sort_by ?? ('created_at' as const),
    sortDir: q.sort_dir ?? 'desc'
  }
}

/** Response with no body. */
export const NoContent = Type.Null({ description: 'No Content' })

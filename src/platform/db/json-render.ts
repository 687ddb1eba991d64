/**
 * Rows rendered as JSON by PostgreSQL, for long lists of wide rows where reading every column into
 * JavaScript values and serializing them again costs more than the query itself: a calendar month
 * is 400 events of 36 columns, whose parsing (2 400 timestamps, jsonb, arrays) and writing took
 * 10–14 ms of the service's CPU (docs/performance.md, "Calendar"). Used with row-json-cache.ts.
 *
 * The text is what the route's compiled serializer writes for the same row: the fields of the
 * response schema in its order, timestamps as `Date#toISOString` writes them (UTC, milliseconds,
 * `Z`). Numbers and jsonb may differ in spelling only (`1e-05`, `1.50`), never in value.
 *
 * @example
 *   const fields = jsonFields(Event, 'events', ['spaces'])   // every other field: its column
 *   sql`select events.id, to_json(r)::text as json from events cross join lateral (select ${sql.join(fields)}) r where
 * …`
 */
import type { TObject, TSchema } from '@sinclair/typebox'
import { sql, type AliasedRawBuilder, type Expression } from 'kysely'

/** A timestamptz as the API writes timestamps: `2026-09-01T10:00:00.000Z`. */
export const isoTimestamp = (value: Expression<unknown>) =>
  sql<string>`to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

const isTimestamp = (s: TSchema): boolean =>
  s.format === 'date-time' || (Array.isArray(s.anyOf) && (s.anyOf as TSchema[]).some(isTimestamp))

/**
 * One select expression per field of `schema` except `$schema` and `omit`, in the schema's order:
 * the column of that name of `table`, timestamps formatted. A field with no such column fails the
 * query, so a schema change cannot go unnoticed.
 */
export function jsonFields (
  schema: TObject,
  table: string,
  omit: readonly string[] = []
): Array<AliasedRawBuilder<unknown, string>> {
  return Object.entries(schema.properties)
    .filter(([name]) => name !== '$schema' && !omit.includes(name))
    .map(([name, field]) => {
      const column = sql.ref(`${table}.${name}`)
      return (isTimestamp(field) ? isoTimestamp(column) : sql`${column}`).as(name)
    })
}

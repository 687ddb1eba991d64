/**
 * Multi-row `INSERT … VALUES` within PostgreSQL's bind parameters: one statement carries at most
 * 65 535 (the protocol counts them in 16 bits), so a long list of rows is written as several
 * statements, each of as many whole rows as fit. Bulk inserts are VALUES lists rather than
 * `INSERT … SELECT … FROM unnest(arrays)` because the service runs on Citus, where INSERT…SELECT
 * from a function becomes a COPY into the shards, which row-level security refuses.
 */

/** The most bind parameters one statement may carry. */
export const MAX_BIND_PARAMETERS = 65_535

/**
 * `rows` in consecutive slices, in order, none with more than MAX_BIND_PARAMETERS parameters when
 * each row takes `paramsPerRow` (its number of values; an SQL expression such as `now()` takes
 * none, so counting every column is an upper bound). No slice for no rows.
 *
 * @example
 *   for (const chunk of rowChunks(rows, 7)) await trx.insertInto('outbox').values(chunk).execute()
 */
export function rowChunks<T> (rows: readonly T[], paramsPerRow: number): T[][] {
  const size = Math.max(1, Math.floor(MAX_BIND_PARAMETERS / Math.max(1, paramsPerRow)))
  const chunks: T[][] = []
  for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size))
  return chunks
}

import { sql, type RawBuilder } from 'kysely'

/**
 * What every change of a resource with a `revision` column sets besides its values: the next revision (its ETag,
 * checked by If-Match) and the time of the change. Spread into an update: `.set({ ...values, ...bumpRevision() })`.
 */
export function bumpRevision (): { revision: RawBuilder<number>, updated_at: RawBuilder<Date> } {
  return { revision: sql<number>`revision + 1`, updated_at: sql<Date>`now()` }
}

/**
 * The same in the SET list of a raw UPDATE whose table is named `alias` (`update events e set …`):
 * `revision = <alias>.revision + 1, updated_at = now()`.
 */
export function bumpRevisionSql (alias: 'e'): RawBuilder<unknown> {
  return sql`revision = ${sql.raw(alias)}.revision + 1, updated_at = now()`
}

import { sql, type RawBuilder } from 'kysely'

/**
 * What every change of a resource with a `revision` column sets besides its values: the next revision (its ETag,
 * checked by If-Match) and the time of the change. Spread into an update: `.set({ ...values, ...bumpRevision() })`.
 */
export function bumpRevision (): { revision: RawBuilder<number>, updated_at: RawBuilder<Date> } {
  return { revision: sql<number>`revision + 1`, updated_at: sql<Date>`now()` }
}

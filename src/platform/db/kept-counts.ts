/**
 * Totals kept by triggers instead of counted row by row (docs/performance.md, "Lists at scale"):
 * the event list's counts (migration 0019, events.list.repository.ts) and `row_counts` (migrations 0020, 0021)
 * for the contacts list, a rule's execution history and the stored items of a space's activity feed. On a
 * Citus cluster those triggers are not created, and the lists count row by row.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { Database } from './database.ts'
import { withSystem, type Tx } from './tenant.ts'

/** How a list's total is counted: from kept counts, or row by row. */
export type Counting = 'kept' | 'rows'

const asked = new WeakMap<Kysely<Database>, Map<string, Promise<Counting>>>()

/**
 * Whether `db` keeps the counts that `trigger` maintains: asked once per database (the app may
 * start before its database answers; a failed question is asked again). Call it outside a
 * transaction: PGlite has one connection, which a transaction holds.
 */
export async function countingOf (db: Kysely<Database>, trigger: string): Promise<Counting> {
  let byTrigger = asked.get(db)
  if (byTrigger === undefined) asked.set(db, byTrigger = new Map())
  let answer = byTrigger.get(trigger)
  if (answer === undefined) {
    answer = sql<{ kept: boolean }>`select exists (select from pg_trigger where tgname = ${trigger}) as kept`
      .execute(db)
      .then(r => (r.rows[0]?.kept === true ? ('kept' as const) : ('rows' as const)))
    byTrigger.set(trigger, answer)
    answer.catch(() => { byTrigger.delete(trigger) })
  }
  return await answer
}

/** The sum of the kept rows of one list that match `where`, as an expression (a part of a total, `totalOf`). */
export function keptSum (tenantId: string, list: string, where: RawBuilder<boolean>): RawBuilder<number> {
  return sql<number>`(select coalesce(sum(n), 0) from row_counts
    where tenant_id = ${tenantId} and list = ${list} and ${where})`
}

/** The sum of the kept rows of one list that match `where` (row_counts, migration 0020), as a statement (`total`). */
export const keptTotalQuery = (trx: Tx, tenantId: string, list: string, where: RawBuilder<boolean>) =>
  trx.selectNoFrom(keptSum(tenantId, list, where).as('total'))

/**
 * Folds delta rows of kept counts tenant by tenant: `tenants` names the tenants whose rows outnumber their keys,
 * `fold` folds one tenant's (a function of the migration). The tenants it folded; it stops between two tenants
 * when `signal` aborts.
 */
export async function foldByTenant (db: Kysely<Database>, tenants: RawBuilder<{ tenant_id: string }>,
  fold: (tenant: string) => RawBuilder<unknown>, signal?: AbortSignal): Promise<number> {
  const { rows } = await withSystem(db, async trx => await tenants.execute(trx))
  let done = 0
  for (const { tenant_id: tenant } of rows) {
    if (signal?.aborted === true) break
    await withSystem(db, async trx => { await fold(tenant).execute(trx) })
    done++
  }
  return done
}

/**
 * Folds the delta rows of a table of kept counts into one row per key (`keys`, its columns), tenant by tenant:
 * those whose rows outnumber their keys, each by the table's function of its migration, `compact_<table>(tenant)`.
 * Nothing to fold on Citus (no triggers, no rows).
 */
export async function compactKeptCounts (
  db: Kysely<Database>,
  table: 'row_counts' | 'event_list_counts',
  keys: string[],
  signal?: AbortSignal
): Promise<number> {
  return await foldByTenant(
    db,
    sql<{ tenant_id: string }>`select tenant_id from ${sql.table(table)}
    group by tenant_id having count(*) > count(distinct (${sql.join(keys.map(key => sql.ref(key)))}))`,
    tenant => sql`select ${sql.raw(`compact_${table}`)}(${tenant})`,
    signal
  )
}

/** Folds the delta rows of `row_counts` into one row per key (the retention loop). */
export async function compactRowCounts (db: Kysely<Database>, signal?: AbortSignal): Promise<number> {
  return await compactKeptCounts(db, 'row_counts', ['list', 'k1', 'k2', 'k3'], signal)
}

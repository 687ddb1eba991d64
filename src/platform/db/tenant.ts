/**
 * Tenant scope. Every request's database work runs in one transaction that first sets
 * `app.tenant_id` and `app.user_id` and switches to the `collab_app` role in a single statement
 * (transaction-local, so a pooled connection never carries one tenant into the next request).
 * Row-level security policies read `app.tenant_id`: a query that forgets its `tenant_id = $1`
 * filter still sees nothing of other tenants. Queries name their tenant all the same; RLS is the
 * backstop, not the filter.
 */
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely'
import pg from 'pg'
import { ConfigError } from '../../config.ts'
import type { Database, DatabaseHandle } from './database.ts'
import { registeredSystemDatabase } from './system-database.ts'
import { auditTransaction } from '../audit.ts'

/** The role that RLS applies to: NOSUPERUSER, NOBYPASSRLS, owns no table (migration 0001). */
export const APP_ROLE = 'collab_app'

export type Tx = Transaction<Database>

export interface TenantScope {
  readonly tenantId: string
  readonly userId?: string | undefined
  /**
   * the transaction's writes are the service's bookkeeping (the user gate's claims, Idempotency-Key answers), not a
   * change anyone made: a request that writes only these gets no audit entry (src/platform/audit.ts)
   */
  readonly bookkeeping?: boolean
}

const RETRYABLE = new Set(['40001', '40P01'])

/** Transactions `withTenant` ran again after a serialization failure or a deadlock (read by the metrics). */
export const transactionRetries = { count: 0 }

/**
 * The scope statements, the first of every tenant transaction: `SET LOCAL`s of the tenant, the
 * user and the role. `SET LOCAL` rather than `set_config(…, true)`: on a Citus cluster only
 * `SET LOCAL` reaches the workers' shards, and only once `citus.propagate_set_commands` is `local`
 * (set first, in the transaction; a placeholder with no effect where Citus is not loaded).
 * `SET` takes no parameters, so the values are quoted literals (`pg.escapeLiteral`). On PostgreSQL
 * they are sent together with BEGIN and the first query, in one round trip (pipeline.ts).
 */
export function scopeStatements (scope: TenantScope): string[] {
  return [
    'set local citus.propagate_set_commands = local',
    `set local app.tenant_id = ${pg.escapeLiteral(scope.tenantId)}`,
    `set local app.user_id = ${pg.escapeLiteral(scope.userId ?? '')}`,
    `set local role ${APP_ROLE}`
  ]
}

/**
 * Runs `fn` in one transaction scoped to the tenant. Serialization failures and deadlocks are
 * retried after a short random pause (up to three attempts), so `fn` must not have effects outside the transaction.
 *
 * @example
 *   const contact = await withTenant(db, request.auth, trx => findContact(trx, request.auth.tenantId, id))
 */
export async function withTenant<T> (
  db: Kysely<Database>, scope: TenantScope, fn: (trx: Tx) => Promise<T>
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(async trx => {
        for (const statement of scopeStatements(scope)) await trx.executeQuery(CompiledQuery.raw(statement, []))
        return await auditTransaction(scope.tenantId, trx, fn, scope.bookkeeping === true)
      })
    } catch (err) {
      const code = (err as { code?: string }).code
      if (attempt < 3 && code !== undefined && RETRYABLE.has(code)) {
        transactionRetries.count++
        // a random pause (5 – 50 ms, then 10 – 100 ms), so that the transactions that collided do not meet again in
        // step
        await new Promise(resolve => setTimeout(resolve, attempt * (5 + Math.random() * 45)))
        continue
      }
      throw err
    }
  }
}

/**
 * The database of work that spans tenants for a request database: the login of
 * DATABASE_WORKER_URL (or DATABASE_URL), which passes row-level security. The request login
 * (DATABASE_APP_URL) cannot: every table forces RLS, so there it would see no row at all.
 */
export function systemDatabase (db: Kysely<Database>): Kysely<Database> {
  return registeredSystemDatabase(db) ?? db
}

/**
 * A transaction without tenant scope, on the system login (`systemDatabase(db)`), whichever
 * login `db` itself uses: for work that spans tenants by design (the workers' polling of the
 * outboxes and schedules, resolving a public handle to its tenant). Keep these few and named;
 * work on one tenant's rows goes through `withTenant`.
 */
export async function withSystem<T> (db: Kysely<Database>, fn: (trx: Tx) => Promise<T>): Promise<T> {
  return await systemDatabase(db).transaction().execute(fn)
}

/**
 * Refuses to start when the system login cannot see across tenants: every table forces
 * row-level security, so only a superuser or a BYPASSRLS role passes it (the tables' owner does
 * not). The workers would otherwise find nothing to do, silently, forever.
 */
export async function checkSystemLogin (handle: DatabaseHandle): Promise<void> {
  if (handle.kind !== 'pg' || handle.systemLoginVariable === undefined) return
  const { rows } = await sql<{ login: string; crosses: boolean }>`
    select current_user as login, (rolsuper or rolbypassrls) as crosses from pg_roles
      where rolname = current_user`.execute(
      handle.systemDb
    )
  const row = rows[0]
  if (row?.crosses === true) return
  const login = row?.login ?? 'unknown'
  const hint = handle.systemLoginVariable === 'DATABASE_URL' ? '; set DATABASE_WORKER_URL to a login that has it' : ''
  throw new ConfigError(
    handle.systemLoginVariable,
    `logs in as "${login}", which row-level security confines to one tenant: background work and public pages need a ` +
    `login with BYPASSRLS (or a superuser)${hint} (docs/deployment.md)`
  )
}

/**
 * Plans the transaction's next statements for their parameter values. Statements are prepared
 * (pipeline.ts), and PostgreSQL may settle on a generic plan, which cannot see how selective a text
 * pattern is: for the contact search it ANDed the trigram index with every contact of the tenant
 * (400 000 rows, 12 ms) instead of reading the 125 rows the trigrams match. For statements whose
 * plan depends on how selective their values are (text patterns, date ranges); key lookups keep
 * their cached plans, and so does a statement whose generic plan is right for every value (the
 * calendar's, events.list.repository.ts), since planning for the values costs 1 – 2 ms each time.
 */
export async function planForValues (trx: Tx): Promise<void> {
  await sql`set local plan_cache_mode = force_custom_plan`.execute(trx)
}

/**
 * The plans of a list's statements: planned for their values (as `planForValues`), or the prepared
 * statements' generic plans (`force_generic_plan`: no planning per request, for statements whose best
 * plan does not depend on the values; literal predicates where a partial index needs them), and no
 * parallel workers (a list's reads are short index reads: workers cost more to start than they save).
 * `SET LOCAL`s without parameters: on PostgreSQL they leave with the list's first statement, in the same
 * round trip (deferred-scope.ts).
 */
export async function planList (trx: Tx, forValues: boolean): Promise<void> {
  await sql.raw('set local max_parallel_workers_per_gather = 0').execute(trx)
  await sql.raw(`set local plan_cache_mode = ${forValues ? 'force_custom_plan' : 'force_generic_plan'}`).execute(trx)
}

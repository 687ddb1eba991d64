/**
 * Who may see and change an event; other modules build on these (attendees, managers,
 * milestones, series, automation…).
 *
 * Visibility (docs/events.md): tenant admins see every event of the tenant; the creator and the
 * event's active managers (of the event, or of its series) always see it; beyond them
 * 10 private: nobody else, 20 members-only: active members of a space the event belongs to,
 * 30 organization: callers of the event's organization, 40 public: everyone in the tenant.
 * A draft clone is judged by its published row alone (visibility, spaces, managers, organization,
 * creator), never by its own visibility column.
 *
 * Writes: tenant admins, the creator, or an active manager whose permissions (or role bundle)
 * include the permission asked for.
 */
import { expressionBuilder, sql, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { selectRows } from '../../platform/db/match.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import { error403Forbidden, error404NotFound, error409Conflict } from '../../platform/http/errors.ts'
import { grantedPermissions, type EventPermission } from './events.permissions.ts'
import { EVENT_COLUMNS, type EventRow } from './events.table.ts'

type Eb = ExpressionBuilder<Database, 'events'>

export const isTenantAdmin = (auth: AuthContext): boolean => auth.permissions.has('tenant:admin')

/** The id that managers, spaces and activity rows of an event refer to: the published row of a draft clone. */
export const rootEventId = (row: Pick<EventRow, 'id' | 'published_id'>): number => row.published_id ?? row.id

/**
 * The root id of the event row under `alias` in SQL (`rootEventId`): its published row's for a draft clone. Written
 * as CASE, not COALESCE: under row-level security PostgreSQL lets only leakproof conditions reach an index ahead of
 * the policy's, and it counts COALESCE as leaky. `event_spaces.event_id = coalesce(…)` in a subquery of GET one
 * event was therefore a filter over every link of the tenant's spaces, not a lookup (docs/performance.md).
 */
export const rootIdOf = (alias: 'events'): RawBuilder<number> =>
  sql<number>`case when ${sql.ref(`${alias}.published_id`)} is null then ${sql.ref(`${alias}.id`)}
    else ${sql.ref(`${alias}.published_id`)} end`

/** The alias an audience is judged on: the row itself (`events`), or the published row of a draft clone (`pub`). */
type AudienceTable = 'events' | 'pub'

/**
 * Whom the event row `t` is shown to, ignoring deletion and draft clones. The space and manager
 * branches are uncorrelated `in (…)` subqueries: PostgreSQL computes each once per query (a hashed
 * subplan), so a list over many events costs one pass, not one lookup per row. With `t = 'events'`
 * the SQL is the lists' (unchanged); `'pub'` judges the published row joined under that alias.
 */
function audience (eb: Eb, auth: AuthContext, t: AudienceTable = 'events'): Expression<SqlBool> {
  if (isTenantAdmin(auth)) return eb.val(true)
  const col = <V>(c: 'creator_id' | 'visibility' | 'series_id' | 'org_id') => sql.ref<V>(`${t}.${c}`)
  // the published row of a clone (`pub`) is never a clone itself: its own id is the root
  const root = t === 'events' ? rootIdOf('events') : sql.ref<number>('pub.id')
  const branches: Array<Expression<SqlBool>> = [
    eb(col<string>('creator_id'), '=', auth.userId),
    eb(col<number>('visibility'), '=', 40),
    eb.and([
      eb(col<number>('visibility'), '=', 20),
      // the caller's spaces first (a handful, as an array), then their events through the
      // (tenant_id, space_id) index: a join let the planner hash every event_spaces row of the tenant
      eb(root, 'in', eb.selectFrom('event_spaces as es')
        .select('es.event_id')
        .where('es.tenant_id', '=', auth.tenantId)
        .where('es.space_id', '=', eb.fn.any(sql<number[]>`array(${eb.selectFrom('space_members as sm')
          .select('sm.space_id')
          .where('sm.tenant_id', '=', auth.tenantId)
          .where('sm.user_id', '=', auth.userId)
          .where('sm.is_active', '=', true)})`)))
    ]),
    eb(root, 'in', eb.selectFrom('event_managers as em')
      .select('em.event_id')
      .where('em.tenant_id', '=', auth.tenantId)
      .where('em.user_id', '=', auth.userId)
      .where('em.status', '=', 'active')
      .where('em.event_id', 'is not', null)),
    eb(col<number | null>('series_id'), 'in', eb.selectFrom('event_managers as em')
      .select('em.series_id')
      .where('em.tenant_id', '=', auth.tenantId)
      .where('em.user_id', '=', auth.userId)
      .where('em.status', '=', 'active')
      .where('em.series_id', 'is not', null))
  ]
  if (auth.orgId !== null) {
    branches.push(eb.and([eb(col<number>('visibility'), '=', 30), eb(col<string | null>('org_id'), '=', auth.orgId)]))
  }
  return eb.or(branches)
}

/**
 * The audience of list rows (never draft clones, so a row's id is its root) as branches an index
 * serves one by one, for lists that read each branch in sort order and count each apart
 * (events.repository.ts, listEvents; docs/performance.md). `classes` are disjoint (each names one
 * visibility level): their counts add up. `owned` (created by the caller, managed by them, or in a
 * series they manage) may meet the classes and each other: `inClasses` tells a row already counted.
 * `undefined` for tenant admins, who see every row.
 */
export interface ListClass {
  visibility: number
  /** the organization the class is limited to (visibility 30) */
  orgId?: string
  where: Expression<SqlBool>
}

export interface ListAudience {
  classes: ListClass[]
  owned: Array<Expression<SqlBool>>
  inClasses: Expression<SqlBool>
}

/** The spaces the caller is an active member of, as one array value (computed once per statement). */
export function memberSpaceIds (auth: AuthContext): Expression<number[]> {
  const members = expressionBuilder<Database, never>().selectFrom('space_members as sm')
    .select('sm.space_id')
    .where('sm.tenant_id', '=', auth.tenantId)
    .where('sm.user_id', '=', auth.userId)
    .where('sm.is_active', '=', true)
  return sql<number[]>`array(${members})`
}

export function listAudience (eb: Eb, auth: AuthContext, linksCopy = false): ListAudience | undefined {
  if (isTenantAdmin(auth)) return undefined
  // with the links' copy of their event's columns (migrations/0019_event_list_counts.sql), only links of listed
  // members-only events
  const mySpaceEvents = eb.selectFrom('event_spaces as es')
    .select('es.event_id')
    .where('es.tenant_id', '=', auth.tenantId)
    .where('es.space_id', '=', eb.fn.any(memberSpaceIds(auth)))
    // `es.event_listed` as written: a generic plan then matches the partial index event_spaces_audience
    .$if(linksCopy, qb => qb.where(sql<SqlBool>`es.event_listed`).where('es.event_visibility', '=', 20))
  const classes: ListClass[] = [
    { visibility: 40, where: eb('events.visibility', '=', 40) },
    // a hashed lookup beside the list's index, in its order (coalesce keeps PostgreSQL from turning it into a
    // join, which read every members-only event of the tenant to keep the few of the caller's spaces)
    {
      visibility: 20,
      where: eb.and([
        eb('events.visibility', '=', 20),
        sql<SqlBool>`coalesce(${eb('events.id', 'in', mySpaceEvents)}, false)`
      ])
    }
  ]
  if (auth.orgId !== null) {
    classes.push({
      visibility: 30,
      orgId: auth.orgId,
      where: eb.and([eb('events.visibility', '=', 30), eb('events.org_id', '=', auth.orgId)])
    })
  }
  const managed = (column: 'event_id' | 'series_id') => eb.selectFrom('event_managers as em')
    .select(`em.${column}`)
    .where('em.tenant_id', '=', auth.tenantId)
    .where('em.user_id', '=', auth.userId)
    .where('em.status', '=', 'active')
    .where(`em.${column}`, 'is not', null)
  // a caller's own rows are few: their ids first (an array), then the rows by key; as a filter on
  // the list's order, PostgreSQL walked every event of the tenant to find them
  const ids = (q: Expression<unknown>) => eb('events.id', '=', eb.fn.any(sql<number[]>`array(${q})`))
  const owned: Array<Expression<SqlBool>> = [
    // events_list_creator (migrations/0019_event_list_counts.sql) holds them in the list's filter columns
    eb('events.creator_id', '=', auth.userId),
    ids(managed('event_id')),
    ids(eb.selectFrom('events as of_series').select('of_series.id')
      .where('of_series.tenant_id', '=', auth.tenantId)
      .where('of_series.series_id', 'in', managed('series_id')))
  ]
  return { classes, owned, inClasses: eb.or(classes.map(c => c.where)) }
}

/**
 * Whom a row that may be a draft clone is shown to. A row without `published_id` by its own
 * audience; a draft clone by its published row's alone (visibility, spaces, managers,
 * organization, creator), never by its own columns: a clone whose visibility was widened must not
 * reach anyone the published event does not. One primary-key probe per clone row; lists never
 * take this path (they exclude clones).
 */
function rowAudience (eb: Eb, auth: AuthContext): Expression<SqlBool> {
  if (isTenantAdmin(auth)) return eb.val(true)
  return eb.or([
    eb.and([eb('events.published_id', 'is', null), audience(eb, auth)]),
    eb.exists(eb.selectFrom('events as pub').select(sql`1`.as('one'))
      // the tenant as a value too: correlated alone, Citus plans the statement over every shard, not one
      .where('pub.tenant_id', '=', auth.tenantId)
      .whereRef('pub.tenant_id', '=', 'events.tenant_id')
      .whereRef('pub.id', '=', 'events.published_id')
      .where('pub.published_id', 'is', null)
      .where('pub.is_deleted', '=', false)
      // the builder of the subquery also knows `pub`; audience only names it through sql.ref
      .where(ieb => audience(ieb as unknown as Eb, auth, 'pub')))
  ])
}

export interface VisibilityOptions {
  /** include draft clones (rows with published_id); lists never do */
  includeDraftClones?: boolean
}

/**
 * The events a caller may see: of their tenant, not deleted, no draft clones (unless asked), and
 * shown to them by visibility. Use it in any query over `events`.
 *
 * @example
 *   trx.selectFrom('events').select(EVENT_COLUMNS).where(eb => eventVisibleTo(eb, auth))
 */
export function eventVisibleTo (eb: Eb, auth: AuthContext, options: VisibilityOptions = {}): Expression<SqlBool> {
  const parts: Array<Expression<SqlBool>> = [
    eb('events.tenant_id', '=', auth.tenantId),
    eb('events.is_deleted', '=', false)
  ]
  // lists (no clones) keep their predicate; with clones, a clone is judged by its published row
  if (options.includeDraftClones !== true) parts.push(eb('events.published_id', 'is', null), audience(eb, auth))
  else parts.push(rowAudience(eb, auth))
  return eb.and(parts)
}

/**
 * The same filter as a standalone expression, for queries that join `events` with other tables
 * (the table must be named `events`, not aliased).
 *
 * @example
 *   trx.selectFrom('event_activity').innerJoin('events', …).where(eventVisibilityFilter(auth))
 */
export function eventVisibilityFilter (auth: AuthContext, options: VisibilityOptions = {}): Expression<SqlBool> {
  return eventVisibleTo(expressionBuilder<Database, 'events'>(), auth, options)
}

/** The event if the caller may see it; 404 otherwise (also for deleted events and, unless asked, draft clones). */
export async function findEventForRead (
  trx: Tx,
  auth: AuthContext,
  id: number,
  options: VisibilityOptions = {}
): Promise<EventRow> {
  const row = await trx
    .selectFrom('events')
    .select(EVENT_COLUMNS)
    .where('events.id', '=', id)
    .where(eb => eventVisibleTo(eb, auth, options))
    .executeTakeFirst()
  if (row === undefined) throw error404NotFound('event not found')
  return row
}

/** Whether the caller holds an event permission on a row they can see (admin, creator or manager). */
export async function hasEventPermission (
  trx: Tx,
  auth: AuthContext,
  row: EventRow,
  permission: EventPermission
): Promise<boolean> {
  if (isTenantAdmin(auth) || row.creator_id === auth.userId) return true
  const managers = await activeGrantsOn(trx, auth, rootEventId(row), row.series_id)
  return managers.some(m => grantedPermissions(m).has(permission))
}

/** The caller's active manager rows (role and permissions) on an event (its root) and on its series, if any. */
export async function activeGrantsOn (
  trx: Tx,
  auth: AuthContext,
  root: number,
  seriesId: number | null
): Promise<Array<{ role: string | null, permissions: string[] }>> {
  return await trx
    .selectFrom('event_managers')
    .select(['role', 'permissions'])
    .where('tenant_id', '=', auth.tenantId)
    .where('user_id', '=', auth.userId)
    .where('status', '=', 'active')
    .where(eb =>
      seriesId !== null
        ? eb.or([eb('event_id', '=', root), eb('series_id', '=', seriesId)])
        : eb('event_id', '=', root)
    )
    .execute()
}

/** The caller's active manager rows at series level. */
export async function activeSeriesGrants (
  trx: Tx,
  auth: AuthContext,
  seriesId: number
): Promise<Array<{ role: string | null, permissions: string[] }>> {
  return await trx.selectFrom('event_managers').select(['role', 'permissions'])
    .where('tenant_id', '=', auth.tenantId).where('user_id', '=', auth.userId).where('status', '=', 'active')
    .where('series_id', '=', seriesId)
    .execute()
}

/** The creator of an event row of the tenant (undefined when there is none). */
export async function creatorOfEvent (trx: Tx, tenantId: string, id: number): Promise<string | undefined> {
  return (await trx.selectFrom('events').select('creator_id')
    .where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst())?.creator_id
}

/** The creator of a series of the tenant (undefined when there is none). */
export async function creatorOfSeries (trx: Tx, tenantId: string, id: number): Promise<string | undefined> {
  return (await trx.selectFrom('event_series').select('creator_id')
    .where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst())?.creator_id
}

/** Columns of an event the caller may see (draft clones and deleted events excluded), or undefined. */
export async function findVisibleEvent<C extends keyof EventRow & string> (
  trx: Tx,
  auth: AuthContext,
  id: number,
  columns: readonly C[]
): Promise<Pick<EventRow, C> | undefined> {
  return await trx
    .selectFrom('events')
    .select(columns as unknown as Array<keyof EventRow & string> as never)
    .where('events.id', '=', id)
    .where(eb => eventVisibleTo(eb, auth))
    .executeTakeFirst() as Pick<EventRow, C> | undefined
}

/** The first occurrence of a series that the caller can see, by position (undefined when they see none). */
export async function firstVisibleOccurrence (
  trx: Tx,
  auth: AuthContext,
  seriesId: number
): Promise<number | undefined> {
  return (await trx
    .selectFrom('events')
    .select('id')
    .where(eb => eventVisibleTo(eb, auth))
    .where('events.series_id', '=', seriesId)
    .orderBy('events.series_index')
    .orderBy('events.id')
    .executeTakeFirst())?.id
}

export interface WriteOptions {
  /** the request's If-Match header: 412 when it names another revision */
  ifMatch?: string | undefined
  /** draft clones may be written (default true) */
  includeDraftClones?: boolean
  /** archived events may be written (default false) */
  allowArchived?: boolean
}

/**
 * Locks an event for a write (`for update`). 404 when the caller may not see it or it was
 * deleted (as reads answer), 403 when they see it but lack `permission`, 409 when it is
 * archived, 412 when If-Match names another revision.
 *
 * @example
 *   const row = await lockEventForWrite(trx, auth, id, 'attendees:write')
 */
export async function lockEventForWrite (
  trx: Tx,
  auth: AuthContext,
  id: number,
  permission: EventPermission,
  options: WriteOptions = {}
): Promise<EventRow> {
  // the lock by key alone, then the row as the caller may see it: a lock taken in the same statement as
  // the audience's subqueries cannot be routed to one shard on Citus, which refuses it
  const locked = await selectRows(trx, 'events', { tenant_id: auth.tenantId, id })
    .select('id')
    .forUpdate()
    .executeTakeFirst()
  const row =
    locked === undefined
      ? undefined
      : await trx
        .selectFrom('events')
        .select(EVENT_COLUMNS)
        .where('events.tenant_id', '=', auth.tenantId)
        .where('events.id', '=', id)
        .where(eb =>
          options.includeDraftClones === false
            ? eb.and([eb('events.published_id', 'is', null), audience(eb, auth)])
            : rowAudience(eb, auth)
        )
        .executeTakeFirst()
  // a deleted event is gone for writes as for reads (findEventForRead): 404, before any permission check
  if (row === undefined || row.is_deleted) throw error404NotFound('event not found')
  if (!(await hasEventPermission(trx, auth, row, permission))) {
    throw error403Forbidden(`missing event permission ${permission}`)
  }
  if (row.status === 'archived' && options.allowArchived !== true) {
    throw error409Conflict('the event is archived and read-only', [], 'event_archived')
  }
  checkIfMatch(options.ifMatch, row.revision)
  return row
}

/**
 * Incremental sync of the events list (docs/integrations.md, "Incremental sync"): the changes logged by the
 * triggers of migrations/0027_sync_events_attendees.sql, read with the caller's reach.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { ChangesPage, ChangesWindow } from '../../platform/sync/sync.ts'
import { readChanges } from '../../platform/sync/sync.repository.ts'
import { eventVisibleTo, isTenantAdmin } from './events.access.repository.ts'
import { listFilter, type ListFilters, type VersionedEvent } from './events.list.repository.ts'

/**
 * What decides which events a member sees besides the events themselves: the spaces they are an active member
 * of and the events and series they manage, as a digest (empty for a tenant admin, who sees every event). A
 * sync token binds it: when it changes, the token answers 410 and the client reads the full list again.
 */
export async function reachDigest (trx: Tx, auth: AuthContext): Promise<string> {
  if (isTenantAdmin(auth)) return ''
  const { rows } = await sql<{ digest: string }>`select md5(concat_ws('|',
      (select string_agg(space_id::text, ',' order by space_id) from space_members
        where tenant_id = ${auth.tenantId} and user_id = ${auth.userId} and is_active),
      (select string_agg(coalesce('e' || event_id, 's' || series_id), ',' order by event_id, series_id)
        from event_managers
        where tenant_id = ${auth.tenantId} and user_id = ${auth.userId} and status = 'active'))) as digest`
    .execute(trx)
  return rows[0]?.digest ?? ''
}

/**
 * Whether the caller could see the event of a logged change (its creator, organization, visibility, spaces and
 * series then; the caller's memberships and grants now, which the token binds): the rule of `audience`
 * (events.access.repository.ts) over the log's columns.
 */
function couldSee (auth: AuthContext): RawBuilder<SqlBool> {
  if (isTenantAdmin(auth)) return sql<SqlBool>`true`
  const grants = sql`from event_managers
    where tenant_id = ${auth.tenantId} and user_id = ${auth.userId} and status = 'active'`
  return sql<SqlBool>`(owner_id = ${auth.userId}
    or visibility = 40
    ${auth.orgId !== null ? sql`or (visibility = 30 and org_id = ${auth.orgId})` : sql``}
    or (visibility = 20 and spaces && array(select space_id from space_members
      where tenant_id = ${auth.tenantId} and user_id = ${auth.userId} and is_active))
    or key = any(array(select event_id::text ${grants} and event_id is not null))
    or parent = any(array(select 'series:' || series_id ${grants} and series_id is not null)))`
}

export interface EventChangesOptions extends ListFilters, ChangesWindow {}

/**
 * A page of the changes of the events list since a sync point: the events changed above the position `since`
 * that the caller could see at one of those changes, each once at its latest change, in the order of that
 * change (its position); those in the list now (its filters, the caller's visibility) as rows to render, the others as
 * tombstones.
 */
export async function listEventChanges (
  trx: Tx,
  auth: AuthContext,
  o: EventChangesOptions
): Promise<ChangesPage<VersionedEvent, number>> {
  return await readChanges(trx, {
    tenantId: auth.tenantId,
    kind: 'event',
    since: o.since,
    after: o.after,
    upto: o.upto,
    size: o.size,
    where: couldSee(auth),
    id: Number,
    rows: async ids => await listFilter(auth, o)(trx.selectFrom('events')
      .select(['events.id', sql<string>`events.xmin::text`.as('version'), 'events.published_id', 'events.series_id']))
      .where('events.id', 'in', ids)
      .where(eb => eventVisibleTo(eb, auth))
      .execute()
  })
}

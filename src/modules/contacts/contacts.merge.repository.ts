/**
 * The SQL of merging contacts (contacts.merge.ts): the contacts locked, the redirects of absorbed ids, and every row
 * of other tables that names a contact and moves with it (attendees, space links, activity, contact-scoped rules).
 * Each function takes the merge's transaction first and names the tenant.
 *
 * `contact_redirects` (migration 0029) is read and written with plain SQL, typed per statement: this file is the only
 * code that uses it, so it has no table type in `Database`.
 */
import { sql, type Selectable, type Updateable } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { visibleTo } from './contacts.repository.ts'

/** An attendee row (the attendees module's table, as `Database` has it): what a merge moves. */
export type AttendeeRow = Selectable<Database['attendees']>

/**
 * The contacts of `ids` the caller sees, every column, locked (`for update`) in id order. Two merges that share a
 * contact lock it in the same order, whichever of them names it first, so the second waits for the first to commit
 * and then reads what the first left (an absorbed contact is then gone). `for update` rather than `for no key
 * update`: it also holds back a concurrent insert that names one of them (an attendee row's foreign key check),
 * which would otherwise land on an absorbed contact between its rows being moved and its delete.
 */
export async function lockContacts (trx: Tx, auth: AuthContext, ids: readonly string[]) {
  return await trx.selectFrom('contacts').selectAll()
    .where('tenant_id', '=', auth.tenantId)
    .where(sql<boolean>`id = any(${[...ids]}::uuid[])`)
    .where(eb => visibleTo(eb, auth))
    .orderBy('id')
    .forUpdate()
    .execute()
}

/** Where absorbed contact ids now point (`from_id` → `to_id`), for those of `ids` that were absorbed. */
export async function redirectsOf (trx: Tx, tenantId: string, ids: readonly string[]): Promise<Map<string, string>> {
  const r = await sql<{ from_id: string, to_id: string }>`
    select from_id::text as from_id, to_id::text as to_id from contact_redirects
    where tenant_id = ${tenantId} and from_id = any(${[...ids]}::uuid[])`.execute(trx)
  return new Map(r.rows.map(x => [x.from_id, x.to_id]))
}

/**
 * Records that `absorbed` are now `targetId`: ids that pointed to one of them point to the target (one hop, always),
 * then one row per absorbed id.
 */
export async function writeRedirects (
  trx: Tx,
  tenantId: string,
  targetId: string,
  absorbed: readonly string[],
  by: string
): Promise<void> {
  await sql`update contact_redirects set to_id = ${targetId}::uuid
    where tenant_id = ${tenantId} and to_id = any(${[...absorbed]}::uuid[])`.execute(trx)
  // VALUES, not a SELECT from unnest: on Citus that becomes a COPY, which row-level security refuses (outbox.ts)
  const rows = absorbed.map(id => sql`(${tenantId}, ${id}::uuid, ${targetId}::uuid, ${by})`)
  await sql`insert into contact_redirects (tenant_id, from_id, to_id, merged_by) values ${sql.join(rows)}`.execute(trx)
}

/**
 * The attendee rows of `contactIds` that share their list with a row of another of them: the same event (event_id),
 * or, for rows of every occurrence of a series (event_id null), the same series. The rest of their rows move without
 * meeting another (`moveAttendees`).
 */
export async function sharedAttendances (
  trx: Tx,
  tenantId: string,
  contactIds: readonly string[]
): Promise<AttendeeRow[]> {
  const ids = [...contactIds]
  const r = await sql<AttendeeRow>`
    select a.* from attendees a
    where a.tenant_id = ${tenantId} and a.contact_id = any(${ids}::uuid[])
      and exists (
        select 1 from attendees b
        where b.tenant_id = a.tenant_id and b.contact_id = any(${ids}::uuid[]) and b.id <> a.id
          and (b.event_id = a.event_id
            or (a.event_id is null and b.event_id is null and b.series_id = a.series_id)))
    order by a.id`.execute(trx)
  return r.rows
}

/**
 * Attendee rows by id as they are now, locked (`for update`) in id order: the lock by key alone, in a statement of
 * its own (Citus refuses a lock in a statement with subqueries it cannot route to one shard).
 */
export async function lockAttendeeRows (trx: Tx, tenantId: string, ids: readonly number[]): Promise<AttendeeRow[]> {
  if (ids.length === 0) return []
  return await trx.selectFrom('attendees').selectAll()
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .orderBy('id')
    .forUpdate()
    .execute()
}

export async function deleteAttendeeRows (trx: Tx, tenantId: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return
  await trx.deleteFrom('attendees')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .execute()
}

export type AttendeeUpdate = Updateable<Database['attendees']>

export async function updateAttendeeRow (trx: Tx, tenantId: string, id: number, values: AttendeeUpdate): Promise<void> {
  await trx.updateTable('attendees')
    .set({ ...values, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .execute()
}

/** Gives every remaining attendee row of `absorbed` to the target (none of them shares a list with another). */
export async function moveAttendees (
  trx: Tx,
  tenantId: string,
  targetId: string,
  absorbed: readonly string[]
): Promise<number> {
  const r = await trx.updateTable('attendees')
    .set({ contact_id: targetId, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`contact_id = any(${[...absorbed]}::uuid[])`)
    .executeTakeFirst()
  return Number(r.numUpdatedRows)
}

/** The events a contact attends (its rows of one occurrence): where its check-in activity is recorded. */
export async function attendedEvents (trx: Tx, tenantId: string, contactId: string): Promise<number[]> {
  const rows = await trx.selectFrom('attendees').select('event_id').distinct()
    .where('tenant_id', '=', tenantId).where('contact_id', '=', contactId).where('event_id', 'is not', null)
    .execute()
  return rows.flatMap(r => r.event_id === null ? [] : [r.event_id])
}

/**
 * Activity of `eventIds` recorded for one of `absorbed` (`payload.contact_id`: check-in, undo, check-out) now names
 * the target; `payload.merged_from` keeps the id it was recorded with (the first, along a chain of merges). Read by
 * event (event_activity_event): an expression of the payload cannot use an index under row-level security.
 */
export async function moveEventActivity (
  trx: Tx,
  tenantId: string,
  eventIds: readonly number[],
  targetId: string,
  absorbed: readonly string[]
): Promise<void> {
  if (eventIds.length === 0) return
  await sql`update event_activity
    set payload = jsonb_set(payload, '{contact_id}', to_jsonb(${targetId}::text))
      || jsonb_build_object('merged_from', coalesce(payload->'merged_from', payload->'contact_id'))
    where tenant_id = ${tenantId} and event_id = any(${[...eventIds]}::bigint[])
      and payload->>'contact_id' = any(${[...absorbed]}::text[])`.execute(trx)
}

/**
 * Links of the contacts to spaces: one per space stays (the target's, else the oldest of the absorbed), and it
 * names the target.
 */
export async function moveSpaceLinks (
  trx: Tx,
  tenantId: string,
  targetId: string,
  absorbed: readonly string[]
): Promise<void> {
  const all = [targetId, ...absorbed]
  await sql`delete from space_contacts s
    where s.tenant_id = ${tenantId} and s.contact_id = any(${[...absorbed]}::uuid[])
      and s.id <> (select k.id from space_contacts k
        where k.tenant_id = s.tenant_id and k.space_id = s.space_id and k.contact_id = any(${all}::uuid[])
        order by (k.contact_id = ${targetId}::uuid) desc, k.id limit 1)`.execute(trx)
  await sql`update space_contacts set contact_id = ${targetId}::uuid, updated_at = now()
    where tenant_id = ${tenantId} and contact_id = any(${[...absorbed]}::uuid[])`.execute(trx)
}

/** A space's activity about one of `absorbed` (type contact) is about the target (space_activity_contact). */
export async function moveSpaceActivity (
  trx: Tx,
  tenantId: string,
  targetId: string,
  absorbed: readonly string[]
): Promise<void> {
  await sql`update space_activity set resource_id = ${targetId}
    where tenant_id = ${tenantId} and type = 'contact' and resource_id = any(${[...absorbed]}::text[])`.execute(trx)
}

/**
 * Rules scoped to one of `absorbed` (scope CONTACT) are scoped to the target, written by nobody new (the rule still
 * acts as its creator). The ids of the rules moved, whose new version the merge then snapshots as every version is
 * (the automation module's `snapshotRules`, given to the contacts module: contacts.needs.ts).
 */
export async function moveContactRules (
  trx: Tx,
  tenantId: string,
  targetId: string,
  absorbed: readonly string[]
): Promise<string[]> {
  const moved = await sql<{ id: string }>`
    update automation_rules set scope_id = ${targetId}, version = version + 1, updated_at = now()
    where tenant_id = ${tenantId} and scope = 'CONTACT' and scope_id = any(${[...absorbed]}::text[])
    returning id::text as id`.execute(trx)
  return moved.rows.map(x => x.id)
}

export async function deleteContacts (trx: Tx, tenantId: string, ids: readonly string[]): Promise<void> {
  await trx.deleteFrom('contacts')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${[...ids]}::uuid[])`)
    .execute()
}

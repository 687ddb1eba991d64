/**
 * The SQL of registration (event-collab.registration.ts): settings of a series, seat counts, promotions from the
 * waitlist, and the e-mails to attendees' contacts.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'

export async function seriesRegistration (trx: Tx, tenantId: string, seriesId: number) {
  return await trx.selectFrom('event_series')
    .select(['capacity', 'waitlist_enabled', 'requires_approval'])
    .where('tenant_id', '=', tenantId).where('id', '=', seriesId)
    .executeTakeFirst()
}

/** Attendees of an event by what registration cares about (one index range: attendees_event_status). */
export interface SeatCounts {
  /** confirmed and checked in: the seats taken */
  confirmed: number
  waitlisted: number
  pending: number
  no_show: number
  /** the last waitlist position (0 when nobody waits) */
  last_position: number
}

export async function seatCounts (trx: Tx, tenantId: string, eventId: number): Promise<SeatCounts> {
  const r = await sql<SeatCounts>`
    select count(*) filter (where status in ('confirmed', 'checked_in'))::int as confirmed,
           count(*) filter (where status = 'waitlisted')::int as waitlisted,
           count(*) filter (where status = 'pending')::int as pending,
           count(*) filter (where status = 'no_show')::int as no_show,
           coalesce(max(waitlist_position), 0)::int as last_position
    from attendees where tenant_id = ${tenantId} and event_id = ${eventId}`.execute(trx)
  return r.rows[0] ?? { confirmed: 0, waitlisted: 0, pending: 0, no_show: 0, last_position: 0 }
}

/** Confirms the first `n` waitlisted attendees of an event, in position order; each with the position it had. */
export async function promoteWaitlisted (trx: Tx, tenantId: string, eventId: number, n: number) {
  const r = await sql<{ contact_id: string, previous_position: number }>`
    update attendees a set status = 'confirmed', waitlist_position = null, updated_at = now()
    from (select id, waitlist_position from attendees
          where tenant_id = ${tenantId} and event_id = ${eventId} and status = 'waitlisted'
          order by waitlist_position limit ${n} for update) w
    where a.tenant_id = ${tenantId} and a.id = w.id
    returning a.contact_id::text as contact_id, w.waitlist_position as previous_position`.execute(trx)
  return r.rows
}

/**
 * Numbers the waitlist 1..n in its order (closing the gaps a promotion or a departure left); the unique constraint
 * on positions is checked at commit, so the rows can move in one statement.
 */
export async function renumberWaitlist (trx: Tx, tenantId: string, eventId: number): Promise<void> {
  await sql`
    update attendees a set waitlist_position = w.n
    from (select id, row_number() over (order by waitlist_position, id)::int as n from attendees
          where tenant_id = ${tenantId} and event_id = ${eventId} and status = 'waitlisted') w
    where a.tenant_id = ${tenantId} and a.id = w.id and a.waitlist_position <> w.n`.execute(trx)
}

/**
 * Queues one e-mail per contact, to its address (stored undeliverable, with the reason, when it has none): one
 * statement whatever the number of contacts.
 */
export async function queueContactEmails (
  trx: Tx,
  tenantId: string,
  contactIds: readonly string[],
  m: { subject: string, body: string, payload: Record<string, unknown> }
): Promise<number> {
  const r = await sql`
    insert into notification_outbox (tenant_id, channel, recipient, subject, body, priority, payload, status, last_error)
    select c.tenant_id, 'email', coalesce(nullif(trim(c.email), ''), 'contact:' || c.id::text), ${m.subject},
           ${m.body}, 'normal', ${JSON.stringify(m.payload)}::jsonb,
           case when nullif(trim(c.email), '') is null then 'undeliverable' else 'pending' end,
           case when nullif(trim(c.email), '') is null then 'the contact ' || c.id::text || ' has no e-mail address' end
    from contacts c
    where c.tenant_id = ${tenantId} and c.id = any(${[...new Set(contactIds)]}::uuid[])`.execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

/** The users who actively manage an event. */
export async function activeManagerIds (trx: Tx, tenantId: string, eventId: number): Promise<string[]> {
  const rows = await trx.selectFrom('event_managers').select('user_id')
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('status', '=', 'active')
    .where('user_id', 'is not', null)
    .execute()
  return rows.flatMap(r => r.user_id === null ? [] : [r.user_id])
}

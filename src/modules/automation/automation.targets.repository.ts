/**
 * The engine's SQL over what rules look at and act on, tables of other modules: the events a
 * relative-time rule fires for, the trigger's event and contact as the rule's creator may see them,
 * an event's managers and attendees (notify), and attendee statuses (set_attendee_status). Every
 * query names its tenant.
 */
import { sql } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { rowExists, selectRows } from '../../platform/db/match.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { eventVisibleTo } from '../events/index.ts'
import type { RuleRow } from './automation.table.ts'

export interface DueEventsQuery {
  /** the rule, in its tenant; EVENT and SPACE scopes narrow the events, CONTACT has none */
  rule: Pick<RuleRow, 'tenant_id' | 'scope' | 'scope_id'>
  /** whom the rule acts as: only events they see */
  subject: AuthContext
  /** the moment: the start or the end */
  column: 'start_dt' | 'end_dt'
  offsetMinutes: number
  /** how long after the moment a missed trigger still fires */
  graceMinutes: number
  now: Date
}

/**
 * The published events of a rule's scope (at most 1000) whose moment minus the offset has come by
 * `now`, until `graceMinutes` after the moment itself.
 */
export async function dueEvents (trx: Tx, q: DueEventsQuery) {
  const { rule, column, now } = q
  const moment = sql<Date>`events.${sql.ref(column)}`
  return await trx
    .selectFrom('events')
    .select([
      'events.id',
      'events.template',
      'events.template_version',
      'events.state',
      'events.title',
      'events.status',
      'events.start_dt',
      'events.end_dt'
    ])
    .where(eb => eventVisibleTo(eb, q.subject))
    .where('events.status', '=', 'published')
    .where(sql.ref(`events.${column}`), 'is not', null)
    .where(sql<boolean>`${moment} - make_interval(mins => ${q.offsetMinutes}) <= ${now}`)
    .where(sql<boolean>`${moment} + make_interval(mins => ${q.graceMinutes}) > ${now}`)
    .$if(rule.scope === 'EVENT' && rule.scope_id !== null, qb => qb.where('events.id', '=', Number(rule.scope_id)))
    .$if(rule.scope === 'SPACE' && rule.scope_id !== null, qb =>
      qb.where(
        'events.id',
        'in',
        trx
          .selectFrom('event_spaces')
          .select('event_id')
          .where('tenant_id', '=', rule.tenant_id)
          .where('space_id', '=', Number(rule.scope_id))
      )
    )
    .$if(rule.scope === 'CONTACT', qb => qb.where(sql<boolean>`false`))
    .limit(1000)
    .execute()
}

/** Whether an event is in a space (as a tenant's `event_spaces` row). */
export async function eventInSpace (trx: Tx, tenantId: string, eventId: number, spaceId: number): Promise<boolean> {
  return await rowExists(trx, 'event_spaces', { tenant_id: tenantId, event_id: eventId, space_id: spaceId })
}

/** The fields of the trigger's event that conditions read (`event`). */
export const TRIGGER_EVENT_COLUMNS = [
  'id',
  'title',
  'template',
  'template_version',
  'state',
  'status',
  'start_dt',
  'end_dt',
  'timezone'
] as const

/** A deleted event (not a draft clone): its trigger fields and its creator. */
export async function findDeletedEvent (trx: Tx, tenantId: string, eventId: number) {
  return await trx
    .selectFrom('events')
    .select([...TRIGGER_EVENT_COLUMNS, 'creator_id'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', eventId)
    .where('is_deleted', '=', true)
    .where('published_id', 'is', null)
    .executeTakeFirst()
}

/** Whether a tenant has an event with the id, in whatever state. */
export async function eventExists (trx: Tx, tenantId: string, eventId: number): Promise<boolean> {
  return await rowExists(trx, 'events', { tenant_id: tenantId, id: eventId })
}

/** Whether a tenant has a contact with the id, whoever may see it. */
export async function contactExists (trx: Tx, tenantId: string, contactId: string): Promise<boolean> {
  return await rowExists(trx, 'contacts', { tenant_id: tenantId, id: contactId })
}

/** The users who actively manage an event. */
export async function activeManagerIds (trx: Tx, tenantId: string, eventId: number): Promise<string[]> {
  const managers = await selectRows(trx, 'event_managers', { tenant_id: tenantId, event_id: eventId, status: 'active' })
    .select('user_id')
    .where('user_id', 'is not', null)
    .execute()
  return managers.map(m => m.user_id as string)
}

/** Whether this deployment has attendees (the table of the attendees module). */
export async function attendeesAvailable (trx: Tx): Promise<boolean> {
  const r = await sql<{ t: string | null }>`select to_regclass('attendees')::text as t`.execute(trx)
  return r.rows[0]?.t !== null && r.rows[0]?.t !== undefined
}

/**
 * Where to reach an event's attendees (of the statuses, when given), in the order they were added:
 * their contact's e-mail address, or `contact:<id>` when it has none (an erased contact's anonymous attendance,
 * contact_id null, is nobody to reach: docs/privacy.md).
 */
export async function attendeeRecipients (
  trx: Tx,
  tenantId: string,
  eventId: number,
  statuses: string[] | undefined
): Promise<string[]> {
  const rows = await sql<{ recipient: string }>`
      select coalesce(c.email, 'contact:' || a.contact_id::text) as recipient
      from attendees a left join contacts c on c.tenant_id = a.tenant_id and c.id = a.contact_id
      where a.tenant_id = ${tenantId} and a.event_id = ${eventId} and a.contact_id is not null
      ${statuses !== undefined ? sql`and a.status in (${sql.join(statuses)})` : sql``}
      order by a.id`.execute(trx)
  return rows.rows.map(r => r.recipient)
}

/** The contacts of an event's attendees in some statuses (not already `except`), in the order they were added. */
export async function attendeesInStatuses (
  trx: Tx,
  tenantId: string,
  eventId: number,
  statuses: readonly string[],
  except: string
): Promise<string[]> {
  const rows = await sql<{ contact_id: string }>`
    select contact_id::text as contact_id from attendees
    where tenant_id = ${tenantId} and event_id = ${eventId} and status <> ${except} and contact_id is not null
      and status in (${sql.join([...statuses])})
    order by id`.execute(trx)
  return rows.rows.map(r => r.contact_id)
}

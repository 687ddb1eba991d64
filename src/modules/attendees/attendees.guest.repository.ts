/**
 * The SQL of the guest side of attendees (docs/guests.md): one attendee as its guest sees it, the invited attendees
 * an organiser mails, and a tenant's guest settings.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import type { AttendeeStatus } from './attendees.table.ts'

/** An attendee of an event as its guest's link shows it, with the contact's name, address and language. */
export async function guestAttendee (trx: Tx, tenantId: string, attendeeId: number) {
  return await trx.selectFrom('attendees as a')
    .innerJoin('contacts as c', j => j.onRef('c.tenant_id', '=', 'a.tenant_id').onRef('c.id', '=', 'a.contact_id'))
    .select([
      'a.id', 'a.event_id', 'a.contact_id', 'a.status', 'a.waitlist_position', 'a.responded_at',
      'a.guest_responded_at', 'a.locale', 'a.updates_unsubscribed_at', 'a.calendar_sequence', 'a.source', 'a.answers',
      'c.first_name', 'c.last_name', 'c.email', 'c.locale as contact_locale'
    ])
    .where('a.tenant_id', '=', tenantId).where('a.id', '=', attendeeId)
    .executeTakeFirst()
}
export type GuestAttendee = NonNullable<Awaited<ReturnType<typeof guestAttendee>>>

/** Records a guest's own answer (when, in which language) on attendees that changed. */
export async function markGuestResponded (trx: Tx, tenantId: string, attendeeId: number): Promise<void> {
  await trx.updateTable('attendees').set({ guest_responded_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', attendeeId)
    .execute()
}

/** A guest's choice about update mails. */
export async function setUpdates (trx: Tx, tenantId: string, attendeeId: number, subscribed: boolean): Promise<void> {
  await trx.updateTable('attendees')
    .set({ updates_unsubscribed_at: subscribed ? null : sql<Date>`coalesce(updates_unsubscribed_at, ${new Date()})` })
    .where('tenant_id', '=', tenantId).where('id', '=', attendeeId)
    .execute()
}

/**
 * The attendees of an event an invitation goes to: those among `contactIds` (all of the event's when null) in
 * status `invited`, in id order, at most `limit`.
 */
export async function invitedAttendees (
  trx: Tx,
  tenantId: string,
  eventId: number,
  contactIds: readonly string[] | null,
  limit: number
) {
  return await trx.selectFrom('attendees').select(['id', 'contact_id', 'status'])
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId)
    .where('status', '=', 'invited' satisfies AttendeeStatus)
    .$if(contactIds !== null, qb => qb.where(sql<boolean>`contact_id = any(${[...contactIds ?? []]}::uuid[])`))
    .orderBy('id').limit(limit)
    .execute()
}

/** Marks invitations as sent now. */
export async function markInvited (trx: Tx, tenantId: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return
  await trx.updateTable('attendees').set({ invitation_sent_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .execute()
}

/** One attendee of an event by contact: its id and the guest-side counters a registration reads. */
export async function registrationAttendee (trx: Tx, tenantId: string, eventId: number, contactId: string) {
  return await trx.selectFrom('attendees').select(['id', 'status', 'registrations'])
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('contact_id', '=', contactId)
    .forUpdate()
    .executeTakeFirst()
}

/** Counts one more public registration of an attendee. */
export async function countRegistration (trx: Tx, tenantId: string, attendeeId: number): Promise<void> {
  await trx.updateTable('attendees').set(eb => ({ registrations: eb('registrations', '+', 1) }))
    .where('tenant_id', '=', tenantId).where('id', '=', attendeeId)
    .execute()
}

/** The tenant's guest settings, as stored (none yet: defaults). */
export async function readGuestSettings (trx: Tx, tenantId: string) {
  return await trx.selectFrom('guest_settings').select(['default_locale', 'updated_at'])
    .where('tenant_id', '=', tenantId).executeTakeFirst()
}

export async function writeGuestSettings (trx: Tx, tenantId: string, defaultLocale: string | null) {
  return await trx.insertInto('guest_settings')
    .values({ tenant_id: tenantId, default_locale: defaultLocale, updated_at: new Date() })
    .onConflict(oc => oc.column('tenant_id').doUpdateSet(eb => ({
      default_locale: eb.ref('excluded.default_locale'),
      updated_at: eb.ref('excluded.updated_at')
    })))
    .returning(['default_locale', 'updated_at'])
    .executeTakeFirstOrThrow()
}

/** The stored default language of a tenant's guest texts. */
export async function tenantDefaultLocale (trx: Tx, tenantId: string): Promise<string | null> {
  const row = await trx.selectFrom('guest_settings').select('default_locale')
    .where('tenant_id', '=', tenantId).executeTakeFirst()
  return row?.default_locale ?? null
}

/** A user's display name and address (the organizer of an event's mails). */
export async function userProfile (trx: Tx, tenantId: string, userId: string) {
  return await trx.selectFrom('users').select(['display_name', 'email'])
    .where('tenant_id', '=', tenantId).where('id', '=', userId).executeTakeFirst()
}

/** What a mail to a guest reads of an attendee and its contact. */
export interface GuestRow {
  id: number
  contact_id: string
  status: AttendeeStatus
  waitlist_position: number | null
  locale: string | null
  updates_unsubscribed_at: Date | null
  calendar_sequence: number
  email: string | null
  first_name: string | null
  last_name: string | null
  contact_locale: string | null
}

export async function guestRows (trx: Tx, tenantId: string, ids: readonly number[]): Promise<GuestRow[]> {
  return await trx.selectFrom('attendees as a')
    .innerJoin('contacts as c', j => j.onRef('c.tenant_id', '=', 'a.tenant_id').onRef('c.id', '=', 'a.contact_id'))
    .select([
      'a.id', 'a.contact_id', 'a.status', 'a.waitlist_position', 'a.locale', 'a.updates_unsubscribed_at',
      'a.calendar_sequence', 'c.email', 'c.first_name', 'c.last_name', 'c.locale as contact_locale'
    ])
    .where('a.tenant_id', '=', tenantId)
    .where(sql<boolean>`a.id = any(${[...ids]}::bigint[])`)
    .orderBy('a.id')
    .execute()
}

/** Raises the calendar SEQUENCE of the attendees by one; the new values by attendee id. */
export async function bumpSequences (trx: Tx, tenantId: string, ids: readonly number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map()
  const rows = await trx.updateTable('attendees')
    .set(eb => ({ calendar_sequence: eb('calendar_sequence', '+', 1) }))
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .returning(['id', 'calendar_sequence'])
    .execute()
  return new Map(rows.map(r => [r.id, r.calendar_sequence]))
}

/** The attendees of an event among `contactIds` (its own rows, not a series'), in id order. */
export async function attendeeIdsOf (
  trx: Tx,
  tenantId: string,
  eventId: number,
  contactIds: readonly string[]
): Promise<number[]> {
  if (contactIds.length === 0) return []
  const rows = await trx.selectFrom('attendees').select('id')
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId)
    .where(sql<boolean>`contact_id = any(${[...new Set(contactIds)]}::uuid[])`)
    .orderBy('id')
    .execute()
  return rows.map(r => r.id)
}

/** Records what the guests' last mail showed of the event. */
export async function markMailed (trx: Tx, tenantId: string, ids: readonly number[], digest: string): Promise<void> {
  if (ids.length === 0) return
  await trx.updateTable('attendees').set({ calendar_digest: digest })
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${[...ids]}::bigint[])`)
    .execute()
}

/** The statuses of guests told when their event moves (they were mailed about it, and may come). */
const TOLD_OF_CHANGES: AttendeeStatus[] = ['invited', 'confirmed', 'checked_in', 'tentative', 'waitlisted', 'pending']

/** The guests of events who were mailed about them and may still come: what their last mail showed, in id order. */
export async function guestsToTell (trx: Tx, tenantId: string, eventIds: readonly number[]) {
  const rows = await trx.selectFrom('attendees').select(['id', 'event_id', 'calendar_digest'])
    .where('tenant_id', '=', tenantId).where(sql<boolean>`event_id = any(${[...eventIds]}::bigint[])`)
    .where('status', 'in', TOLD_OF_CHANGES)
    .where('calendar_digest', 'is not', null)
    .orderBy('id')
    .execute()
  return rows
}

import type { ColumnType, Generated, Selectable } from 'kysely'
import type { AttendeeStatus } from '../../platform/db/columns.ts'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export { ATTENDEE_STATUSES, type AttendeeStatus } from '../../platform/db/columns.ts'

/** Statuses that hold a seat of the event's capacity. */
export const SEATED_STATUSES = ['confirmed', 'checked_in'] as const satisfies readonly AttendeeStatus[]
export const CHECK_IN_METHODS = ['manual', 'scan', 'api'] as const
export type CheckInMethod = typeof CHECK_IN_METHODS[number]
export const ATTENDEE_SOURCES = ['organiser', 'registration'] as const
export type AttendeeSource = typeof ATTENDEE_SOURCES[number]

/** Attendees of one occurrence (event_id) or of every occurrence of a series (series_id). */
export interface AttendeesTable {
  tenant_id: string
  id: Generated<number>
  event_id: number | null
  series_id: number | null
  /**
   * Null in the database only on the anonymous attendance an erasure leaves (docs/privacy.md): counted, never
   * addressed. Typed as a string because no path that reads or writes by contact can reach such a row (they look
   * attendees up by contact id, and the erasure deleted the guest links to them); a path that lists every attendance
   * of an event must expect null (the list's schema says so).
   */
  contact_id: string
  org_id: string | null
  status: Generated<AttendeeStatus>
  notes: string | null
  is_checked_in: Generated<boolean>
  checked_in_at: Timestamp | null
  invited_at: Timestamp
  responded_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
  /** 1.. while `waitlisted`, else null (unique per event, no gaps) */
  waitlist_position: number | null
  approved_at: Timestamp | null
  approved_by: string | null
  checked_in_by: string | null
  check_in_method: CheckInMethod | null
  status_before_check_in: AttendeeStatus | null
  checked_out_at: Timestamp | null
  checked_out_by: string | null
  check_in_token_hash: string | null
  check_in_token_issued_at: Timestamp | null
  check_in_token_revoked_at: Timestamp | null
  /** how the attendee came: added by a member, or registered on the public side (migration 0035) */
  source: Generated<AttendeeSource>
  invitation_sent_at: Timestamp | null
  /** when the guest last answered through their own link */
  guest_responded_at: Timestamp | null
  /** the language of this guest's registration */
  locale: string | null
  updates_unsubscribed_at: Timestamp | null
  /** SEQUENCE of the calendar entry last mailed to the guest */
  calendar_sequence: Generated<number>
  /** a digest of the event as the guest's last mail showed it (a change of it mails the guest) */
  calendar_digest: string | null
  /** public registrations made for this attendee (the limit per e-mail counts them) */
  registrations: Generated<number>
  /** the guest's answers by question id (migration 0037), as validated against form version `answers_form_id` */
  answers: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
  answers_form_id: number | null
  answers_updated_at: Timestamp | null
}

/** A version of a registration form (migration 0037, attendees.forms.ts). */
export interface RegistrationFormsTable {
  tenant_id: string
  id: Generated<number>
  event_id: number | null
  series_id: number | null
  version: number
  questions: ColumnType<unknown, string, string>
  created_by: string
  created_at: Generated<Date>
}

export type AttendeeRow = Selectable<AttendeesTable>

/** A guest's link (migration 0035, attendees.guest-tokens.repository.ts): only the SHA-256 of the token is stored. */
export interface GuestTokensTable {
  tenant_id: string
  id: Generated<number>
  attendee_id: number
  purpose: 'manage' | 'confirm'
  token_hash: string
  created_at: Generated<Date>
  expires_at: Timestamp
  revoked_at: Timestamp | null
  last_used_at: Timestamp | null
}

/** A tenant's guest settings (migration 0035): the language of its guests' texts when a guest's own is unknown. */
export interface GuestSettingsTable {
  tenant_id: string
  default_locale: string | null
  updated_at: Generated<Date>
}

export interface AttendeesTables {
  attendees: AttendeesTable
  guest_tokens: GuestTokensTable
  guest_settings: GuestSettingsTable
  registration_forms: RegistrationFormsTable
}

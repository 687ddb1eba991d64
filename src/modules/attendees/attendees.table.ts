import type { Generated, Selectable } from 'kysely'
import type { AttendeeStatus } from '../../platform/db/columns.ts'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export { ATTENDEE_STATUSES, type AttendeeStatus } from '../../platform/db/columns.ts'

/** Statuses that hold a seat of the event's capacity. */
export const SEATED_STATUSES = ['confirmed', 'checked_in'] as const satisfies readonly AttendeeStatus[]
export const CHECK_IN_METHODS = ['manual', 'scan', 'api'] as const
export type CheckInMethod = typeof CHECK_IN_METHODS[number]

/** Attendees of one occurrence (event_id) or of every occurrence of a series (series_id). */
export interface AttendeesTable {
  tenant_id: string
  id: Generated<number>
  event_id: number | null
  series_id: number | null
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
}

export type AttendeeRow = Selectable<AttendeesTable>

export interface AttendeesTables {
  attendees: AttendeesTable
}

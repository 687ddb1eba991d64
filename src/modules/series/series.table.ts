import type { ColumnType, Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'
import type { EventContentColumns } from '../../platform/db/columns.ts'
import type { EndsOn, Freq } from './series.recurrence.ts'

export type SeriesStatus = 'draft' | 'published' | 'archived'
export type SeriesManagerStatus = 'pending' | 'active' | 'revoked'

/** A series: the content of its occurrences (EventContentColumns), their dates and their rule. */
export interface EventSeriesTable extends EventContentColumns {
  start_dt: Timestamp
  end_dt: Timestamp
  timezone: string
  status: Generated<SeriesStatus>
  cover_image_key: string | null
  freq: Freq
  interval: number
  repeat_days: number[] | null
  ends_on: EndsOn
  end_count: number | null
  end_date: Timestamp | null
  duration: string
  exdates: ColumnType<Date[], Date[] | undefined, Date[]>
  /** the RFC 5545 rule when freq is `rrule` (migration 0039): it decides the dates */
  rrule: string | null
  /** dates added to the rule's (RDATE) */
  rdates: ColumnType<Date[], Date[] | undefined, Date[]>
  window_end: Timestamp | null
  // 0041: the UID of an imported series; read by calendar-import's and the feeds' SQL only
  ical_uid: ColumnType<never, string | null | undefined, string | null>
  published_id: number | null
  published_at: Timestamp | null
  is_deleted: Generated<boolean>
  series_manager_id: string | null
  series_manager_status: SeriesManagerStatus | null
  series_manager_invited_by: string | null
  series_manager_invited_email: string | null
  series_manager_invited_at: Timestamp | null
  series_manager_accepted_at: Timestamp | null
  series_manager_expires_at: Timestamp | null
  /** registration settings its occurrences follow unless they set their own (migration 0022) */
  capacity: number | null
  waitlist_enabled: Generated<boolean>
  requires_approval: Generated<boolean>
  /** public registration its occurrences follow (migration 0035, docs/guests.md) */
  public_registration: Generated<boolean>
  registration_opens_at: Date | null
  registration_closes_at: Date | null
  registration_limit_per_email: Generated<number>
  double_opt_in: Generated<boolean>
  version: Generated<number>
  revision: Generated<number>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

/** Not tenant-owned: the rolling windows the background job extends. */
export interface SeriesWindowsTable {
  tenant_id: string
  series_id: number
  window_end: Timestamp
}

/** A series as its rules read it; the public registration settings are read by the registration's own statements. */
export type SeriesRow = Omit<Selectable<EventSeriesTable>,
'public_registration' | 'registration_opens_at' | 'registration_closes_at' | 'registration_limit_per_email' |
'double_opt_in'>

export interface SeriesTables {
  event_series: EventSeriesTable
  series_windows: SeriesWindowsTable
}

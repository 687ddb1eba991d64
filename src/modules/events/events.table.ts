import type { ColumnType, Generated, Selectable } from 'kysely'
import type { EventContentColumns, JsonWithDefault } from '../../platform/db/columns.ts'
import type { Json, Timestamp } from '../../platform/db/platform.table.ts'

export { MANAGER_GRANT_COLUMNS } from '../../platform/db/columns.ts'
export type {
  EventContentColumns, JsonWithDefault, ManagerGrantColumns, ManagerStatus
} from '../../platform/db/columns.ts'

export type EventStatus = 'draft' | 'published' | 'archived'
export type EventVisibility = 10 | 20 | 30 | 40

export interface EventsTable extends EventContentColumns {
  start_dt: Timestamp | null
  end_dt: Timestamp | null
  timezone: Generated<string>
  status: Generated<EventStatus>
  state: string | null
  priority: Generated<number>
  series_id: number | null
  series_index: number | null
  title_override: string | null
  description_override: string | null
  metadata_override: Json | null
  parent_event_id: number | null
  published_id: number | null
  published_at: Timestamp | null
  created_dt: Timestamp
  is_locked: Generated<boolean>
  is_deleted: Generated<boolean>
  cover_image_key: string | null
  // 0041: the UID of an imported event; read by calendar-import's and the feeds' SQL only
  ical_uid: ColumnType<never, string | null | undefined, string | null>
  /** registration settings (migration 0022); an occurrence follows its series' while registration_inherited */
  capacity: number | null
  waitlist_enabled: Generated<boolean>
  requires_approval: Generated<boolean>
  registration_inherited: Generated<boolean>
  /** public registration (migration 0035, docs/guests.md); followed from the series like the settings above */
  public_registration: Generated<boolean>
  registration_opens_at: Timestamp | null
  registration_closes_at: Timestamp | null
  registration_limit_per_email: Generated<number>
  double_opt_in: Generated<boolean>
  cancelled_at: Timestamp | null
  cancelled_by: string | null
  cancellation_reason: string | null
  /**
   * set by `POST …/unpublish` (migration 0040): while the event is a draft again, the calendar feeds that showed it
   * keep it as cancelled; read by the feeds only, never shown with the event
   */
  cancel_in_feeds: Generated<boolean>
  version: Generated<number>
  revision: Generated<number>
  created_at: Timestamp
  updated_at: Timestamp
  search_text: Generated<string>
}

export interface EventActivityTable {
  tenant_id: string
  id: Generated<number>
  event_id: number
  org_id: string | null
  actor_id: string | null
  kind: string
  payload: JsonWithDefault
  at: Timestamp
}

export interface EventSpacesTable {
  tenant_id: string
  id: Generated<number>
  event_id: number
  space_id: number
  org_id: string | null
  created_at: Timestamp
  updated_at: Timestamp
  /** a copy of the event's, kept by a trigger (migrations/0019_event_list_counts.sql; not on Citus) */
  event_visibility: ColumnType<number | null, never, never>
  event_status: ColumnType<string | null, never, never>
  event_start_dt: ColumnType<Date | null, never, never>
  event_listed: ColumnType<boolean, never, never>
}

/** Delta rows of listed events per bucket, kept by triggers (migrations/0019_event_list_counts.sql). */
export interface EventListCountsTable {
  tenant_id: string
  id: Generated<number>
  status: string
  visibility: number
  org_id: string
  /** UTC month of start_dt; -infinity without a start */
  month: string
  n: number
}

/** The public registration settings (migration 0035): read where guests register, never with every event read. */
export const GUEST_REGISTRATION_COLUMNS = [
  'public_registration', 'registration_opens_at', 'registration_closes_at', 'registration_limit_per_email',
  'double_opt_in'
] as const
type GuestRegistrationColumn = typeof GUEST_REGISTRATION_COLUMNS[number]

/**
 * An event as the service reads it: every column but `search_text` (an index input, never shown), the public
 * registration settings (read by the registration's own statements) and `cancel_in_feeds` (the feeds').
 */
export type EventRow = Omit<Selectable<EventsTable>, 'search_text' | GuestRegistrationColumn | 'cancel_in_feeds'>

/** The columns of `EventRow`, for selects (`search_text` would be read and parsed for nothing). */
export const EVENT_COLUMNS = [
  'tenant_id', 'id', 'org_id', 'creator_id', 'title', 'description', 'address', 'latitude', 'longitude', 'start_dt',
  'end_dt', 'timezone', 'keywords', 'metadata', 'visibility', 'status', 'template', 'template_version', 'state',
  'priority', 'series_id', 'series_index', 'title_override', 'description_override', 'metadata_override',
  'parent_event_id', 'published_id', 'published_at', 'created_dt', 'is_locked', 'is_deleted', 'cover_image_key',
  'capacity', 'waitlist_enabled', 'requires_approval', 'registration_inherited', 'cancelled_at', 'cancelled_by',
  'cancellation_reason', 'version', 'revision', 'created_at', 'updated_at'
] as const satisfies ReadonlyArray<keyof EventRow>
export type EventActivityRow = Selectable<EventActivityTable>
export type EventSpaceRow = Selectable<EventSpacesTable>

export interface EventsTables {
  events: EventsTable
  event_activity: EventActivityTable
  event_spaces: EventSpacesTable
  event_list_counts: EventListCountsTable
}

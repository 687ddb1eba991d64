/**
 * Column types that tables of several modules share: a table file reaches another module only through its index,
 * whose code would bring the whole module (and a cycle through database.ts, which assembles the tables) into the
 * table types. What several tables are made of lives here instead; each module's table file re-exports what it uses.
 */
import type { ColumnType, Generated } from 'kysely'
import type { Timestamp } from './platform.table.ts'

type JsonObject = Record<string, unknown>
/** A jsonb column with a default: read as an object, written as an object or JSON text. */
export type JsonWithDefault = ColumnType<JsonObject, JsonObject | string | undefined, JsonObject | string>

/**
 * Who owns an event and what it says: the columns a series holds too, for its occurrences (series.table.ts). Each
 * table adds its dates, its state and its own columns.
 */
export interface EventContentColumns {
  tenant_id: string
  id: Generated<number>
  org_id: string | null
  creator_id: string
  title: string
  description: string | null
  address: string | null
  latitude: number | null
  longitude: number | null
  keywords: Generated<string[]>
  metadata: JsonWithDefault
  visibility: Generated<number>
  template: Generated<string>
  template_version: Generated<number>
}

export type ManagerStatus = 'pending' | 'active' | 'revoked'

/**
 * A manager's grant and its invite, as the manager tables hold them: event managers (of events and series) and
 * space managers (spaces.table.ts). Each table adds what the grant is on.
 */
export interface ManagerGrantColumns {
  tenant_id: string
  id: Generated<number>
  org_id: string | null
  user_id: string | null
  permissions: Generated<string[]>
  role: string | null
  status: Generated<ManagerStatus>
  invited_email: string | null
  invited_by: string | null
  invited_at: Timestamp | null
  invite_token_hash: string | null
  expires_at: Timestamp | null
  accepted_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

/** The grant's columns as the API shows them (not the invite token's hash), in the order of a manager's ETag. */
export const MANAGER_GRANT_COLUMNS = [
  'org_id', 'user_id', 'permissions', 'role', 'status', 'invited_email', 'invited_by', 'invited_at', 'expires_at',
  'accepted_at', 'created_at', 'updated_at'
] as const satisfies ReadonlyArray<keyof ManagerGrantColumns>

/**
 * The statuses of an attendee row (attendees.table.ts), which a series' report also counts one by one
 * (series.repository.ts).
 */
export const ATTENDEE_STATUSES = [
  'invited', 'confirmed', 'declined', 'tentative', 'checked_in', 'pending', 'waitlisted', 'no_show',
  'awaiting_confirmation'
] as const
export type AttendeeStatus = typeof ATTENDEE_STATUSES[number]

import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export type UserState = 'active' | 'inactive' | 'removed'

export interface UsersTable {
  tenant_id: string
  id: string
  email: string | null
  display_name: string | null
  first_name: string | null
  last_name: string | null
  username: string | null
  avatar_url: string | null
  state: Generated<UserState>
  /** sequence of the last provider event applied to this user */
  idp_sequence: number | null
  created_at: Timestamp
  updated_at: Timestamp
  removed_at: Timestamp | null
}

export type UserRow = Selectable<UsersTable>

export type DeliveryOutcome = 'applied' | 'stale' | 'ignored'

export interface IdpDeliveriesTable {
  tenant_id: string
  instance_id: string
  aggregate_id: string
  sequence: number
  event_type: string
  outcome: DeliveryOutcome
  received_at: Timestamp
}

/** The organization and roles a user's token last carried (migration 0033; recorded by the user gate). */
export interface UserClaimsTable {
  tenant_id: string
  user_id: string
  org_id: string | null
  roles: string[]
  seen_at: Generated<Date>
  /** the issue time (else the expiry) of the token whose claims these are */
  token_time: Date | null
  /** the token's `email` when it carried `email_verified: true` (migration 0042): the personal feed's attendee */
  verified_email: string | null
}

export interface IdentityTables {
  users: UsersTable
  idp_deliveries: IdpDeliveriesTable
  user_claims: UserClaimsTable
}

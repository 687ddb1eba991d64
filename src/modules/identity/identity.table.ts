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
  created_at: Timestamp
  updated_at: Timestamp
  removed_at: Timestamp | null
}

export type UserRow = Selectable<UsersTable>

export interface IdentityTables {
  users: UsersTable
}

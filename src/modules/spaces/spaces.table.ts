import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export interface SpacesTable {
  tenant_id: string
  id: Generated<number>
  org_id: string | null
  creator_id: string
  title: string
  description: Generated<string>
  timezone: Generated<string>
  visibility: Generated<number>
  status: Generated<'draft' | 'published' | 'archived'>
  position: Generated<number>
  published_at: Timestamp | null
  version: Generated<number>
  revision: Generated<number>
  is_deleted: Generated<boolean>
  created_at: Timestamp
  updated_at: Timestamp
}

export type SpaceRole = 'space_owner' | 'space_admin' | 'space_member' | 'space_viewer'

export interface SpaceMembersTable {
  tenant_id: string
  space_id: number
  user_id: string
  role: Generated<SpaceRole>
  is_active: Generated<boolean>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface SpaceManagersTable {
  tenant_id: string
  id: Generated<number>
  space_id: number
  org_id: string | null
  user_id: string | null
  permissions: Generated<string[]>
  role: string | null
  status: Generated<'pending' | 'active' | 'revoked'>
  invited_email: string | null
  invited_by: string | null
  invited_at: Timestamp | null
  invite_token_hash: string | null
  expires_at: Timestamp | null
  accepted_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

export type SpaceRow = Selectable<SpacesTable>

export interface SpacesTables {
  spaces: SpacesTable
  space_members: SpaceMembersTable
  space_managers: SpaceManagersTable
}

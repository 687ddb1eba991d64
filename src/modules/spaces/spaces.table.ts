import type { Generated, Selectable } from 'kysely'
import type { Json, Timestamp } from '../../platform/db/platform.table.ts'
import type { ManagerGrantColumns } from '../../platform/db/columns.ts'

/** The fields a draft of a published space may change (pending until publish). */
export interface SpaceDraft {
  title?: string
  description?: string
  timezone?: string
  visibility?: number
  position?: number
}

export interface SpacesTable {
  tenant_id: string
  id: Generated<number>
  org_id: string | null
  creator_id: string
  title: string
  description: Generated<string>
  timezone: Generated<string>
  visibility: Generated<number>
  /** unpublished with `cancel_in_feeds` (migration 0040): its anonymous feed shows its events cancelled */
  cancel_in_feeds: Generated<boolean>
  status: Generated<'draft' | 'published' | 'archived'>
  position: Generated<number>
  published_at: Timestamp | null
  version: Generated<number>
  revision: Generated<number>
  is_deleted: Generated<boolean>
  draft: Json<SpaceDraft> | null
  public_handle: string | null
  /** the origins that may frame the public pages of the space's events (migration 0036, docs/guests.md) */
  embed_origins: Generated<string[]>
  created_at: Timestamp
  updated_at: Timestamp
}

export type SpaceRole = 'space_owner' | 'space_admin' | 'space_member' | 'space_viewer'

export interface SpaceParentsTable {
  tenant_id: string
  space_id: number
  parent_id: number
  created_at: Timestamp
}

export interface SpaceMembersTable {
  tenant_id: string
  space_id: number
  user_id: string
  role: Generated<SpaceRole>
  is_active: Generated<boolean>
  removed_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface SpaceManagersTable extends ManagerGrantColumns {
  space_id: number
}

export interface SpaceContactsTable {
  tenant_id: string
  id: Generated<number>
  space_id: number
  contact_id: string
  created_by: string
  created_at: Timestamp
  updated_at: Timestamp
}

export type SpaceActivityType = 'contact' | 'event' | 'member' | 'announcement' | 'material'

export interface SpaceActivityTable {
  tenant_id: string
  id: Generated<number>
  space_id: number
  type: SpaceActivityType
  resource_id: string
  title: string
  message: string
  actor_id: string | null
  created_at: Timestamp
}

/** Not tenant-owned: the directory of public space pages (migration 0004, docs/spaces.md). */
export interface PublicSpacesTable {
  handle: string
  space_id: number
  tenant_id: string
}

export type SpaceRow = Selectable<SpacesTable>

export interface SpacesTables {
  spaces: SpacesTable
  space_parents: SpaceParentsTable
  space_members: SpaceMembersTable
  space_managers: SpaceManagersTable
  space_contacts: SpaceContactsTable
  space_activity: SpaceActivityTable
  public_spaces: PublicSpacesTable
}

/**
 * The tables of the SCIM module (migrations/0045_scim.sql): what SCIM keeps beside a user's profile (externalId), and
 * the directory's groups with their role and members.
 */
import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export type ScimRole = 'admin' | 'member' | 'viewer'

export interface ScimUsersTable {
  tenant_id: string
  user_id: string
  external_id: string | null
  created_at: Generated<Date>
  updated_at: Timestamp
}

export interface ScimGroupsTable {
  tenant_id: string
  id: Generated<number>
  display_name: string
  external_id: string | null
  /** the tenant role the members hold; null: none, unless display_name names a role */
  role: ScimRole | null
  revision: Generated<number>
  created_at: Generated<Date>
  updated_at: Timestamp
}

export type ScimGroupRow = Selectable<ScimGroupsTable>

export interface ScimGroupMembersTable {
  tenant_id: string
  group_id: number
  user_id: string
  created_at: Generated<Date>
}

export interface ScimTables {
  scim_users: ScimUsersTable
  scim_groups: ScimGroupsTable
  scim_group_members: ScimGroupMembersTable
}

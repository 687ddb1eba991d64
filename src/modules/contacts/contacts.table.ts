import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export interface ContactsTable {
  tenant_id: string
  id: Generated<string>
  org_id: string | null
  owner_id: string
  is_favorite: Generated<boolean>
  first_name: string | null
  middle_name: string | null
  last_name: string | null
  nickname: string | null
  email: string | null
  phone_primary: string | null
  phone_secondary: string | null
  phone_work: string | null
  company: string | null
  job_title: string | null
  address_line1: string | null
  address_line2: string | null
  city: string | null
  state_province: string | null
  postal_code: string | null
  country: string | null
  website: string | null
  avatar_url: string | null
  notes: string | null
  linked_user_id: string | null
  tags: Generated<string[]>
  revision: Generated<number>
  created_at: Timestamp
  updated_at: Timestamp
  search_text: Generated<string>
}

export type ContactRow = Selectable<ContactsTable>

export interface ContactsTables {
  contacts: ContactsTable
}

import type { Generated, GeneratedAlways, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

/** The phone fields of a contact (contacts.phones.ts): each has its E.164 form and its reversed digits beside it. */
export const PHONE_FIELDS = ['phone_primary', 'phone_secondary', 'phone_work'] as const
export type PhoneField = typeof PHONE_FIELDS[number]

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
  /** E.164 form of each phone field, written by the service (contacts.phones.ts); null when empty or invalid */
  phone_primary_e164: string | null
  phone_secondary_e164: string | null
  phone_work_e164: string | null
  /** the phone fields whose text is not a valid number; null: not read yet (written before migration 0028) */
  invalid_phones: PhoneField[] | null
  /** the digits of the E.164 form, else of the text, reversed: the phone search's keys (migration 0028) */
  phone_primary_rev: GeneratedAlways<string | null>
  phone_secondary_rev: GeneratedAlways<string | null>
  phone_work_rev: GeneratedAlways<string | null>
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
  /** the language the contact reads guest texts in (migration 0035; en, de, fr, es), null: the tenant's */
  locale: string | null
  revision: Generated<number>
  created_at: Timestamp
  updated_at: Timestamp
  search_text: Generated<string>
}

export type ContactRow = Selectable<ContactsTable>

/** The columns a write of a contact sets (the service's, from a validated body: contacts.values.ts). */
export type ContactValues = Partial<
  Omit<
    ContactsTable,
    | 'tenant_id'
    | 'id'
    | 'org_id'
    | 'owner_id'
    | 'revision'
    | 'created_at'
    | 'updated_at'
    | 'search_text'
    | `${PhoneField}_rev`
    | 'tags'
    | 'is_favorite'
  >
> & {
  tags?: string[]
  is_favorite?: boolean
}

export interface ContactsTables {
  contacts: ContactsTable
}

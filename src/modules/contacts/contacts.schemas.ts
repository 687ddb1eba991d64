import { Type, type Static, type TNull, type TOptional, type TSchema, type TUnion } from '@sinclair/typebox'
import { CursorParam, NextCursorField } from '../../platform/http/cursor.ts'
import {
  body, model, Nullable, KeysetPageQuery, pagedBody, searchAndSort, StringEnum, Timestamp, UuidString
} from '../../platform/http/schema.ts'

/** Bounds of the spec (part 2.1); notes, linked_user_id and tags are bounded by us (docs/contacts.md). */
const text = (maxLength: number, description: string) => Type.String({ maxLength, description })
const httpUrl = (maxLength: number, description: string) =>
  Type.String({ maxLength, format: 'uri', pattern: '^https?://', description })

export const NOTES_MAX = 10_000
export const TAGS_MAX = 50
export const TAG_MAX = 100

/** The writable fields of a contact with their bounds, shared by create, update and upsert. */
const writable = {
  is_favorite: Type.Boolean({ description: 'Favorite flag' }),
  first_name: text(255, 'First name'),
  middle_name: text(255, 'Middle name'),
  last_name: text(255, 'Last name'),
  nickname: text(255, 'Nickname'),
  email: Type.String({ maxLength: 255, format: 'email', description: 'E-mail address' }),
  phone_primary: text(50, 'Primary phone'),
  phone_secondary: text(50, 'Secondary phone'),
  phone_work: text(50, 'Work phone'),
  company: text(255, 'Company'),
  job_title: text(255, 'Job title'),
  address_line1: text(255, 'Address line 1'),
  address_line2: text(255, 'Address line 2'),
  city: text(100, 'City'),
  state_province: text(100, 'State or province'),
  postal_code: text(20, 'Postal code'),
  country: text(100, 'Country'),
  website: httpUrl(255, 'Website (http or https URL)'),
  avatar_url: httpUrl(500, 'Avatar image (http or https URL)'),
  notes: text(NOTES_MAX, 'Free text'),
  linked_user_id: text(255, 'Id of a linked system user'),
  tags: Type.Array(Type.String({ minLength: 1, maxLength: TAG_MAX }), { maxItems: TAGS_MAX, description: 'Tags' })
}
type Writable = typeof writable
export type WritableField = keyof Writable
export const WRITABLE_FIELDS = Object.keys(writable) as WritableField[]

/** Every writable field optional and nullable (null clears it), as the upstream accepts. */
function optionalNullable<T extends Record<string, TSchema>> (props: T) {
  const out: Record<string, TSchema> = {}
  for (const [k, v] of Object.entries(props)) out[k] = Type.Optional(k === 'is_favorite' ? v : Nullable(v))
  return out as { [K in keyof T]: TOptional<TUnion<[T[K], TNull]>> }
}

export const Contact = model('Contact', {
  id: Type.String({ format: 'uuid', description: 'Contact id' }),
  org_id: Nullable(Type.String({ description: 'Organization id; null means a personal contact' })),
  owner_id: Type.String({ description: 'Owner user id' }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  is_favorite: writable.is_favorite,
  first_name: Nullable(writable.first_name),
  middle_name: Nullable(writable.middle_name),
  last_name: Nullable(writable.last_name),
  nickname: Nullable(writable.nickname),
  email: Nullable(Type.String({ description: 'E-mail address' })),
  phone_primary: Nullable(writable.phone_primary),
  phone_secondary: Nullable(writable.phone_secondary),
  phone_work: Nullable(writable.phone_work),
  company: Nullable(writable.company),
  job_title: Nullable(writable.job_title),
  address_line1: Nullable(writable.address_line1),
  address_line2: Nullable(writable.address_line2),
  city: Nullable(writable.city),
  state_province: Nullable(writable.state_province),
  postal_code: Nullable(writable.postal_code),
  country: Nullable(writable.country),
  website: Nullable(Type.String({ description: 'Website' })),
  avatar_url: Nullable(Type.String({ description: 'Avatar URL' })),
  notes: Nullable(writable.notes),
  linked_user_id: Nullable(writable.linked_user_id),
  tags: Type.Array(Type.String(), { description: 'Tags' })
})
export type Contact = Static<typeof Contact>

export const CreateContactBody = body(optionalNullable(writable))
export type ContactInput = Static<typeof CreateContactBody>

/** PUT replaces every writable field; like the upstream, is_favorite is required. */
export const ReplaceContactBody = body({ ...optionalNullable(writable), is_favorite: writable.is_favorite })

/** PATCH is a JSON merge-patch (RFC 7396): omitted fields are kept, null clears. */
export const PatchContactBody = body(optionalNullable(writable))

export const FavoriteBody = body({ is_favorite: writable.is_favorite })

export const CONTACT_SORT_FIELDS = ['created_at', 'updated_at', 'first_name', 'last_name', 'email', 'company'] as const

export const ListContactsQuery = Type.Intersect([
  KeysetPageQuery,
  Type.Object({
    ...searchAndSort('name, e-mail and company', CONTACT_SORT_FIELDS),
    is_favorite: Type.Optional(
      StringEnum(['true', 'false', ''] as const, { description: 'Favorite filter; empty = no filter' })
    )
  })
])
export type ListContactsQuery = Static<typeof ListContactsQuery>

export const PagedBodyContact = pagedBody(Contact, 'PagedBodyContact')

export const SearchContactsQuery = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 200, description: 'Search text' }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Maximum number of results' }),
  cursor: CursorParam
})

export const SearchOutputBody = model('SearchOutputBody', {
  items: Type.Array(Contact),
  query: Type.String({ description: 'The query used' }),
  total: Type.Integer({ description: 'Total matching contacts' }),
  next_cursor: NextCursorField
})

export const UPSERT_MAX = 500

export const UpsertContactsBody = body({
  contacts: Type.Array(body({ ...optionalNullable(writable), email: writable.email }), {
    minItems: 1,
    maxItems: UPSERT_MAX,
    description: 'Contacts matched by e-mail (case-insensitive) within the caller\'s scope'
  })
})
export type UpsertContactsBody = Static<typeof UpsertContactsBody>

export const UpsertItemError = Type.Object(
  {
    status: Type.Integer({
      description: "The status a single write of this contact would answer (403: not the caller's to change)"
    }),
    detail: Type.String({ description: 'Why the item was skipped' })
  },
  { description: 'Present only on a skipped item' }
)

export const UpsertResultItem = Type.Object({
  action: StringEnum(['created', 'updated', 'skipped'] as const, {
    description:
      'What happened to this contact; skipped = the e-mail matched a contact the caller may not change (nothing written)'
  }),
  contact: Contact,
  error: Type.Optional(UpsertItemError)
})

export const UpsertOutputBody = model('UpsertOutputBody', {
  items: Type.Array(UpsertResultItem, { description: 'One entry per input contact, in input order' }),
  created: Type.Integer(),
  updated: Type.Integer(),
  skipped: Type.Integer({
    description: "Items left unchanged because the matched contact is not the caller's to change"
  })
})

export const ContactParams = Type.Object({ id: UuidString })

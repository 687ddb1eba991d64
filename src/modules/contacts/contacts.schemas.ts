import { Type, type Static, type TNull, type TOptional, type TSchema, type TUnion } from '@sinclair/typebox'
import { CursorParam, NextCursorField } from '../../platform/http/cursor.ts'
import { DeletedField, SyncParam, SyncStartParam, SyncTokenField } from '../../platform/sync/sync.ts'
import {
  body, model, Nullable, KeysetPageQuery, pagedBody, QueryFlag, searchAndSort, StringEnum, Timestamp, UuidString
} from '../../platform/http/schema.ts'
import { PHONE_DIGITS_MIN, PHONE_FIELDS } from './contacts.phones.ts'

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
  email: Type.String({
    maxLength: 255,
    format: 'email',
    description: 'E-mail address; spaces around it are dropped (it is stored trimmed and matched case-insensitively)'
  }),
  phone_primary: text(50, 'Primary phone, as typed (its E.164 form is stored beside it)'),
  phone_secondary: text(50, 'Secondary phone, as typed (its E.164 form is stored beside it)'),
  phone_work: text(50, 'Work phone, as typed (its E.164 form is stored beside it)'),
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

/** The ids of possible duplicates a create answers, at most. */
export const POSSIBLE_DUPLICATES_MAX = 50

/** The E.164 form of a phone field in a Contact. */
const e164 = (field: string) => Type.Optional(Nullable(Type.String({
  description: `The E.164 form of ${field} (e.g. +33628230455); null when it is empty or not a valid number`
})))

/**
 * `phone_region`: the region of phone numbers typed without their country code, for the numbers a request writes or
 * searches; checked against the regions libphonenumber-js knows (a 400 naming `query.phone_region` otherwise).
 */
const PhoneRegionParam = Type.Optional(Type.String({
  pattern: '^[A-Za-z]{2}$',
  description:
    'ISO 3166-1 alpha-2 region (e.g. FR) of phone numbers given without a country code, such as 06 28 23 04 55; ' +
    'default: the deployment\'s PHONE_DEFAULT_REGION'
}))
export const PhoneRegionQuery = Type.Object({ phone_region: PhoneRegionParam })

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
  tags: Type.Array(Type.String(), { description: 'Tags' }),
  phone_primary_e164: e164('phone_primary'),
  phone_secondary_e164: e164('phone_secondary'),
  phone_work_e164: e164('phone_work'),
  invalid_phones: Type.Optional(Nullable(Type.Array(StringEnum(PHONE_FIELDS), {
    maxItems: PHONE_FIELDS.length,
    description:
      'Phone fields whose text is not a valid number: stored as typed, not refused (empty: none). Null: not read ' +
      'yet: the contact was last written before phone numbers were read (its next write of fields reads them)'
  }))),
  possible_duplicates: Type.Optional(Type.Array(Type.String({ format: 'uuid' }), {
    maxItems: POSSIBLE_DUPLICATES_MAX,
    description:
      'Only in the answer of create (empty when none): other contacts the caller can see with the same e-mail ' +
      `(case-insensitive, trimmed) or the same phone number (its digits, at least ${PHONE_DIGITS_MIN}), oldest ` +
      `first, at most ${POSSIBLE_DUPLICATES_MAX}. The contact is created all the same`
  }))
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
    ...searchAndSort(
      `name, e-mail and company; a search that looks like a phone number (${PHONE_DIGITS_MIN} digits or more) also ` +
        'matches phone numbers, in any spelling, or by their last digits',
      CONTACT_SORT_FIELDS
    ),
    is_favorite: Type.Optional(QueryFlag('Only the favorites, or only the others; absent or empty: all')),
    phone_region: PhoneRegionParam,
    sync: SyncStartParam,
    sync_token: SyncParam
  })
])
export type ListContactsQuery = Static<typeof ListContactsQuery>

/** A page of the list; with `sync=true` or `sync_token`, the fields of an incremental sync (docs/integrations.md). */
export const PagedBodyContact = model('PagedBodyContact', {
  ...pagedBody(Contact, 'PagedBodyContact').properties,
  deleted: DeletedField,
  sync_token: SyncTokenField
})

export const SearchContactsQuery = Type.Object({
  query: Type.String({
    minLength: 1,
    maxLength: 200,
    description:
      `Search text; one that looks like a phone number (${PHONE_DIGITS_MIN} digits or more) also matches phone ` +
      'numbers, in any spelling, or by their last digits'
  }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Maximum number of results' }),
  cursor: CursorParam,
  phone_region: PhoneRegionParam
})

export const SearchOutputBody = model('SearchOutputBody', {
  items: Type.Array(Contact),
  query: Type.String({ description: 'The query used' }),
  total: Type.Integer({ description: 'Total matching contacts' }),
  next_cursor: NextCursorField
})

export const UPSERT_MAX = 500

/** One contact of an upsert (and one data row of a CSV import): `email` required, the rest as in create. */
export const UpsertContactItem = body({ ...optionalNullable(writable), email: writable.email })
export type UpsertContactItem = Static<typeof UpsertContactItem>

export const UpsertContactsBody = body({
  contacts: Type.Array(UpsertContactItem, {
    minItems: 1,
    maxItems: UPSERT_MAX,
    description:
      'Contacts matched by e-mail (case-insensitive, trimmed) within the caller\'s scope; an e-mail given again ' +
      'applies to the contact its first item matched or created'
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
  action: StringEnum(['created', 'updated', 'unchanged', 'skipped'] as const, {
    description:
      'What happened to this contact; unchanged = it already held the item\'s values (nothing written); ' +
      'skipped = the e-mail matched a contact the caller may not change (nothing written)'
  }),
  contact: Contact,
  error: Type.Optional(UpsertItemError)
})

export const UpsertOutputBody = model('UpsertOutputBody', {
  items: Type.Array(UpsertResultItem, { description: 'One entry per input contact, in input order' }),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer({ description: 'Items whose contact already held their values: not written' }),
  skipped: Type.Integer({
    description: "Items left unchanged because the matched contact is not the caller's to change"
  })
})

export const ContactParams = Type.Object({ id: UuidString })

/** Bounds of the CSV import (docs/contacts.md, "CSV import"). */
export const IMPORT_MAX_BYTES = 16 * 1024 * 1024
export const IMPORT_MAX_ROWS = 50_000
export const IMPORT_MAX_LINE_BYTES = 64 * 1024
export const IMPORT_MAX_ERRORS = 1_000

export const ImportContactsBody = Type.String({
  description:
    'RFC 4180 CSV in UTF-8 (a leading BOM is ignored), at most 16 MiB, 50 000 data rows and 64 KiB per line. ' +
    'The first record names the columns: contact fields (case-insensitive) or headers renamed by `mapping`. ' +
    'Tags are separated by `;` within their cell; an empty cell leaves its field as it is.',
  examples: [
    'email,first_name,last_name,company,tags\r\n' +
    'ada@example.org,Ada,Lovelace,Analytical Engines,math;history\r\n' +
    'grace@example.org,Grace,Hopper,,navy\r\n'
  ]
})

const yesNo = (description: string) => Type.Optional(QueryFlag(description, { default: false }))

export const ImportContactsQuery = Type.Object({
  delimiter: Type.Optional(StringEnum([',', ';', '\t', 'tab'] as const, {
    description: 'Field delimiter: `,` (default), `;`, or a tab (`%09` or `tab`)',
    default: ','
  })),
  mapping: Type.Optional(Type.String({
    maxLength: 4_000,
    description:
      'Comma-separated `Header Name=field` pairs naming the contact field of a column whose header is not the ' +
      "field's name, e.g. `E-mail Address=email,Given=first_name` (header names compared case-insensitively)"
  })),
  ignore_unknown: yesNo('`true`: columns that name no contact field are ignored (otherwise 400)'),
  dry_run: yesNo('`true`: answers what the import would do, and writes nothing'),
  phone_region: PhoneRegionParam
})
export type ImportContactsQuery = Static<typeof ImportContactsQuery>

export const ImportResultItem = Type.Object({
  line: Type.Integer({ description: 'The line of the file where the row starts (line 1 is the header)' }),
  status: StringEnum(['created', 'updated', 'unchanged'] as const, {
    description:
      'updated = the row changed the contact its e-mail matched, or the one an earlier row of the file created; ' +
      'unchanged = that contact already held the row\'s values (nothing written)'
  }),
  contact_id: Nullable(Type.String({
    format: 'uuid', description: 'The contact; null for a row a dry run would create'
  })),
  invalid_phones: Type.Optional(Type.Array(StringEnum(PHONE_FIELDS), {
    maxItems: PHONE_FIELDS.length,
    description: 'Present when the contact has phone fields whose text is not a valid number (stored as typed)'
  }))
})

export const ImportOutputBody = model('ImportOutputBody', {
  created: Type.Integer({ description: 'Rows that created a contact (a dry run: would create)' }),
  updated: Type.Integer({ description: 'Rows that changed the contact their e-mail matched' }),
  unchanged: Type.Integer({ description: 'Rows whose matched contact already held their values' }),
  results: Type.Array(ImportResultItem, { description: 'One entry per data row, in file order' })
})
export type ImportOutputBody = Static<typeof ImportOutputBody>

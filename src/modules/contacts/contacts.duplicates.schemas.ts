/** Wire schemas of `GET /api/v1/contacts/duplicates` (docs/contacts.md, "Duplicates"). */
import { Type, type Static } from '@sinclair/typebox'
import { NextCursorField } from '../../platform/http/cursor.ts'
import { limitAndCursor, model, StringEnum } from '../../platform/http/schema.ts'
import { Contact } from './contacts.schemas.ts'

/** Why contacts are grouped, in the order a key of each sorts among equal keys (the cursor's second column). */
export const DUPLICATE_REASONS = ['email', 'phone', 'name_company'] as const
export type DuplicateReason = typeof DUPLICATE_REASONS[number]

/** Groups of one page: fewer than the contacts list's 100, since each carries up to GROUP_CONTACTS_MAX contacts. */
export const DUPLICATES_LIMIT_MAX = 50
/** The contacts shown of one group, oldest first; `count` tells how many the group has. */
export const GROUP_CONTACTS_MAX = 10

export const DuplicatesQuery = Type.Object({
  reason: Type.Optional(StringEnum(DUPLICATE_REASONS, {
    description: 'Only groups of this reason; absent = all three'
  })),
  ...limitAndCursor(DUPLICATES_LIMIT_MAX, 'Groups', 'a page may hold fewer while next_cursor is not null')
})
export type DuplicatesQuery = Static<typeof DuplicatesQuery>

export const DuplicateGroup = Type.Object({
  reason: StringEnum(DUPLICATE_REASONS, {
    description: 'email: the same e-mail (case and surrounding spaces ignored); phone: the same E.164 number in any ' +
      'of the three phone fields; name_company: the same first and last name and company (case, spaces ignored)'
  }),
  key: Type.String({
    description: 'What the contacts share, normalised: the e-mail lower-cased, the E.164 number, or ' +
      '"<first last> | <company>" lower-cased with runs of spaces made one'
  }),
  count: Type.Integer({ minimum: 2, description: 'How many contacts the caller can see share the key' }),
  contacts: Type.Array(Contact, {
    maxItems: GROUP_CONTACTS_MAX,
    description: `The group's first ${GROUP_CONTACTS_MAX} contacts, oldest first`
  })
})

export const DuplicatesOutputBody = model('DuplicatesOutputBody', {
  items: Type.Array(DuplicateGroup, { description: 'Groups ordered by key, then reason' }),
  next_cursor: NextCursorField
})

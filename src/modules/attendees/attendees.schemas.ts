/**
 * The schemas of the attendees module: attendees, registration, cancellation (docs/event-collaboration.md).
 */
import { Type, type Static } from '@sinclair/typebox'
import {
  body, DateTimeInput, IntId, model, Nullable, KeysetPageQuery, pagedBody, StringEnum, Timestamp, UuidString
} from '../../platform/http/schema.ts'
import { deletedField, SyncParam, SyncStartParam, SyncTokenField } from '../../platform/sync/sync.ts'
import { ATTENDEE_SOURCES, ATTENDEE_STATUSES, CHECK_IN_METHODS } from './attendees.table.ts'

/** Bounds chosen by us (docs/event-collaboration.md). */
export const BULK_MAX = 1000
export const NOTES_MAX = 2000

export const AttendeeParams = Type.Object({ id: IntId, contact_id: UuidString })

// ---- attendees

const AttendeeStatus = StringEnum(ATTENDEE_STATUSES, {
  description:
    'invited, confirmed, declined, tentative, checked_in, pending (awaiting approval), waitlisted (past capacity), ' +
    'no_show, or awaiting_confirmation (registered on the public side, the mailed link not followed yet) ' +
    '(docs/event-collaboration.md, "Attendee states")'
})

export const Attendee = model('Attendee', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer({ description: 'Occurrence attended; null when the row covers a series' })),
  series_id: Nullable(Type.Integer({ description: 'Set when the contact attends every occurrence of a series' })),
  contact_id: Nullable(Type.String({
    format: 'uuid', description: 'null: the anonymous attendance of an erased contact (docs/privacy.md)'
  })),
  org_id: Nullable(Type.String()),
  status: AttendeeStatus,
  notes: Nullable(Type.String()),
  is_checked_in: Type.Boolean(),
  checked_in_at: Nullable(Timestamp()),
  invited_at: Timestamp(),
  responded_at: Nullable(Timestamp('Last status change by PATCH')),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  waitlist_position: Nullable(Type.Integer({
    minimum: 1, description: 'Place on the waitlist (1 = next); null unless waitlisted'
  })),
  approved_at: Nullable(Timestamp('When a manager approved the registration')),
  approved_by: Nullable(Type.String({ description: 'Who approved the registration' })),
  checked_in_by: Nullable(Type.String({ description: 'Who checked the attendee in' })),
  check_in_method: Nullable(StringEnum(CHECK_IN_METHODS, { description: 'manual, scan or api' })),
  checked_out_at: Nullable(Timestamp('When the attendee was checked out (null while inside)')),
  checked_out_by: Nullable(Type.String({ description: 'Who checked the attendee out' })),
  check_in_token_issued_at: Nullable(Timestamp('When the current check-in token was issued')),
  check_in_token_revoked_at: Nullable(Timestamp('When the check-in token was revoked')),
  source: StringEnum(ATTENDEE_SOURCES, {
    description: 'organiser (added by a member) or registration (registered on the public side: docs/guests.md)'
  }),
  invitation_sent_at: Nullable(Timestamp('When an invitation mail with the guest\'s own link was last sent')),
  guest_responded_at: Nullable(Timestamp('When the guest last answered through their own link')),
  locale: Nullable(Type.String({ description: 'The language of the guest\'s registration (en, de, fr, es)' })),
  updates_unsubscribed_at: Nullable(Timestamp('When the guest asked for no more update mails about the event')),
  answers: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown(), {
    description: 'The answers to the registration questions by question id (the list and its sync; docs/guests.md)'
  }))),
  answers_updated_at: Type.Optional(Nullable(Timestamp('When the answers were last given')))
})
/** A page of the list; with `sync=true` or `sync_token`, the fields of an incremental sync (docs/integrations.md). */
export const PagedBodyAttendee = model('PagedBodyAttendee', {
  ...pagedBody(Attendee, 'PagedBodyAttendee').properties,
  deleted: deletedField(Type.Integer()),
  sync_token: SyncTokenField
})

export const ListAttendeesQuery = Type.Intersect([KeysetPageQuery, Type.Object({
  status: Type.Optional(AttendeeStatus),
  sync: SyncStartParam,
  sync_token: SyncParam
})])

export const AddAttendeeBody = body({
  contact_id: UuidString,
  status: Type.Optional(AttendeeStatus),
  notes: Type.Optional(Nullable(Type.String({ maxLength: NOTES_MAX })))
})
export type AddAttendeeBody = Static<typeof AddAttendeeBody>

export const UpdateAttendeeBody = body({
  status: AttendeeStatus,
  notes: Type.Optional(Nullable(Type.String({ maxLength: NOTES_MAX })))
})

const ContactIds = Type.Array(UuidString, {
  minItems: 1,
  maxItems: BULK_MAX,
  description: `Contact ids (1 to ${BULK_MAX}; repeats are ignored)`
})

export const BulkAddBody = body({ contact_ids: ContactIds, status: Type.Optional(AttendeeStatus) })
export const BulkRemoveBody = body({
  contact_ids: ContactIds,
  status: Type.Optional(
    StringEnum(ATTENDEE_STATUSES, { description: 'Only remove attendees currently in this status' })
  )
})
export const BulkStatusBody = body({ contact_ids: ContactIds, status: AttendeeStatus })

// ---- registration (attendees.registration.routes.ts)

export const CAPACITY_MAX = 1_000_000
const Capacity = Type.Integer({
  minimum: 1, maximum: CAPACITY_MAX, description: `Seats, 1 to ${CAPACITY_MAX}; null = unlimited`
})

/** The public registration settings (docs/guests.md), in force (an occurrence: its series' while it follows them). */
export const GUEST_LIMIT_PER_EMAIL_MAX = 20
const guestSettingsFields = {
  public_registration: Type.Boolean({ description: 'Guests may register from the public side (default false)' }),
  registration_opens_at: Nullable(Timestamp('Registrations open (null: at once)')),
  registration_closes_at: Nullable(Timestamp('Registrations close (null: when the event starts)')),
  registration_limit_per_email: Type.Integer({
    description: 'Public registrations one e-mail address may make for the event (each sends a mail)'
  }),
  double_opt_in: Type.Boolean({
    description: 'A public registration counts once the guest follows the link mailed to them (default true)'
  })
}
const guestSettingsInput = {
  public_registration: Type.Optional(Type.Boolean()),
  registration_opens_at: Type.Optional(Nullable(DateTimeInput('Registrations open (RFC 3339; null: at once)'))),
  registration_closes_at: Type.Optional(Nullable(DateTimeInput(
    'Registrations close (RFC 3339; null: when the event starts); after registration_opens_at'
  ))),
  registration_limit_per_email: Type.Optional(Type.Integer({ minimum: 1, maximum: GUEST_LIMIT_PER_EMAIL_MAX })),
  double_opt_in: Type.Optional(Type.Boolean())
}
export const GuestRegistrationSettings = model('GuestRegistrationSettings', guestSettingsFields)
export type GuestRegistrationSettings = Static<typeof GuestRegistrationSettings>

export const EventRegistration = model('EventRegistration', {
  capacity: Nullable(Type.Integer({ description: 'Seats in force; null = unlimited' })),
  waitlist_enabled: Type.Boolean(),
  requires_approval: Type.Boolean(),
  registration_inherited: Type.Boolean({ description: "true while an occurrence follows its series' settings" }),
  confirmed_count: Type.Integer({ description: 'Attendees holding a seat (confirmed, checked in)' }),
  waitlist_count: Type.Integer(),
  pending_count: Type.Integer(),
  no_show_count: Type.Integer(),
  seats_left: Nullable(Type.Integer({ description: 'null = unlimited' })),
  over_capacity: Type.Integer({
    description: 'Seats held beyond capacity (capacity lowered below the confirmed count)'
  }),
  promoted: Type.Integer({ description: 'Waitlisted attendees this change confirmed (0 on GET)' }),
  notice: Nullable(Type.String({ description: 'What the change did not do, e.g. nobody demoted below capacity' })),
  guests: GuestRegistrationSettings
}, {
  examples: [{
    capacity: 40,
    waitlist_enabled: true,
    requires_approval: false,
    registration_inherited: false,
    confirmed_count: 40,
    waitlist_count: 3,
    pending_count: 0,
    no_show_count: 0,
    seats_left: 0,
    over_capacity: 0,
    promoted: 2,
    notice: null,
    guests: {
      public_registration: true,
      registration_opens_at: '2027-05-01T08:00:00.000Z',
      registration_closes_at: null,
      registration_limit_per_email: 3,
      double_opt_in: true
    }
  }]
})
export type EventRegistration = Static<typeof EventRegistration>

export const PatchRegistrationBody = body({
  capacity: Type.Optional(Nullable(Capacity)),
  waitlist_enabled: Type.Optional(Type.Boolean()),
  requires_approval: Type.Optional(Type.Boolean()),
  ...guestSettingsInput,
  inherit: Type.Optional(Type.Literal(true, {
    description: "An occurrence: follow the series' settings again (alone in the body)"
  }))
}, { minProperties: 1, examples: [{ capacity: 40, waitlist_enabled: true }, { inherit: true }] })
export type PatchRegistrationBody = Static<typeof PatchRegistrationBody>

export const PatchSeriesRegistrationBody = body({
  capacity: Type.Optional(Nullable(Capacity)),
  waitlist_enabled: Type.Optional(Type.Boolean()),
  requires_approval: Type.Optional(Type.Boolean()),
  ...guestSettingsInput
}, { minProperties: 1, examples: [{ capacity: 12, requires_approval: true }] })
export type PatchSeriesRegistrationBody = Static<typeof PatchSeriesRegistrationBody>

export const SeriesRegistration = model('SeriesRegistration', {
  series_id: Type.Integer(),
  capacity: Nullable(Type.Integer()),
  waitlist_enabled: Type.Boolean(),
  requires_approval: Type.Boolean(),
  ...guestSettingsFields,
  occurrences_following: Type.Integer({ description: "Live occurrences that follow the series' settings" }),
  promoted: Type.Integer({ description: 'Waitlisted attendees of those occurrences this change confirmed' })
})

export const AttendeeList = model('AttendeeList', { items: Type.Array(Attendee) })
export const BulkDecisionBody = body({ contact_ids: ContactIds }, {
  examples: [{ contact_ids: ['0b9f2c1e-7d4a-4c55-9a7e-3f1c2d4b5a69', '6a1e8f3d-2b7c-4e19-8d5a-9c0b1a2e3f47'] }]
})

export const NoShowsResult = model('NoShowsResult', {
  marked: Type.Integer({ description: 'Confirmed attendees who never checked in, now no_show' })
})

export const CANCEL_SCOPES = ['this', 'future', 'all'] as const
export const CancelEventBody = body({
  reason: Type.String({ minLength: 1, maxLength: 1000, description: 'Why (sent to the attendees)' }),
  scope: Type.Optional(StringEnum(CANCEL_SCOPES, {
    description: 'An occurrence: this one (default), this and the following ones, or every occurrence of the series'
  })),
  notify: Type.Optional(Type.Boolean({ description: 'E-mail every attendee once (default true)' }))
}, { examples: [{ reason: 'The venue is flooded', scope: 'this' }] })
export type CancelEventBody = Static<typeof CancelEventBody>

export const CancelResult = model('CancelResult', {
  cancelled: Type.Array(Type.Integer(), { description: 'Events cancelled by this request' }),
  notified: Type.Integer({ description: 'Attendees (contacts) notified, once each' })
}, { examples: [{ cancelled: [42], notified: 118 }] })

import { Type, type Static } from '@sinclair/typebox'
import {
  body, IntId, model, Nullable, KeysetPageQuery, pagedBody, StringEnum, Timestamp, UuidString
} from '../../platform/http/schema.ts'
import { deletedField, SyncParam, SyncStartParam, SyncTokenField } from '../../platform/sync/sync.ts'
import { EVENT_MANAGER_ROLE_NAMES, EVENT_PERMISSIONS } from '../events/events.permissions.ts'
import { ATTENDEE_STATUSES, CHECK_IN_METHODS, MILESTONE_STATUSES } from './event-collab.table.ts'

/** Bounds chosen by us (docs/event-collaboration.md). */
export const BULK_MAX = 1000
export const NOTES_MAX = 2000
export const ATTACHMENT_REF_MAX = 2048
export const ATTACHMENT_METADATA_MAX_KEYS = 50
export const ATTACHMENT_METADATA_MAX_BYTES = 8192
export const LIST_MAX = 1000
export const COVER_MAX_BYTES = 5 * 1024 * 1024
export const INVITE_TTL_DAYS = 7

export const EventParams = Type.Object({ id: IntId })
export const EventIdParams = Type.Object({ event_id: IntId })
export const AttendeeParams = Type.Object({ id: IntId, contact_id: UuidString })
export const ManagerParams = Type.Object({ id: IntId, user_id: Type.String({ minLength: 1, maxLength: 255 }) })
export const MilestoneParams = Type.Object({ id: IntId, milestone_event_id: IntId })
export const DocumentParams = Type.Object({
  id: IntId,
  document_id: Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[^\\s/]+$',
    description: 'Document id (no spaces or slashes)'
  })
})
export const LinkParams = Type.Object({ id: IntId, target_id: IntId })
export const AttachmentParams = Type.Object({ id: IntId })

// ---- attendees

const AttendeeStatus = StringEnum(ATTENDEE_STATUSES, {
  description:
    'invited, confirmed, declined, tentative, checked_in, pending (awaiting approval), waitlisted (past capacity) ' +
    'or no_show (docs/event-collaboration.md, "Attendee states")'
})

export const Attendee = model('Attendee', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer({ description: 'Occurrence attended; null when the row covers a series' })),
  series_id: Nullable(Type.Integer({ description: 'Set when the contact attends every occurrence of a series' })),
  contact_id: Type.String({ format: 'uuid' }),
  org_id: Nullable(Type.String()),
  status: AttendeeStatus,
  notes: Nullable(Type.String()),
  is_checked_in: Type.Boolean(),
  checked_in_at: Nullable(Timestamp()),
  invited_at: Timestamp(),
  responded_at: Nullable(Timestamp('Last status change by PATCH')),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  waitlist_position: Nullable(Type.Integer({ minimum: 1, description: 'Place on the waitlist (1 = next); null unless waitlisted' })),
  approved_at: Nullable(Timestamp('When a manager approved the registration')),
  approved_by: Nullable(Type.String({ description: 'Who approved the registration' })),
  checked_in_by: Nullable(Type.String({ description: 'Who checked the attendee in' })),
  check_in_method: Nullable(StringEnum(CHECK_IN_METHODS, { description: 'manual, scan or api' })),
  checked_out_at: Nullable(Timestamp('When the attendee was checked out (null while inside)')),
  checked_out_by: Nullable(Type.String({ description: 'Who checked the attendee out' })),
  check_in_token_issued_at: Nullable(Timestamp('When the current check-in token was issued')),
  check_in_token_revoked_at: Nullable(Timestamp('When the check-in token was revoked'))
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

// ---- managers

const Permissions = Type.Array(StringEnum(EVENT_PERMISSIONS), {
  maxItems: EVENT_PERMISSIONS.length,
  uniqueItems: true,
  description: 'Granted event manager permissions (GET /events/manager-permissions)'
})
const Role = StringEnum(EVENT_MANAGER_ROLE_NAMES, { description: 'Role bundle; replaces permissions when given' })
const Channels = Type.Array(StringEnum(['email', 'push', 'sms'] as const), { maxItems: 3, uniqueItems: true })

export const EventManager = model('EventManager', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer()),
  series_id: Nullable(Type.Integer()),
  org_id: Nullable(Type.String()),
  user_id: Nullable(Type.String({ description: 'Manager profile id; null while an invite is pending' })),
  display_name: Nullable(Type.String({ description: 'Shown name of the user; null while an invite is pending' })),
  permissions: Type.Array(Type.String()),
  role: Nullable(Type.String()),
  status: StringEnum(['pending', 'active', 'revoked'] as const),
  invited_email: Nullable(Type.String()),
  invited_by: Nullable(Type.String()),
  invited_at: Nullable(Timestamp()),
  invite_token: Type.Optional(
    Type.String({ description: 'Only in the answer to an invite: the plain token, shown once' })
  ),
  expires_at: Nullable(Timestamp()),
  accepted_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  updated_at: Timestamp()
})
export type EventManager = Static<typeof EventManager>
export const PagedBodyEventManager = pagedBody(EventManager, 'PagedBodyEventManager')
export const PendingInvitesBody = model('PendingManagerInvites', { items: Type.Array(EventManager) })

export const AddManagerBody = body({
  user_id: Type.String({ minLength: 1, maxLength: 255 }),
  permissions: Type.Optional(Nullable(Permissions)),
  role: Type.Optional(Nullable(Role)),
  notify: Type.Optional(Type.Boolean({ description: 'Notify the new manager; default false' })),
  channels: Type.Optional(Nullable(Channels)),
  message: Type.Optional(Type.String({ maxLength: 2000 })),
  priority: Type.Optional(StringEnum(['normal', 'high'] as const, { default: 'normal' }))
})
export type AddManagerBody = Static<typeof AddManagerBody>

export const InviteManagerBody = body({
  email: Type.String({ format: 'email', maxLength: 255 }),
  permissions: Type.Optional(Nullable(Permissions)),
  role: Type.Optional(Nullable(Role)),
  message: Type.Optional(Type.String({ maxLength: 2000 })),
  priority: Type.Optional(StringEnum(['normal', 'high'] as const, { default: 'normal' }))
})
export type InviteManagerBody = Static<typeof InviteManagerBody>

export const UpdateManagerBody = body({ permissions: Permissions, role: Type.Optional(Nullable(Role)) })
export const AcceptInviteBody = body({ token: Type.String({ minLength: 1, maxLength: 200 }) })

// ---- milestones

export const Milestone = model('Milestone', {
  id: Type.Integer(),
  base_event_id: Nullable(Type.Integer()),
  milestone_event_id: Type.Integer(),
  sequence: Type.Integer(),
  series_id: Nullable(Type.Integer()),
  status: StringEnum(MILESTONE_STATUSES),
  status_mode: StringEnum(['derived', 'manual'] as const),
  status_updated_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  updated_at: Timestamp()
})
export const PagedBodyMilestone = pagedBody(Milestone, 'PagedBodyMilestone')

const Sequence = Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 })
export const AddMilestoneBody = body({ milestone_event_id: IntId, sequence: Type.Optional(Sequence) })
export const UpdateMilestoneSequenceBody = body({ sequence: Sequence })
export const PatchMilestoneBody = body({
  status: Type.Optional(
    StringEnum(MILESTONE_STATUSES, { description: 'Sets the status by hand (status_mode manual)' })
  ),
  reset_to_derived: Type.Optional(Type.Boolean({ description: 'true: status derived from the milestone event again' }))
})

// ---- documents, attachments, links

export const EventDocument = model('EventDocument', {
  id: Type.Integer(),
  event_id: Type.Integer(),
  document_id: Type.String(),
  org_id: Nullable(Type.String()),
  created_by: Nullable(Type.String()),
  created_at: Timestamp()
})
export const EventDocumentList = Type.Array(EventDocument)

export const Attachment = model('Attachment', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer()),
  series_id: Nullable(Type.Integer()),
  org_id: Nullable(Type.String()),
  kind: Type.String(),
  ref: Type.String(),
  metadata: Type.Object({}, { additionalProperties: true }),
  created_by: Nullable(Type.String()),
  created_at: Timestamp()
})
export const AttachmentListBody = model('AttachmentListBody', { items: Type.Array(Attachment) })
export const ListAttachmentsQuery = Type.Object({
  kind: Type.Optional(Type.String({ maxLength: 64, description: 'One kind; empty = all' }))
})
export const AddAttachmentBody = body({
  kind: Type.String({ minLength: 1, maxLength: 64, description: "One of the template's allowed attachment kinds" }),
  ref: Type.String({ minLength: 1, maxLength: ATTACHMENT_REF_MAX, description: 'URL, blob key or document id' }),
  metadata: Type.Optional(
    Nullable(
      Type.Object(
        {},
        {
          additionalProperties: true,
          maxProperties: ATTACHMENT_METADATA_MAX_KEYS,
          description: `mime, size, content_hash… (at most ${ATTACHMENT_METADATA_MAX_KEYS} keys, ${ATTACHMENT_METADATA_MAX_BYTES} bytes as JSON)`
        }
      )
    )
  )
})

export const Link = model('Link', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer({ description: 'Source event; null for a link held by a series' })),
  target_id: Type.Integer(),
  series_id: Nullable(Type.Integer({ description: 'Set when the link applies to every occurrence of a series' })),
  created_at: Timestamp()
})
export const LinkList = Type.Array(Link)
export const AddLinkBody = body({ target_id: IntId })

// ---- registration (event-collab.registration.routes.ts)

export const CAPACITY_MAX = 1_000_000
const Capacity = Type.Integer({ minimum: 1, maximum: CAPACITY_MAX, description: `Seats, 1 to ${CAPACITY_MAX}; null = unlimited` })

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
  over_capacity: Type.Integer({ description: 'Seats held beyond capacity (capacity lowered below the confirmed count)' }),
  promoted: Type.Integer({ description: 'Waitlisted attendees this change confirmed (0 on GET)' }),
  notice: Nullable(Type.String({ description: 'What the change did not do, e.g. nobody demoted below capacity' }))
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
    notice: null
  }]
})
export type EventRegistration = Static<typeof EventRegistration>

export const PatchRegistrationBody = body({
  capacity: Type.Optional(Nullable(Capacity)),
  waitlist_enabled: Type.Optional(Type.Boolean()),
  requires_approval: Type.Optional(Type.Boolean()),
  inherit: Type.Optional(Type.Literal(true, {
    description: "An occurrence: follow the series' settings again (alone in the body)"
  }))
}, { minProperties: 1, examples: [{ capacity: 40, waitlist_enabled: true }, { inherit: true }] })
export type PatchRegistrationBody = Static<typeof PatchRegistrationBody>

export const PatchSeriesRegistrationBody = body({
  capacity: Type.Optional(Nullable(Capacity)),
  waitlist_enabled: Type.Optional(Type.Boolean()),
  requires_approval: Type.Optional(Type.Boolean())
}, { minProperties: 1, examples: [{ capacity: 12, requires_approval: true }] })
export type PatchSeriesRegistrationBody = Static<typeof PatchSeriesRegistrationBody>

export const SeriesRegistration = model('SeriesRegistration', {
  series_id: Type.Integer(),
  capacity: Nullable(Type.Integer()),
  waitlist_enabled: Type.Boolean(),
  requires_approval: Type.Boolean(),
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

import { Type, type Static } from '@sinclair/typebox'
import { CursorParam, NextCursorField } from '../../platform/http/cursor.ts'
import {
  body, DateTimeInput, IntId, model, Nullable, KeysetPageQuery, pagedBody, searchAndSort, StringEnum, Timestamp
} from '../../platform/http/schema.ts'
import { deletedField, SyncParam, SyncStartParam, SyncTokenField } from '../../platform/sync/sync.ts'
import { EVENT_MANAGER_ROLE_NAMES, EVENT_PERMISSIONS } from './events.permissions.ts'

/** Bounds chosen by us (docs/events.md). */
export const TITLE_MAX = 255
export const DESCRIPTION_MAX = 20_000
export const ADDRESS_MAX = 500
export const TIMEZONE_MAX = 64
export const KEYWORDS_MAX = 50
export const KEYWORD_MAX = 100
export const METADATA_MAX_BYTES = 16_384
export const METADATA_MAX_KEYS = 100
export const ACTIVITY_PAYLOAD_MAX_BYTES = 16_384
export const CALENDAR_MAX_DAYS = 366
export const CALENDAR_MAX_ITEMS = 5_000

export const VISIBILITIES = [10, 20, 30, 40] as const
export const STATUSES = ['draft', 'published', 'archived'] as const

const Visibility = Type.Union(
  VISIBILITIES.map(v => Type.Literal(v)),
  { description: '10 private, 20 members-only, 30 organization, 40 public' }
)
const Metadata = Type.Object(
  {},
  {
    additionalProperties: true,
    maxProperties: METADATA_MAX_KEYS,
    description: `Free-form object (at most ${METADATA_MAX_KEYS} keys, ${METADATA_MAX_BYTES} bytes as JSON)`
  }
)
const Keywords = Type.Array(Type.String({ minLength: 1, maxLength: KEYWORD_MAX }), {
  maxItems: KEYWORDS_MAX,
  description: `Keywords (at most ${KEYWORDS_MAX})`
})
const Title = Type.String({ minLength: 1, maxLength: TITLE_MAX, description: 'Title' })
const Description = Type.String({ maxLength: DESCRIPTION_MAX, description: 'Description' })
const Address = Type.String({ maxLength: ADDRESS_MAX, description: 'Address' })
const Timezone = Type.String({
  minLength: 1,
  maxLength: TIMEZONE_MAX,
  description: 'IANA time zone name, e.g. Europe/Paris'
})
const Latitude = Type.Number({ minimum: -90, maximum: 90, description: 'Latitude in degrees' })
const Longitude = Type.Number({ minimum: -180, maximum: 180, description: 'Longitude in degrees' })
const Priority = Type.Integer({ minimum: -1000, maximum: 1000, description: "Priority; its meaning is the template's" })
const TemplateId = Type.String({ minLength: 1, maxLength: 64, description: 'Template id' })

export const EventSpaceRef = Type.Object({
  id: Type.Integer({ description: 'Space id' }),
  title: Type.String({ description: 'Space title' })
})

export const Event = model('Event', {
  id: Type.Integer({ description: 'Event id' }),
  title: Type.String({ description: 'Title' }),
  status: StringEnum(STATUSES, { description: 'Publish status' }),
  visibility: Type.Integer({ description: '10 private, 20 members-only, 30 organization, 40 public' }),
  timezone: Type.String({ description: 'IANA time zone' }),
  creator_id: Type.String({ description: 'Creator user id' }),
  created_at: Timestamp(),
  created_dt: Timestamp('Business creation date'),
  updated_at: Timestamp(),
  version: Type.Integer({ description: 'Number of publishes' }),
  is_deleted: Type.Boolean(),
  is_locked: Type.Boolean(),
  description: Nullable(Type.String()),
  address: Nullable(Type.String()),
  latitude: Nullable(Type.Number()),
  longitude: Nullable(Type.Number()),
  start_dt: Nullable(Timestamp()),
  end_dt: Nullable(Timestamp()),
  keywords: Type.Array(Type.String()),
  metadata: Type.Object({}, { additionalProperties: true }),
  metadata_override: Nullable(Type.Object({}, { additionalProperties: true })),
  title_override: Nullable(Type.String()),
  description_override: Nullable(Type.String()),
  org_id: Nullable(Type.String()),
  parent_event_id: Nullable(Type.Integer()),
  published_at: Nullable(Timestamp()),
  published_id: Nullable(Type.Integer({ description: 'On a draft clone: the published event it edits' })),
  series_id: Nullable(Type.Integer()),
  series_index: Nullable(Type.Integer()),
  template: Type.String({ description: 'Template id' }),
  template_version: Type.Integer({ description: 'Pinned template version' }),
  state: Nullable(Type.String({ description: 'Current state of the template state machine; null without one' })),
  priority: Type.Integer(),
  cover_image_key: Nullable(Type.String()),
  cancelled_at: Nullable(Timestamp('When the event was cancelled (POST /events/{id}/cancel); null while it is on')),
  cancellation_reason: Nullable(Type.String({ description: 'Why it was cancelled' })),
  // registration (docs/event-collaboration.md, "Registration"): GET /events/{id} only (EVENT_DETAIL_FIELDS)
  capacity: Type.Optional(Nullable(Type.Integer({
    minimum: 1, description: 'Seats (in force: the series\' while registration_inherited); null = unlimited'
  }))),
  waitlist_enabled: Type.Optional(Type.Boolean({
    description: 'Confirmations past capacity join a waitlist (else 409)'
  })),
  requires_approval: Type.Optional(Type.Boolean({
    description: 'Registrations wait for a manager\'s approval (pending)'
  })),
  registration_inherited: Type.Optional(Type.Boolean({ description: 'An occurrence following its series\' settings' })),
  confirmed_count: Type.Optional(Type.Integer({ description: 'Attendees holding a seat (confirmed, checked in)' })),
  waitlist_count: Type.Optional(Type.Integer({ description: 'Attendees on the waitlist' })),
  pending_count: Type.Optional(Type.Integer({ description: 'Registrations awaiting approval' })),
  no_show_count: Type.Optional(Type.Integer({ description: 'Attendees marked no-show' })),
  seats_left: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: 'Free seats; null = unlimited' }))),
  // the fields read from other tables come last (events.service.ts, renderEvents)
  series_title: Nullable(Type.String({ description: 'Title of the series the event belongs to' })),
  spaces: Type.Array(EventSpaceRef, { description: 'Spaces the event belongs to' })
})
export type Event = Static<typeof Event>

export const CreateEventBody = body({
  title: Title,
  description: Type.Optional(Nullable(Description)),
  address: Type.Optional(Nullable(Address)),
  start_dt: Type.Optional(Nullable(DateTimeInput('Start (RFC 3339)'))),
  end_dt: Type.Optional(Nullable(DateTimeInput('End (RFC 3339), not before start_dt'))),
  timezone: Type.Optional(Timezone),
  keywords: Type.Optional(Nullable(Keywords)),
  latitude: Type.Optional(Nullable(Latitude)),
  longitude: Type.Optional(Nullable(Longitude)),
  metadata: Type.Optional(Nullable(Metadata)),
  parent_event_id: Type.Optional(Nullable(IntId)),
  visibility: Type.Optional(Visibility),
  priority: Type.Optional(Priority),
  template: Type.Optional(TemplateId),
  template_version: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 1000, description: 'Template version; default the latest' })
  )
})
export type CreateEventBody = Static<typeof CreateEventBody>

/** The fields after the title that PUT and PATCH both take, each optional and (but timezone, visibility) nullable. */
const changeableFields = {
  description: Type.Optional(Nullable(Description)),
  address: Type.Optional(Nullable(Address)),
  start_dt: Type.Optional(Nullable(DateTimeInput())),
  end_dt: Type.Optional(Nullable(DateTimeInput())),
  timezone: Type.Optional(Timezone),
  keywords: Type.Optional(Nullable(Keywords)),
  latitude: Type.Optional(Nullable(Latitude)),
  longitude: Type.Optional(Nullable(Longitude)),
  metadata: Type.Optional(Nullable(Metadata)),
  visibility: Type.Optional(Visibility)
}

/** PUT replaces these fields; omitted ones are cleared (visibility back to 20, timezone to UTC). */
export const ReplaceEventBody = body({ title: Title, ...changeableFields })
export type ReplaceEventBody = Static<typeof ReplaceEventBody>

/** RFC 7396: omitted = kept, null = cleared; metadata is merged; template is immutable (409). */
export const PatchEventBody = body({
  title: Type.Optional(Title),
  ...changeableFields,
  priority: Type.Optional(Priority),
  template: Type.Optional(Type.Unknown({ description: 'Immutable: any value answers 409' }))
})
export type PatchEventBody = Static<typeof PatchEventBody>

export const PatchEventQuery = Type.Object({
  scope: Type.Optional(
    StringEnum(['this', 'future', 'all'] as const, { description: 'Series edit scope (series occurrences only)' })
  )
})

export const EventParams = Type.Object({ id: IntId })
export const EventIdParams = Type.Object({ event_id: IntId })
export const EventSpaceParams = Type.Object({ id: IntId, space_id: IntId })

export const EVENT_SORT_FIELDS = [
  'created_at',
  'updated_at',
  'start_dt',
  'end_dt',
  'title',
  'published_at',
  'priority',
  'id'
] as const

export const ListEventsQuery = Type.Intersect([
  KeysetPageQuery,
  Type.Object({
    ...searchAndSort('title, description, address and keywords', EVENT_SORT_FIELDS),
    status: Type.Optional(
      StringEnum(STATUSES, { description: 'Publish status; omitted = published and draft events' })
    ),
    visibility: Type.Optional(
      Type.Union([Type.Literal(0), ...VISIBILITIES.map(v => Type.Literal(v))], {
        description: '0 or omitted = every level the caller can see'
      })
    ),
    start_dt_after: Type.Optional(DateTimeInput('start_dt >= this')),
    start_dt_before: Type.Optional(DateTimeInput('start_dt <= this')),
    space_ids: Type.Optional(Type.Array(IntId, { maxItems: 100, description: 'In any of these spaces (repeatable)' })),
    template: Type.Optional(TemplateId),
    template_in: Type.Optional(
      Type.Array(TemplateId, { maxItems: 50, description: 'Template in this list (repeatable), OR-ed with template' })
    ),
    sync: SyncStartParam,
    sync_token: SyncParam
  })
])
export type ListEventsQuery = Static<typeof ListEventsQuery>

/** A page of the list; with `sync=true` or `sync_token`, the fields of an incremental sync (docs/integrations.md). */
export const PagedBodyEvent = model('PagedBodyEvent', {
  ...pagedBody(Event, 'PagedBodyEvent').properties,
  deleted: deletedField(Type.Integer()),
  sync_token: SyncTokenField
})

export const CalendarQuery = Type.Object({
  start_date: Type.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'First day (YYYY-MM-DD)' }),
  end_date: Type.String({
    format: 'date',
    pattern: '^\\d{4}-\\d{2}-\\d{2}$',
    description: `Last day, inclusive (YYYY-MM-DD); at most ${CALENDAR_MAX_DAYS} days after start_date`
  }),
  timezone: Type.Optional(Timezone),
  sort_by: Type.Optional(StringEnum(['start_dt', 'title'] as const, { default: 'start_dt' })),
  sort_order: Type.Optional(StringEnum(['asc', 'desc'] as const, { default: 'asc' }))
})
export type CalendarQuery = Static<typeof CalendarQuery>

export const CalendarBody = model('CalendarBody', {
  items: Type.Array(Event),
  next_cursor: Type.Null({ description: 'Always null: the calendar is not paginated' })
})

export const PublishEventBody = body({
  notify: Type.Optional(Type.Boolean({ description: 'Notify the creator; default false' })),
  channels: Type.Optional(
    Nullable(Type.Array(StringEnum(['email', 'push', 'sms'] as const), { maxItems: 3, uniqueItems: true }))
  ),
  message: Type.Optional(Type.String({ maxLength: 2000 })),
  priority: Type.Optional(StringEnum(['normal', 'high'] as const, { default: 'normal' }))
})
export type PublishEventBody = Static<typeof PublishEventBody>

/** What a clone copies besides what it always copies: each part is copied unless its flag is false. */
const copyFlag = (description: string) => Type.Optional(Type.Boolean({ default: true, description }))

/**
 * `POST /events/{id}/clone` (docs/events.md, "Clone"): the new start, and which parts of the source to copy. Keywords,
 * metadata (without the cover), visibility, priority, time zone and template are always copied; attendees, check-ins,
 * the series, spaces and the cover never.
 */
export const CloneEventBody = body({
  start_dt: DateTimeInput("The clone's start; its end keeps the source's duration unless end_dt is given"),
  end_dt: Type.Optional(Nullable(DateTimeInput("The clone's end (null: none)"))),
  title: Type.Optional(Type.String({ minLength: 1, maxLength: TITLE_MAX, description: "Default: the source's" })),
  description: copyFlag('Copy the description'),
  place: copyFlag('Copy address and coordinates'),
  registration: copyFlag('Copy the registration settings in force, their window moved with the start'),
  questions: copyFlag('Copy the registration questions in force'),
  managers: copyFlag('Copy the active managers (not pending invitations); needs managers:manage')
})
export type CloneEventBody = Static<typeof CloneEventBody>

/** `POST /events/{id}/unpublish` (docs/events.md, "Unpublish"). */
export const UnpublishEventBody = body({
  cancel_in_feeds: Type.Optional(Type.Boolean({
    default: false, description: 'Feeds keep showing the event, cancelled, until it is published again'
  }))
})
export type UnpublishEventBody = Static<typeof UnpublishEventBody>

export const TransitionBody = body({
  to_state: Type.String({ minLength: 1, maxLength: 64, description: 'Target state' }),
  payload: Type.Optional(
    Type.Object({}, { additionalProperties: true, description: "Data the move's guard inspects" })
  ),
  reason: Type.Optional(Type.String({ maxLength: 2000, description: 'Why; stored on the activity row' }))
})
export type TransitionBody = Static<typeof TransitionBody>

export const ActivityRow = model('ActivityRow', {
  id: Type.Integer(),
  event_id: Type.Integer(),
  org_id: Nullable(Type.String()),
  actor_id: Nullable(Type.String({ description: 'null for system rows' })),
  kind: Type.String(),
  payload: Type.Object({}, { additionalProperties: true }),
  at: Timestamp()
})

export const ActivityListBody = model('ActivityListBody', {
  items: Type.Array(ActivityRow),
  next_cursor: NextCursorField
})

export const ActivityQuery = Type.Object({
  kind: Type.Optional(Type.String({ maxLength: 64, description: 'One kind; empty = all' })),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 200, description: 'Newest rows first' }),
  cursor: CursorParam
})

export const CreateActivityBody = body({
  kind: Type.String({
    minLength: 1,
    maxLength: 64,
    description: "A kind the event's template declares, or note/comment"
  }),
  payload: Type.Optional(Type.Object({}, { additionalProperties: true }))
})

export const EventSpace = model('EventSpace', {
  id: Type.Integer(),
  event_id: Type.Integer(),
  space_id: Type.Integer(),
  org_id: Nullable(Type.String()),
  created_at: Timestamp(),
  updated_at: Timestamp()
})
export const PagedBodyEventSpace = pagedBody(EventSpace, 'PagedBodyEventSpace')
export const AddEventSpaceBody = body({ space_id: IntId })

const Guard = Type.Object({ required_payload: Type.Array(Type.String()), description: Type.String() })
export const EventTemplate = model('EventTemplate', {
  id: Type.String(),
  version: Type.Integer(),
  versions: Type.Array(Type.Integer(), { description: 'Every registered version' }),
  name: Type.String(),
  description: Type.String(),
  states: Nullable(Type.Array(Type.String())),
  initial_state: Nullable(Type.String()),
  final_states: Nullable(Type.Array(Type.String())),
  transitions: Type.Array(Type.Object({ from: Type.String(), to: Type.String(), guard: Nullable(Guard) })),
  allowed_attachment_kinds: Type.Array(Type.String()),
  participant_roles: Type.Array(Type.String()),
  activity_kinds: Type.Array(Type.String()),
  priority_semantics: Nullable(Type.String())
})
export const EventTemplateList = model('EventTemplateList', { items: Type.Array(EventTemplate) })
export const TemplateParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })
export const TemplateQuery = Type.Object({
  version: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'A version; default the latest' }))
})

export const ManagerPermissionsBody = model('ManagerPermissionsBody', {
  permissions: Type.Array(StringEnum(EVENT_PERMISSIONS)),
  roles: Type.Record(Type.String(), Type.Array(Type.String()), {
    description: `Role bundles: ${EVENT_MANAGER_ROLE_NAMES.join(', ')}`
  })
})

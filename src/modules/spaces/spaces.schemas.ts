import { Type, type Static } from '@sinclair/typebox'
import { SPACE_MANAGER_PERMISSIONS, type SpaceManagerPermission } from '../../platform/auth/manager-permissions.ts'
import {
  body, IntId, model, Nullable, KeysetPageQuery, pagedBody, PageQuery, searchAndSort, StringEnum, Timestamp
} from '../../platform/http/schema.ts'

/** Upstream visibility enum (upstream-api-facts §1): 10 private, 20 members-only, 30 organization, 40 public. */
export const VISIBILITIES = [10, 20, 30, 40] as const
export type Visibility = typeof VISIBILITIES[number]
export const PUBLIC = 40

const VisibilityInput = Type.Unsafe<Visibility>({
  type: 'integer',
  enum: [...VISIBILITIES],
  description: '10 private, 20 members-only, 30 organization, 40 public'
})
const Title = Type.String({ minLength: 1, maxLength: 255, description: 'Title' })
const Description = Type.String({ maxLength: 10_000, description: 'Description (plain or rich text)' })
const Timezone = Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. Europe/Berlin' })
const Position = Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Order among siblings' })
export const PARENTS_MAX = 20
const ParentIds = Type.Array(IntId, {
  maxItems: PARENTS_MAX,
  uniqueItems: true,
  description: 'Parent spaces (multi-parent hierarchy)'
})

export const SPACE_STATUSES = ['draft', 'published', 'archived'] as const

const spaceFields = {
  id: Type.Integer({ description: 'Space id' }),
  title: Type.String({ description: 'Title' }),
  description: Type.String({ description: 'Description' }),
  timezone: Type.String({ description: 'IANA time zone' }),
  visibility: Type.Integer({ description: '10 private, 20 members-only, 30 organization, 40 public' }),
  status: StringEnum(SPACE_STATUSES, { description: 'Lifecycle: draft (never published), published, archived' }),
  org_id: Nullable(Type.String({ description: 'Organization; null = personal space' })),
  creator_id: Type.String({ description: 'Creator user id' }),
  parent_ids: Type.Array(Type.Integer(), { description: 'Parent space ids' }),
  position: Type.Integer({ description: 'Order within parent' }),
  published_at: Nullable(Timestamp('Last publish')),
  published_id: Nullable(Type.Integer({ description: 'On a draft view: the published space it changes' })),
  version: Type.Integer({ description: 'Number of publishes' }),
  is_deleted: Type.Boolean(),
  has_draft: Type.Boolean({ description: 'A published space with pending draft changes' }),
  public_handle: Nullable(
    Type.String({ description: 'Public page reference, set while the space has been published as public' })
  ),
  created_at: Timestamp(),
  updated_at: Timestamp()
}

export const Space = model('Space', spaceFields)
export type Space = Static<typeof Space>

export const PagedBodySpace = pagedBody(Space, 'PagedBodySpace')

export const SpaceTreeNode = Type.Recursive(This => Type.Object({
  ...spaceFields,
  children: Type.Array(This, { description: 'Child spaces (a multi-parent space repeats under each parent)' })
}, { additionalProperties: false }), { $id: 'SpaceTreeNode' })

export const SpaceTree = model('SpaceTree', {
  items: Type.Array(SpaceTreeNode, { description: 'Root spaces with their descendants' })
})

export const SpaceList = model('SpaceList', {
  items: Type.Array(Space)
})

export const CreateSpaceBody = body({
  title: Title,
  description: Type.Optional(Description),
  timezone: Type.Optional(Timezone),
  visibility: Type.Optional(VisibilityInput),
  parent_ids: Type.Optional(ParentIds),
  position: Type.Optional(Position)
})
export type CreateSpaceBody = Static<typeof CreateSpaceBody>

/** PUT: title required, every other writable field reset to its default when omitted. */
export const ReplaceSpaceBody = body({
  title: Title,
  description: Type.Optional(Description),
  timezone: Type.Optional(Timezone),
  visibility: Type.Optional(VisibilityInput),
  position: Type.Optional(Position)
})

/** PATCH: JSON merge-patch; omitted fields are kept. */
export const PatchSpaceBody = body({
  title: Type.Optional(Title),
  description: Type.Optional(Description),
  timezone: Type.Optional(Timezone),
  visibility: Type.Optional(VisibilityInput),
  position: Type.Optional(Position)
})
export type SpaceChanges = Omit<Static<typeof PatchSpaceBody>, '$schema'>

export const SPACE_SORT_FIELDS = ['created_at', 'updated_at', 'title', 'position', 'published_at'] as const

export const ListSpacesQuery = Type.Intersect([
  KeysetPageQuery,
  Type.Object({
    ...searchAndSort('the title', SPACE_SORT_FIELDS),
    status: Type.Optional(StringEnum(SPACE_STATUSES, { description: 'Status filter; omitted = every status' })),
    visibility: Type.Optional(
      Type.Integer({
        enum: [0, ...VISIBILITIES],
        description: 'Visibility filter; omitted or 0 = every level the caller can see'
      })
    )
  })
])

export const SpaceParams = Type.Object({ id: IntId })
export const SpaceParentParams = Type.Object({ id: IntId, parent_id: IntId })
export const SpaceUserParams = Type.Object({ id: IntId, user_id: Type.String({ minLength: 1, maxLength: 255 }) })
export const SpaceEventParams = Type.Object({ id: IntId, event_id: IntId })
export const SpaceContactParams = Type.Object({ id: IntId, contact_id: Type.String({ format: 'uuid' }) })

export const AddParentBody = body({ parent_id: IntId })

/* The origins that may embed the public pages of a space's events (spaces.embed.routes.ts, docs/guests.md). */

export const EMBED_ORIGINS_MAX = 20
const EmbedOriginList = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
  maxItems: EMBED_ORIGINS_MAX,
  description: 'Origins (`https://host[:port]`, or `http://localhost[:port]` while developing), no path: the sites ' +
    'that may frame the public pages of the space\'s events'
})
export const EmbedOriginsBody = body({ origins: EmbedOriginList }, {
  examples: [{ origins: ['https://www.example.org', 'https://events.example.org:8443'] }]
})
export const EmbedOrigins = model('SpaceEmbedOrigins', { origins: EmbedOriginList }, {
  examples: [{ origins: ['https://www.example.org'] }]
})

export const CHANNELS = ['email', 'push', 'sms'] as const
export const PRIORITIES = ['normal', 'high'] as const

/** The shared notification options block (upstream-api-facts §1); every field optional. */
const notificationFields = {
  notify: Type.Optional(Type.Boolean({ description: 'Send a notification; default false' })),
  channels: Type.Optional(
    Type.Array(StringEnum(CHANNELS), {
      minItems: 1,
      maxItems: 3,
      uniqueItems: true,
      nullable: true,
      description: 'Delivery channels; omitted or null = email'
    })
  ),
  message: Type.Optional(Type.String({ maxLength: 2000, description: 'Custom text; omitted = default text' })),
  priority: Type.Optional(StringEnum(PRIORITIES, { description: 'normal (default) or high' }))
}

export const PublishSpaceBody = body(notificationFields)
export type NotificationOptions = Omit<Static<typeof PublishSpaceBody>, '$schema'>

/** `POST /spaces/{id}/unpublish` (docs/spaces.md, "Unpublish"). */
export const UnpublishSpaceBody = body({
  cancel_in_feeds: Type.Optional(Type.Boolean({
    default: false,
    description: "The space's anonymous calendar feed shows its public events as cancelled while it is unpublished " +
      '(default: it shows none, so they leave its subscribers\' calendars)'
  }))
})
export type UnpublishSpaceBody = Static<typeof UnpublishSpaceBody>

/** Members (upstream SpaceMember). */
export const MEMBER_ROLES = ['space_owner', 'space_admin', 'space_member', 'space_viewer'] as const

export const SpaceMember = model('SpaceMember', {
  space_id: Type.Integer(),
  user_id: Type.String({ description: 'Member profile id' }),
  org_id: Nullable(Type.String({ description: 'Organization of the space' })),
  role: StringEnum(MEMBER_ROLES),
  is_active: Type.Boolean(),
  created_at: Timestamp('Joined'),
  updated_at: Timestamp()
})
export const PagedBodySpaceMember = pagedBody(SpaceMember, 'PagedBodySpaceMember')

export const AddMemberBody = body({
  user_id: Type.String({ minLength: 1, maxLength: 255, description: 'Profile id of the user' }),
  role: StringEnum(MEMBER_ROLES, { description: 'Role in the space' })
})

/** Managers (upstream manager model with space_id); the permissions' catalogue is the platform's. */
export { SPACE_MANAGER_PERMISSIONS, type SpaceManagerPermission }
export const FULL_ROLE = 'space_manager:full'
export const MANAGER_ROLES = [FULL_ROLE] as const

const ManagerPermissions = Type.Array(StringEnum(SPACE_MANAGER_PERMISSIONS), {
  maxItems: SPACE_MANAGER_PERMISSIONS.length,
  uniqueItems: true,
  description: 'Granted manager permissions'
})

export const SpaceManager = model('SpaceManager', {
  id: Type.Integer(),
  space_id: Type.Integer(),
  org_id: Nullable(Type.String()),
  user_id: Nullable(Type.String({ description: 'Manager profile id' })),
  permissions: Type.Array(Type.String(), { description: 'Granted manager permissions' }),
  role: Nullable(Type.String({ description: 'Predefined bundle (space_manager:full); null = custom set' })),
  status: StringEnum(['pending', 'active', 'revoked'] as const),
  invited_email: Nullable(Type.String()),
  invited_by: Nullable(Type.String()),
  invited_at: Nullable(Timestamp()),
  expires_at: Nullable(Timestamp()),
  accepted_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  updated_at: Timestamp()
})
export const PagedBodySpaceManager = pagedBody(SpaceManager, 'PagedBodySpaceManager')

export const AddManagerBody = body({
  user_id: Type.String({ minLength: 1, maxLength: 255, description: 'Profile id of the user' }),
  permissions: ManagerPermissions,
  role: Type.Optional(
    Nullable(StringEnum(MANAGER_ROLES, { description: 'When given, replaces permissions with the bundle' }))
  ),
  ...notificationFields
})
export type AddManagerBody = Static<typeof AddManagerBody>

export const UpdateManagerBody = body({ permissions: ManagerPermissions })

export const ManagerPermissionsList = model('SpaceManagerPermissions', {
  permissions: Type.Array(Type.String())
})

/** Contacts linked to a space. */
export const SpaceContact = model('SpaceContact', {
  id: Type.Integer(),
  space_id: Type.Integer(),
  contact_id: Type.String({ format: 'uuid' }),
  created_at: Timestamp(),
  updated_at: Timestamp()
})
export const PagedBodySpaceContact = pagedBody(SpaceContact, 'PagedBodySpaceContact')
export const AddContactBody = body({ contact_id: Type.String({ format: 'uuid', description: 'Contact id' }) })

/** Activity (spec 2.6); the type enumeration is upstream's (upstream-api-facts §2.5). */
export const ACTIVITY_TYPES = ['contact', 'event', 'member', 'announcement', 'material'] as const

export const SpaceActivity = model('SpaceActivity', {
  created_at: Timestamp(),
  message: Type.String(),
  resource_id: Type.String({ description: 'Id of the contact, event or member (user id) concerned' }),
  title: Type.String(),
  type: StringEnum(ACTIVITY_TYPES, { description: 'contact, event, member, announcement or material' })
})
export const PagedBodySpaceActivity = pagedBody(SpaceActivity, 'PagedBodySpaceActivity')

export type PageQueryType = Static<typeof PageQuery>
export { PageQuery }

/* Public page (spec 2.5): only public data, never an e-mail or a person's id. */

const PublicSpace = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  description: Type.String(),
  timezone: Type.String(),
  visibility: Type.Integer(),
  parent_id: Type.Optional(Type.Integer({ description: 'A public parent, when the space has one' })),
  published_at: Type.Optional(Timestamp())
}, { additionalProperties: false })

const PersonPreview = Type.Object({
  display_name: Type.String(),
  initials: Type.String(),
  avatar_url: Type.Optional(Type.String())
}, { additionalProperties: false })

export const SpacePage = model('SpacePage', {
  space: PublicSpace,
  subspaces: Type.Array(PublicSpace, { description: 'Published public children' }),
  managers: Type.Array(PersonPreview, { description: 'Previews of up to 12 active managers' }),
  members: Type.Array(PersonPreview, { description: 'Previews of up to 24 active members' }),
  stats: Type.Object(
    {
      events_count: Type.Integer({ description: 'Published public events linked to the space' }),
      managers_count: Type.Integer(),
      members_count: Type.Integer(),
      subspaces_count: Type.Integer({ description: 'Published public children' })
    },
    { additionalProperties: false }
  ),
  upcoming_events: Type.Array(
    Type.Object(
      {
        id: Type.Integer(),
        title: Type.String(),
        timezone: Type.String(),
        address: Type.Optional(Type.String()),
        description: Type.Optional(Type.String()),
        start_dt: Type.Optional(Timestamp()),
        end_dt: Type.Optional(Timestamp()),
        page_url: Type.String({
          format: 'uri', description: 'The event\'s own public page, with its registration form (HTML)'
        })
      },
      { additionalProperties: false }
    ),
    { description: 'Up to 10 published public events linked to the space that have not ended' }
  ),
  organization: Type.Optional(Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false })),
  owner: Type.Optional(
    Type.Object(
      { name: Type.String(), type: Type.String(), avatar_url: Type.Optional(Type.String()) },
      { additionalProperties: false }
    )
  ),
  viewer: Type.Optional(
    Type.Object(
      {
        can_manage: Type.Boolean(),
        can_open_in_studio: Type.Boolean(),
        can_request_join: Type.Boolean()
      },
      { additionalProperties: false, description: 'Capabilities of the signed-in visitor' }
    )
  )
})
export type SpacePage = Static<typeof SpacePage>

export const PublicSpaceParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'Numeric space id or public handle' })
})

/* Events of a space (links in event_spaces, owned by the events module). */

export const SpaceEventLink = model('SpaceEventLink', {
  id: Type.Integer({ description: 'Link id' }),
  space_id: Type.Integer(),
  event_id: Type.Integer(),
  org_id: Nullable(Type.String()),
  created_at: Timestamp(),
  updated_at: Timestamp()
})

export const SpaceEvent = model('SpaceEvent', {
  id: Type.Integer({ description: 'Link id' }),
  space_id: Type.Integer(),
  event_id: Type.Integer(),
  org_id: Nullable(Type.String()),
  created_at: Timestamp('Added to the space'),
  updated_at: Timestamp(),
  event: Type.Object({
    id: Type.Integer(),
    title: Type.String(),
    status: Type.String(),
    visibility: Type.Integer(),
    timezone: Type.String(),
    start_dt: Nullable(Timestamp()),
    end_dt: Nullable(Timestamp())
  }, { additionalProperties: false, description: 'Summary of the event' })
})
export const PagedBodySpaceEvent = pagedBody(SpaceEvent, 'PagedBodySpaceEvent')
export const AddSpaceEventBody = body({ event_id: IntId })

/* Analytics (spec 2.7; units in docs/spaces.md). */

const EventPerformance = Type.Object({
  attended: Type.Integer({ description: 'Attendees checked in' }),
  event_id: Type.Integer(),
  needs_care: Type.Boolean({ description: 'Upcoming with fewer RSVPs than the threshold' }),
  no_shows: Type.Integer({ description: 'Attendees marked no_show (confirmed, never checked in); not RSVPs' }),
  rate: Type.Number({ description: 'attended / rsvps as a fraction 0..1 (0 without RSVPs)' }),
  rsvps: Type.Integer({
    description: 'Attendees who answered confirmed, tentative or checked in (never pending, waitlisted or no_show)'
  }),
  status: Type.String(),
  title: Type.String(),
  upcoming: Type.Boolean({ description: 'Starts after now' }),
  start_at: Type.Optional(Timestamp()),
  end_at: Type.Optional(Timestamp())
}, { additionalProperties: false })

export const SpaceAnalyticsResult = model('SpaceAnalyticsResult', {
  attendance_trend: Type.Array(
    Type.Object(
      {
        attended: Type.Integer(),
        date: Timestamp('Event start'),
        event_id: Type.Integer(),
        label: Type.String({ description: 'Event title' }),
        rate: Type.Number({ description: 'Fraction 0..1' }),
        rsvps: Type.Integer()
      },
      { additionalProperties: false }
    ),
    { description: 'The last 12 events that have started, oldest first' }
  ),
  attention_needed: Type.Array(
    Type.Object(
      {
        event_id: Type.Integer(),
        reason: Type.String(),
        rsvps: Type.Integer(),
        threshold: Type.Number({ description: 'Minimum RSVP count (absolute number of RSVPs)' }),
        title: Type.String(),
        start_at: Type.Optional(Timestamp())
      },
      { additionalProperties: false }
    ),
    { description: 'Upcoming published events with fewer RSVPs than the threshold, soonest first' }
  ),
  events_performance: Type.Array(EventPerformance, { description: 'Up to 50 linked events, latest start first' }),
  top_by_rsvp: Type.Array(EventPerformance, { description: 'The 5 linked events with the most RSVPs' }),
  member_growth: Type.Array(
    Type.Object(
      {
        date: Timestamp('Start of the week (Monday 00:00 UTC)'),
        label: Type.String({ description: 'The week start as YYYY-MM-DD' }),
        members: Type.Integer({ description: 'Active members at the end of the week (cumulative)' })
      },
      { additionalProperties: false }
    ),
    { description: '12 weekly buckets, oldest first, the current week last' }
  ),
  summary: Type.Object(
    {
      active_members: Type.Number(),
      avg_attendance_rate: Type.Number({
        description: 'Sum of attended / sum of RSVPs over events that have started, fraction 0..1'
      }),
      events_published: Type.Number(),
      no_shows: Type.Integer({ description: 'Attendees marked no_show, over all linked events' }),
      total_rsvps: Type.Number(),
      upcoming_events: Type.Number()
    },
    { additionalProperties: false }
  )
})
export type SpaceAnalyticsResult = Static<typeof SpaceAnalyticsResult>

/* Manager invites by e-mail (upstream model: pending until accepted, 7 days). */

export const INVITE_DAYS = 7

export const InviteManagerBody = body({
  email: Type.String({ maxLength: 255, format: 'email', description: 'Address the invite goes to' }),
  permissions: ManagerPermissions,
  role: Type.Optional(
    Nullable(StringEnum(MANAGER_ROLES, { description: 'When given, replaces permissions with the bundle' }))
  )
})

export const AcceptInviteBody = body({
  token: Type.String({ minLength: 16, maxLength: 200, description: 'The token of the invite e-mail' })
})

export const PendingInvites = model('SpaceManagerInvites', {
  items: Type.Array(SpaceManager, { description: 'Pending, unexpired invites to the caller\'s e-mail address' })
})

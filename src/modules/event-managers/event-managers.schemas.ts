/**
 * The schemas of the event managers module: grants and invitations (docs/event-collaboration.md).
 */
import { Type, type Static } from '@sinclair/typebox'
import { body, IntId, model, Nullable, pagedBody, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { EVENT_MANAGER_ROLE_NAMES, EVENT_PERMISSIONS } from '../events/index.ts'

/** Days an invitation stays open (docs/event-collaboration.md). */
export const INVITE_TTL_DAYS = 7

export const ManagerParams = Type.Object({ id: IntId, user_id: Type.String({ minLength: 1, maxLength: 255 }) })

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

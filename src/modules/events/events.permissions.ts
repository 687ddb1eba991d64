/**
 * What an event manager may do: the permission vocabulary (`EVENT_PERMISSIONS`, defined once in
 * src/platform/auth/manager-permissions.ts, which the policy reads too) and the role bundles, defined once.
 * `lockEventForWrite` checks them, `GET /events/manager-permissions` serves them, and the managers
 * routes accept only these names. A manager row's `role`, when set, replaces its `permissions`
 * (upstream manager model).
 */
import { EVENT_PERMISSIONS, type EventPermission } from '../../platform/auth/manager-permissions.ts'

export { EVENT_PERMISSIONS, type EventPermission }

export const EVENT_MANAGER_ROLES = {
  'event_manager:full': [...EVENT_PERMISSIONS],
  'event_manager:editor': [
    'event:edit',
    'event:publish',
    'attendees:read',
    'attendees:write',
    'attendees:checkin',
    'milestones:manage',
    'documents:manage',
    'attachments:manage',
    'links:manage'
  ],
  'event_manager:attendees': ['attendees:read', 'attendees:write', 'attendees:checkin'],
  'event_manager:checkin': ['attendees:read', 'attendees:checkin']
} as const satisfies Record<string, readonly EventPermission[]>
export type EventManagerRole = keyof typeof EVENT_MANAGER_ROLES

export const EVENT_MANAGER_ROLE_NAMES = Object.keys(EVENT_MANAGER_ROLES) as EventManagerRole[]

export const isEventPermission = (p: string): p is EventPermission =>
  (EVENT_PERMISSIONS as readonly string[]).includes(p)
export const isEventManagerRole = (r: string): r is EventManagerRole => Object.hasOwn(EVENT_MANAGER_ROLES, r)

/** The permissions a manager row grants: its role bundle when it names one, else its own list. */
export function grantedPermissions (m: { role: string | null, permissions: readonly string[] }): Set<EventPermission> {
  if (m.role !== null && isEventManagerRole(m.role)) return new Set(EVENT_MANAGER_ROLES[m.role])
  return new Set(m.permissions.filter(isEventPermission))
}

/**
 * The permissions a manager of a resource may hold, besides the tenant permissions of their role (permissions.ts):
 * the catalogues of event managers (of events and series) and of space managers. Pure data, defined once here, where
 * the authorization policy (src/modules/policy/policy.ts) and the modules that check them (events, spaces, series,
 * event-managers, automation) both read them; the role bundles and the checks are the modules' own
 * (`events.permissions.ts`, `spaces.access.repository.ts`).
 */

/** What an event manager may do (`GET /events/manager-permissions` serves them). */
export const EVENT_PERMISSIONS = [
  'event:edit',
  'event:publish',
  'event:delete',
  'attendees:read',
  'attendees:write',
  'attendees:checkin',
  'managers:manage',
  'automations:manage',
  'milestones:manage',
  'documents:manage',
  'attachments:manage',
  'links:manage'
] as const
export type EventPermission = typeof EVENT_PERMISSIONS[number]

/** What a space manager may do (`GET /spaces/manager-permissions` serves them). */
export const SPACE_MANAGER_PERMISSIONS = [
  'space:edit',
  'space:publish',
  'space:members',
  'space:managers',
  'space:events',
  'space:contacts'
] as const
export type SpaceManagerPermission = typeof SPACE_MANAGER_PERMISSIONS[number]

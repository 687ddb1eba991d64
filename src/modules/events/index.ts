/**
 * The public face of the events module: what other modules, src/app.ts and src/workers.ts may use of it. Events:
 * their rows, visibility and permissions, drafts, state machine; what other modules ask of an event. Another module
 * imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export {
  activeGrantsOn, activeSeriesGrants, creatorOfEvent, creatorOfSeries, eventVisibilityFilter, eventVisibleTo,
  findEventForRead, findVisibleEvent, hasEventPermission, isTenantAdmin, lockEventForWrite, rootEventId
} from './events.access.repository.ts'
export { newEventBodyCache } from './events.bodies.repository.ts'
export { eventEvent, seriesEvent } from './events.events.ts'
export {
  EVENT_MANAGER_ROLES, EVENT_MANAGER_ROLE_NAMES, EVENT_PERMISSIONS, grantedPermissions, isEventManagerRole
} from './events.permissions.ts'
export type { EventPermission } from './events.permissions.ts'
export {
  compactListCounts, deleteEventSpace, insertActivity, insertEventSpace, lockById, updateEvent
} from './events.repository.ts'
export type { EventInsert, EventUpdate } from './events.repository.ts'
export { eventsModule } from './events.routes.ts'
export {
  ADDRESS_MAX, CreateEventBody, DESCRIPTION_MAX, Event, EventIdParams, EventParams, KEYWORDS_MAX, KEYWORD_MAX,
  METADATA_MAX_BYTES, METADATA_MAX_KEYS, PublishEventBody, TIMEZONE_MAX, TITLE_MAX
} from './events.schemas.ts'
export type { PatchEventBody } from './events.schemas.ts'
export { createEvent, mergePatch, patchEvent, transitionEvent, withSpaces, withSpacesAll } from './events.service.ts'
export { eventDomainEvent, readEvent, readEventWith, removeFromEvent, writeSeries } from './events.sub-resources.ts'
export { EVENT_COLUMNS, MANAGER_GRANT_COLUMNS } from './events.table.ts'
export type {
  EventContentColumns, EventRow, EventSpacesTable, JsonWithDefault, ManagerGrantColumns
} from './events.table.ts'
export { findTemplate, latestTemplate, templateAllows } from './events.templates.ts'

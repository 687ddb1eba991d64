/**
 * The public face of the events module: what other modules, src/app.ts and src/workers.ts may use of it. Events:
 * their rows, visibility and permissions, drafts, state machine; what other modules ask of an event. The modules that
 * build on events import this file and are imported by none of its files: what the events module needs of them (the
 * attendees' registration figures, the series' edit scopes, the spaces' link check) src/app.ts gives `eventsModule`
 * (`EventsNeeds`, events.needs.ts). Another module imports only this file (the lint rule `modules/index-only`,
 * docs/architecture.md).
 */
export {
  activeGrantsOn, activeSeriesGrants, creatorOfEvent, creatorOfSeries, eventVisibilityFilter, eventVisibleTo,
  findEventForRead, findVisibleEvent, hasEventPermission, isTenantAdmin, lockEventForWrite, rootEventId
} from './events.access.repository.ts'
export { newEventBodyCache } from './events.bodies.repository.ts'
export { eventEvent, seriesEvent } from './events.events.ts'
export { compactListCounts } from './events.list.repository.ts'
export {
  EVENT_MANAGER_ROLES, EVENT_MANAGER_ROLE_NAMES, EVENT_PERMISSIONS, grantedPermissions, isEventManagerRole
} from './events.permissions.ts'
export type { EventPermission } from './events.permissions.ts'
export {
  onPublishedEventChange, tellPublishedChanges, updateEvent, type PublishedEventListener
} from './events.changes.ts'
export { deleteEventSpace, insertActivity, insertEventSpace, lockById, lockEventsById } from './events.repository.ts'
export type { EventInsert, EventUpdate } from './events.repository.ts'
export type { CloneParts, RegistrationCopy } from './events.needs.ts'
export { eventsModule } from './events.routes.ts'
export {
  ADDRESS_MAX, CreateEventBody, DESCRIPTION_MAX, Event, EventIdParams, EventParams, KEYWORDS_MAX, KEYWORD_MAX,
  METADATA_MAX_BYTES, METADATA_MAX_KEYS, PublishEventBody, TIMEZONE_MAX, TITLE_MAX
} from './events.schemas.ts'
export type { PatchEventBody } from './events.schemas.ts'
export {
  addSpace, createEvent, mergePatch, patchEvent, STORAGE_METADATA_KEYS, transitionEvent, withSpaces, withSpacesAll
} from './events.service.ts'
export { eventDomainEvent, readEvent, readEventWith, removeFromEvent, writeSeries } from './events.sub-resources.ts'
export { EVENT_COLUMNS, MANAGER_GRANT_COLUMNS } from './events.table.ts'
export type { EventRow, EventSpacesTable } from './events.table.ts'
export { findTemplate, latestTemplate, templateAllows } from './events.templates.ts'

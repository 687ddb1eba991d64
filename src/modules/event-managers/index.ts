/**
 * The public face of the event-managers module: what other modules, src/app.ts and src/workers.ts may use of it.
 * Managers of events and series, and their invitations. Another module imports only this file (the lint rule
 * `modules/index-only`, docs/architecture.md).
 */
export { copyManagers } from './event-managers.copy.ts'
export { assertSeriesGrant } from './event-managers.grants.ts'
export { eventManagersModule } from './event-managers.module.ts'
export type { EventManagersTable } from './event-managers.table.ts'

/**
 * The public face of the attendees module: what other modules, src/app.ts and src/workers.ts may use of it. Attendees
 * of events and series: registration (capacity, waitlist, approval), check-in, exports. Another module imports only
 * this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { attendeeExportsModule, attendeesModule } from './attendees.module.ts'
export { changeStatuses, markNoShows, registrationFigures, settleWaitlist } from './attendees.registration.ts'
export type { Changed } from './attendees.registration.ts'
export { ofEventOrSeries } from './attendees.repository.ts'
export type { OccurrenceRef } from './attendees.repository.ts'
export { ATTENDEE_STATUSES } from './attendees.table.ts'
export type { AttendeeRow, AttendeeStatus, AttendeesTable } from './attendees.table.ts'

/**
 * The public face of the attendees module: what other modules, src/app.ts and src/workers.ts may use of it. Attendees
 * of events and series: registration (capacity, waitlist, approval), check-in, exports. Their statuses are the
 * platform's (`ATTENDEE_STATUSES`, platform/db/columns.ts), which the series module counts too; `eventFigures`
 * and `settleWaitlist` are given by src/app.ts to the events and contacts modules, which this one builds on. Another
 * module imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { attendeeExportsModule, attendeesModule } from './attendees.module.ts'
export {
  changeStatuses, eventFigures, markNoShows, registrationFigures, settleWaitlist
} from './attendees.registration.ts'
export type { Changed } from './attendees.registration.ts'
export { ofEventOrSeries } from './attendees.repository.ts'
export type { OccurrenceRef } from './attendees.repository.ts'
export type { AttendeeStatus } from './attendees.table.ts'
// the guest side (docs/guests.md): what the guests module's anonymous routes do with a guest's link
export {
  answerAsGuest, confirmRegistration, GUEST_ANSWERS, registerGuest, type GuestAnswer, type GuestOutcome
} from './attendees.guest.ts'
export { guestCalendarText, guestLocale, mailGuests, tellGuestsOfChange, tenantLocale } from './attendees.guest-mail.ts'
export {
  findGuestToken, MANAGE_AFTER_EVENT_MS, revokeGuestTokens, touchGuestToken
} from './attendees.guest-tokens.repository.ts'
export { guestAttendee, setUpdates, type GuestAttendee } from './attendees.guest.repository.ts'
export { changeAnswersAsGuest, sendInvitations } from './attendees.guest.ts'
export { Question } from './attendees.forms.ts'
export { answersFor, copyQuestions, formOf } from './attendees.forms.service.ts'
export { guestSettings, type GuestSettings } from './attendees.registration.repository.ts'
export { endOf, registrationOf, registrationToCopy, seatCounts, seatsLeft } from './attendees.registration.ts'
export { eventState } from './attendees.transitions.ts'

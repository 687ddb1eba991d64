/**
 * The public face of the contacts module: what other modules, src/app.ts and src/workers.ts may use of it. Contacts:
 * the CRM, its visibility rule and upkeep. It imports only the policy and events modules: what it needs of the modules
 * built on it (the outbound rule for the timeline; the attendees' waitlists and the automation rules' versions for a
 * merge) src/app.ts gives `contactsModule` (`ContactsNeeds`, contacts.needs.ts). Another module imports only this
 * file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { canManage, findVisible, visibleAsRow, visibleTo } from './contacts.repository.ts'
export { contactForRegistration, type GuestContactInput } from './contacts.guests.ts'
export { contactsModule } from './contacts.routes.ts'
export { readUnreadPhones } from './contacts.service.ts'
// a contact's timeline, read by the data-subject export (the privacy module; docs/privacy.md)
export { listTimeline } from './contacts.timeline.repository.ts'

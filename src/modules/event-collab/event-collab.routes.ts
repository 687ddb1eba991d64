/**
 * Event collaboration: attendees, managers and manager invites, milestones, linked documents,
 * attachments, cross-reference links (of events and series) and the cover image. Owns the tables
 * `attendees`, `event_milestones`, `event_documents`, `event_attachments` and `event_links`, and
 * the rows of `event_managers` (the table belongs to the events module; access rules live in
 * events.access.repository.ts). Decisions:
 * docs/event-collaboration.md.
 */
import { defineModule } from '../../platform/app-context.ts'
import { attendeesRoutes } from './event-collab.attendees.routes.ts'
import { checkInRoutes } from './event-collab.checkin.routes.ts'
import { coverRoutes } from './event-collab.cover.routes.ts'
import { exportRoutes } from './event-collab.export.routes.ts'
import { managersRoutes } from './event-collab.managers.routes.ts'
import { milestonesRoutes } from './event-collab.milestones.routes.ts'
import { referencesRoutes } from './event-collab.references.routes.ts'
import { registrationRoutes } from './event-collab.registration.routes.ts'

export const eventCollabModule = defineModule(async (app, ctx) => {
  await attendeesRoutes(app, ctx)
  await registrationRoutes(app, ctx)
  await checkInRoutes(app, ctx)
  await managersRoutes(app, ctx)
  await milestonesRoutes(app, ctx)
  await referencesRoutes(app, ctx)
  await coverRoutes(app, ctx)
  await exportRoutes(app, ctx)
})

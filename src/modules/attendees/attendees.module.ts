/**
 * Attendees: who attends an event or a whole series, with registration (capacity, waitlist, approval), check-in
 * and check-out, and the CSV exports of the attendee list. Owns the table `attendees`; every change of an
 * attendee's status goes through one transition table (attendees.transitions.ts). The events it hangs off are the
 * events module's (read and locked through its index). Decisions: docs/event-collaboration.md.
 *
 * Two plugins, for the order of the routes (which is the OpenAPI document's): the exports come after the event
 * content's routes.
 */
import { defineModule } from '../../platform/app-context.ts'
import { configureGuestMail } from './attendees.guest-mail.ts'
import { guestOrganiserRoutes } from './attendees.guest.routes.ts'
import { formRoutes } from './attendees.forms.routes.ts'
import { attendeesRoutes } from './attendees.routes.ts'
import { checkInRoutes } from './attendees.checkin.routes.ts'
import { exportRoutes } from './attendees.export.routes.ts'
import { registrationRoutes } from './attendees.registration.routes.ts'

export const attendeesModule = defineModule(async (app, ctx) => {
  const from = /<([^<>]+)>\s*$/.exec(ctx.config.smtpFrom)?.[1] ?? ctx.config.smtpFrom
  configureGuestMail({
    defaultLocale: ctx.config.defaultLocale,
    fromAddress: from,
    uidDomain: new URL(ctx.config.baseUrl).hostname
  })
  await attendeesRoutes(app, ctx)
  await registrationRoutes(app, ctx)
  await checkInRoutes(app, ctx)
  await guestOrganiserRoutes(app, ctx)
  await formRoutes(app, ctx)
})

/** The CSV exports of attendee lists (registered after the event content, see above). */
export const attendeeExportsModule = defineModule(async (app, ctx) => {
  await exportRoutes(app, ctx)
})

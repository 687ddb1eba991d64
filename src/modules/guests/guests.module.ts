/**
 * Guests: the people events are for, without an account (docs/guests.md). Their anonymous routes: a guest's own
 * link (answer, cancel, calendar file, update mails, a new link) and public registration with its confirmation. What
 * they change is attendees, through the attendees module's guest side (the one attendee state machine); this module
 * lets anonymous requests in: bounded per address and per event, found by link hash, answered in the guest's
 * language. Every published public event has a public page (HTML and JSON) with the registration form
 * (guests.page.routes.ts).
 */
import { defineModule } from '../../platform/app-context.ts'
import { createGuestLimits } from './guests.access.ts'
import { guestPageRoutes } from './guests.page.routes.ts'
import { guestRegistrationRoutes } from './guests.registration.routes.ts'
import { guestLinkRoutes } from './guests.routes.ts'

export const guestsModule = defineModule(async (app, ctx) => {
  const limits = createGuestLimits(ctx.config)
  app.addHook('onClose', async () => { await limits.close() })
  guestLinkRoutes(app, ctx, limits)
  guestRegistrationRoutes(app, ctx, limits)
  await guestPageRoutes(app, ctx, limits)
})

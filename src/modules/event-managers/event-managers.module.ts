/**
 * Event managers: the users who manage an event (or every occurrence of a series) with a set of event permissions,
 * and invitations by e-mail that become grants when accepted. Owns the table `event_managers`, which the events
 * module reads to decide what a manager may do (events.access.repository.ts). Decisions:
 * docs/event-collaboration.md.
 */
import { defineModule } from '../../platform/app-context.ts'
import { managersRoutes } from './event-managers.routes.ts'

export const eventManagersModule = defineModule(async (app, ctx) => {
  await managersRoutes(app, ctx)
})

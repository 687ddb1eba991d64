/**
 * Event content: what hangs off an event besides its people. Milestones (events that mark the steps of another),
 * linked documents, attachments and cross-reference links (of events and series), and the cover image. Owns the
 * tables `event_milestones`, `event_documents`, `event_attachments` and `event_links`, and the cover images in
 * storage. Decisions: docs/event-collaboration.md.
 */
import { defineModule } from '../../platform/app-context.ts'
import { coverRoutes } from './event-content.cover.routes.ts'
import { milestonesRoutes } from './event-content.milestones.routes.ts'
import { referencesRoutes } from './event-content.references.routes.ts'

export const eventContentModule = defineModule(async (app, ctx) => {
  await milestonesRoutes(app, ctx)
  await referencesRoutes(app, ctx)
  await coverRoutes(app, ctx)
})

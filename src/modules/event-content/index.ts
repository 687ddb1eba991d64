/**
 * The public face of the event-content module: what other modules, src/app.ts and src/workers.ts may use of it. What
 * hangs off an event besides its people: milestones, documents, attachments, links, cover. Another module imports
 * only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { eventContentModule } from './event-content.module.ts'

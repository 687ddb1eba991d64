/**
 * The public face of the feeds module: what other modules, src/app.ts and src/workers.ts may use of it. Calendar
 * feeds (iCalendar) by token. Another module imports only this file (the lint rule `modules/index-only`,
 * docs/architecture.md).
 */
export { feedsModule } from './feeds.routes.ts'

/**
 * The public face of the calendar-import module: what other modules, src/app.ts and src/workers.ts may use of it.
 * iCalendar files imported into a space as events and series, through the events, series and spaces modules; no
 * module builds on it. Another module imports only this file (the lint rule `modules/index-only`,
 * docs/architecture.md).
 */
export { calendarImportModule } from './calendar-import.routes.ts'

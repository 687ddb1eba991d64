/**
 * The public face of the series module: what other modules, src/app.ts and src/workers.ts may use of it. Recurring
 * series: rules, occurrences, rolling windows. Another module imports only this file (the lint rule `modules/index-
 * only`, docs/architecture.md).
 */
export { hasSeriesPermission, lockForSeriesWrite, seriesOfRow } from './series.access.ts'
export { seriesModule } from './series.routes.ts'
export { expand } from './series.recurrence.ts'
export { checkRule, positionsOf } from './series.rule.ts'
export { formatRrule, parseRrule, RruleError, withEnd } from './series.rrule.ts'
export { RULE_DATES_MAX } from './series.schemas.ts'
export type { PatchSeriesBody } from './series.schemas.ts'
export {
  applyScopedEdit, createEventWithSeries, deleteSeries, patchSeries, startSeriesWindows
} from './series.service.ts'
export type { SeriesRow } from './series.table.ts'
export {
  recurrenceOf, seriesRecurrences, visibleSeriesTitle, type SeriesRecurrence, type SeriesSlot
} from './series.feed.ts'

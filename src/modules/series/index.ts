/**
 * The public face of the series module: what other modules, src/app.ts and src/workers.ts may use of it. Recurring
 * series: rules, occurrences, rolling windows. Another module imports only this file (the lint rule `modules/index-
 * only`, docs/architecture.md).
 */
export { hasSeriesPermission, lockForSeriesWrite, seriesOfRow } from './series.access.ts'
export { seriesModule } from './series.routes.ts'
export { applyScopedEdit, startSeriesWindows } from './series.service.ts'

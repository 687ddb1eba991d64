/**
 * The public face of the health module: what other modules, src/app.ts and src/workers.ts may use of it. Liveness and
 * readiness. Another module imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { healthModule } from './health.routes.ts'

/**
 * The public face of the notifications module: what other modules, src/app.ts and src/workers.ts may use of it. The
 * notifications list of tenant admins. Another module imports only this file (the lint rule `modules/index-only`,
 * docs/architecture.md).
 */
export { notificationsModule } from './notifications.routes.ts'

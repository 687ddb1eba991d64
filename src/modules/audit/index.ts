/**
 * The public face of the audit module: what other modules, src/app.ts and src/workers.ts may use of it. The tenant
 * audit log's routes and what a data-subject export reads of it. Entries are written by the platform
 * (src/platform/audit.ts). Another module imports only this file (the lint rule `modules/index-only`,
 * docs/architecture.md).
 */
export { auditModule } from './audit.routes.ts'
export { auditEntriesAbout } from './audit.service.ts'

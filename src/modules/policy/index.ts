/**
 * The public face of the policy module: what other modules, src/app.ts and src/workers.ts may use of it. The
 * authorization policy: one table (`policy.ts`), the row every route declares (`requirePolicy`). It is data over the
 * platform's permission catalogues and imports no module, so every module may use it; the checks that read the
 * modules' resources are modules of their own, above the modules they read: the outbound rule (`disclosure`) and the
 * re-check of Idempotency-Key replays (`replay-checks`). Another module imports only this file (the lint rule
 * `modules/index-only`, docs/architecture.md).
 */
export { policyOf, requirePolicy } from './policy.ts'
export type { ActionOf, Grant, ResourceKind } from './policy.ts'

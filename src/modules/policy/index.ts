/**
 * The public face of the policy module: what other modules, src/app.ts and src/workers.ts may use of it. The
 * authorization policy (one table), the outbound rule, the re-check of Idempotency-Key replays. Another module
 * imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { asTheyAreNow, mayLearnOf } from './disclosure.ts'
export { policyOf, requirePolicy } from './policy.ts'
export type { ActionOf } from './policy.ts'
export { replayCheckOf } from './replay-checks.ts'

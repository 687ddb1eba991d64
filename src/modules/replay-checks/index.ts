/**
 * The public face of the replay-checks module: what other modules, src/app.ts and src/workers.ts may use of it. The
 * re-check of an Idempotency-Key replay (`replayCheckOf`, given to the platform's `registerIdempotency` by src/app.ts):
 * a route's policy row (the policy module) checked again with the resolvers of the module that owns the resource
 * (events, series, spaces, contacts, automation). No module imports it. Another module imports only this file (the
 * lint rule `modules/index-only`, docs/architecture.md).
 */
export { replayCheckOf } from './replay-checks.ts'

/**
 * The public face of the disclosure module: what other modules, src/app.ts and src/workers.ts may use of it. The
 * outbound rule (docs/security.md, "What leaves the service"): whether a reader, as they are now (`asTheyAreNow`), may
 * be told of a domain event (`mayLearnOf`). It reads the visibility of events, spaces and contacts and the claims of
 * users, so it sits above those modules; the channels that hand domain events out (automation, webhooks, feeds) import
 * it, and the contacts module's timeline is given `mayLearnOf` by src/app.ts. Another module imports only this file
 * (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { actorRefused, asTheyAreNow, mayLearnOf, type Refusal } from './disclosure.ts'

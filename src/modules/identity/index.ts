/**
 * The public face of the identity module: what other modules, src/app.ts and src/workers.ts may use of it. Users as
 * the identity provider tells of them, profiles, the user gate. Another module imports only this file (the lint rule
 * `modules/index-only`, docs/architecture.md).
 */
export { displayProfiles, findProfile, findUser, latestClaims } from './identity.repository.ts'
export { identityModule } from './identity.routes.ts'
// the user lifecycle (the webhook's path) and the user gate, for the SCIM module (docs/scim.md)
export { applyUserChange, type UserChange } from './identity.service.ts'
export { lockUser } from './identity.repository.ts'
export { userGateOf, type DirectoryRoles } from './identity.user-gate.ts'

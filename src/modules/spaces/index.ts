/**
 * The public face of the spaces module: what other modules, src/app.ts and src/workers.ts may use of it. Spaces,
 * their hierarchy, members, managers and public pages. The space managers' permission catalogue is the platform's
 * (platform/auth/manager-permissions.ts); `spaceForEventLink` is given by src/app.ts to the events module, which this
 * one builds on. Another module imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { canManageSpace, findVisibleSpace } from './spaces.access.repository.ts'
export { findPublicSpace } from './spaces.public.repository.ts'
export { resolvePublic } from './spaces.repository.ts'
export { spacesModule } from './spaces.routes.ts'
export { SpaceParams } from './spaces.schemas.ts'
export { spaceForEventLink } from './spaces.service.ts'

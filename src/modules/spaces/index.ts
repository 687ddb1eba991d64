/**
 * The public face of the spaces module: what other modules, src/app.ts and src/workers.ts may use of it. Spaces,
 * their hierarchy, members, managers and public pages. The space managers' permission catalogue is the platform's
 * (platform/auth/manager-permissions.ts); `spaceForEventLink` is given by src/app.ts to the events module, which this
 * one builds on. The guests module's public event pages read here the public spaces of an event, their allow lists of
 * embedding sites and the HTML helpers of the public pages. Another module imports only this file (the lint rule
 * `modules/index-only`, docs/architecture.md).
 */
export { canManageSpace, findVisibleSpace } from './spaces.access.repository.ts'
export { frameAncestors } from './spaces.embed.origins.ts'
export { publicSpacesOfEvent } from './spaces.embed.repository.ts'
export { publicName } from './spaces.names.ts'
export { eventPagePath, htmlPath as spacePagePath, jsonForScript, prefersHtml } from './spaces.public-html.ts'
export { findPublicSpace, findWithdrawnSpace, ownerProfile } from './spaces.public.repository.ts'
export { resolvePublic } from './spaces.repository.ts'
export { spacesModule } from './spaces.routes.ts'
export { SpaceParams } from './spaces.schemas.ts'
export { spaceForEventLink } from './spaces.service.ts'

/**
 * The public face of the api-keys module: what other modules, src/app.ts and src/workers.ts may use of it. Service
 * accounts and their API keys (docs/api-keys.md); the bearer check app.ts gives the authentication plugin. Another
 * module imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export {
  accountNow, accountUserId, createApiKeyEngine, scopedPermissions, type AccountNow, type ApiKeyEngine
} from './api-keys.auth.ts'
export { API_KEY_PATTERN } from './api-keys.format.ts'
export { apiKeysModule } from './api-keys.routes.ts'
export { SCOPES, type Scope } from './api-keys.schemas.ts'

/**
 * The public face of the SCIM module: what src/app.ts may use of it. SCIM 2.0 provisioning of the tenant's users and
 * groups (docs/scim.md); it imports the identity module (the user lifecycle, the user gate). Another module imports
 * only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { scimModule } from './scim.routes.ts'

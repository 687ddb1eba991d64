/**
 * The public face of the privacy module: data-subject export and erasure (GDPR articles 15 and 17; docs/privacy.md).
 * It reads and changes the rows of every module that holds a person's data, so it sits above them all and no module
 * imports it. Another module imports only this file (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { privacyModule } from './privacy.routes.ts'

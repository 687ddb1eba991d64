/**
 * The public face of the guests module: its routes, for src/app.ts. Another module imports only this file (the lint
 * rule `modules/index-only`, docs/architecture.md).
 */
export { guestsModule } from './guests.module.ts'

/**
 * The public face of the webhooks module: what other modules, src/app.ts and src/workers.ts may use of it. Outbound
 * webhook subscriptions and their deliveries. Another module imports only this file (the lint rule `modules/index-
 * only`, docs/architecture.md).
 */
export { createWebhookEngine, startWebhookWorker } from './webhooks.delivery.ts'
export { webhooksModule } from './webhooks.routes.ts'

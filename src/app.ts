/**
 * The whole application as one Fastify instance: the platform conventions first (errors,
 * `$schema` links, OpenAPI, authentication, rate limits, idempotency), then the explicit list of
 * feature modules. `server.ts` is the process around it; tests build it with their own config
 * and database.
 */
import crypto from 'node:crypto'
import Fastify, { type FastifyServerOptions } from 'fastify'
import type { Config } from './config.ts'
import { createDatabase, type DatabaseHandle } from './platform/db/database.ts'
import { migrate } from './platform/db/migrate.ts'
import { checkMessages } from './platform/i18n/i18n.ts'
import { checkSystemLogin } from './platform/db/tenant.ts'
import { registerErrorHandling, sendProblem } from './platform/http/error-handler.ts'
import { registerSchemaLinks } from './platform/http/schema-links.ts'
import { registerOpenApi } from './platform/http/openapi.ts'
import { registerCors } from './platform/http/cors.ts'
import { serializerCompiler } from './platform/http/serialization.ts'
import { findTextProblem, validatorCompiler } from './platform/http/validation.ts'
import { ApiError, invalidField } from './platform/http/errors.ts'
import { registerIdempotency } from './platform/http/idempotency.ts'
import { replayCheckOf } from './modules/replay-checks/index.ts'
import { registerAuth } from './platform/auth/plugin.ts'
import { registerMetrics } from './platform/metrics.ts'
import { registerTenantWrites, TenantWrites } from './platform/tenant-writes.ts'
import { registerCompression } from './platform/http/compression.ts'
import { registerJsonBodies } from './platform/http/json-bodies.ts'
import { registerNotModified } from './platform/http/not-modified.ts'
import { bindTenant, registerRequestLog, RequestLogController, unmatchedRouteLogger } from './platform/request-log.ts'
import { createTokenVerifier, type TokenVerifier } from './platform/auth/verify.ts'
import { createRateLimiter, refusalCharge, registerRateLimit, type RateLimiter } from './platform/rate-limit.ts'
import { TOKEN_SECRET_WARNING, withTokenSecret } from './platform/secrets.ts'
import type { AppContext, Module } from './platform/app-context.ts'
import { configureAuditKey, registerAuditContext } from './platform/audit.ts'
import path from 'node:path'
import { healthModule } from './modules/health/index.ts'
import { identityModule } from './modules/identity/index.ts'
import { contactsModule } from './modules/contacts/index.ts'
import { spaceForEventLink, spacesModule } from './modules/spaces/index.ts'
import { eventsModule, newEventBodyCache, onPublishedEventChange } from './modules/events/index.ts'
import { applyScopedEdit, seriesModule } from './modules/series/index.ts'
import {
  attendeeExportsModule, attendeesModule, copyQuestions, eventFigures, registrationToCopy, settleWaitlist,
  tellGuestsOfChange
} from './modules/attendees/index.ts'
import { eventContentModule } from './modules/event-content/index.ts'
import { copyManagers, eventManagersModule } from './modules/event-managers/index.ts'
import { automationModule, createAutomationEngine, snapshotRules } from './modules/automation/index.ts'
import { mayLearnOf } from './modules/disclosure/index.ts'
import { notificationsModule } from './modules/notifications/index.ts'
import { feedsModule } from './modules/feeds/index.ts'
import { calendarImportModule } from './modules/calendar-import/index.ts'
import { guestsModule } from './modules/guests/index.ts'
import { privacyModule } from './modules/privacy/index.ts'
import { scimModule } from './modules/scim/index.ts'
import { auditModule } from './modules/audit/index.ts'
import { createWebhookEngine, webhooksModule } from './modules/webhooks/index.ts'
import { apiKeysModule, createApiKeyEngine } from './modules/api-keys/index.ts'
import { startBackgroundWork } from './workers.ts'

/**
 * The feature modules, in the order their routes are registered. A module that needs something of a module built on
 * it (which imports it, so it cannot import that one back) is given it here (its `*.needs.ts`; docs/architecture.md,
 * "Who calls whom").
 */
// the guests of a published event that moves are told (docs/guests.md); the events module imports no module above it
onPublishedEventChange(tellGuestsOfChange)

const MODULES: Module[] = [
  healthModule,
  identityModule,
  contactsModule({ mayLearnOf, settleWaitlist, snapshotRules }),
  spacesModule,
  eventsModule({
    eventFigures,
    applyScopedEdit,
    spaceForEventLink,
    // what a clone copies of the modules built on events (POST /events/{id}/clone)
    cloneParts: { registration: registrationToCopy, questions: copyQuestions, managers: copyManagers }
  }),
  seriesModule,
  attendeesModule,
  eventManagersModule,
  eventContentModule,
  // after the event content: the routes' order is the OpenAPI document's
  attendeeExportsModule,
  automationModule,
  notificationsModule,
  webhooksModule,
  feedsModule,
  calendarImportModule,
  guestsModule,
  privacyModule,
  scimModule,
  auditModule,
  apiKeysModule
]

export interface BuildOptions {
  /** an open database; otherwise one is created from the config and closed with the app */
  database?: DatabaseHandle
  /** check the system login and, unless config.migrateAtStart is false, run migrations before serving (default true) */
  migrate?: boolean
  logger?: FastifyServerOptions['logger']
  verifier?: TokenVerifier
  rateLimiter?: RateLimiter
  /** the per-address limiter of requests without a valid token */
  anonymousRateLimiter?: RateLimiter
}

/** Config.trustProxy as Fastify takes it (a hop count as the function Fastify itself would make of it). */
function trustProxyOption (trust: Config['trustProxy']): FastifyServerOptions['trustProxy'] {
  if (typeof trust === 'number') return (_address: string, hop: number) => hop < trust
  return typeof trust === 'boolean' ? trust : [...trust]
}

export async function buildApp (config: Config, options: BuildOptions = {}) {
  // before anything opens: the modules' config carries TOKEN_SECRET, or the secret kept in DATA_DIR (secrets.ts)
  const sealed = withTokenSecret(config)
  // every guest text of every language parses, with the arguments of its English original (or the start stops)
  checkMessages()
  const handle = options.database ?? await createDatabase({
    databaseUrl: config.databaseUrl,
    databaseAppUrl: config.databaseAppUrl,
    databaseWorkerUrl: config.databaseWorkerUrl,
    pgliteDir: path.join(config.dataDir, 'pgdata')
  })
  if (options.migrate !== false) {
    // at start, before anything changes: the login of cross-tenant work must pass row-level security
    try {
      await checkSystemLogin(handle)
    } catch (err) {
      if (options.database === undefined) await handle.close()
      throw err
    }
    // MIGRATE_AT_START=false: a separate step migrates as the owner before the start (docs/deployment.md)
    if (config.migrateAtStart) await migrate(handle)
  }

  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    genReqId: () => crypto.randomUUID(),
    // every line of a request names its reqId, route and tenant (request-log.ts)
    logController: new RequestLogController(),
    childLoggerFactory: unmatchedRouteLogger,
    requestIdHeader: false,
    // request.ip (the anonymous rate-limit key) believes X-Forwarded-For only from these proxies
    trustProxy: trustProxyOption(config.trustProxy),
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Errors the router raises before any route runs (a bad percent-encoding, an over-long
    // parameter) leave as ErrorModel like every other error.
    frameworkErrors: (err, request, reply) => {
      const status =
        typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400
      void sendProblem(
        reply,
        new ApiError(status, status === 414 ? 'a path segment is too long' : 'the request URL is malformed', [
          {
            location: 'path',
            message:
              status === 414
                ? 'expected path parameters of at most 500 characters'
                : 'expected a valid percent-encoded URL'
          }
        ]),
        config.baseUrl
      )
    }
  })
  // first of all hooks: every request's work knows its request (the audit log's actor, audit.ts)
  registerAuditContext(app)
  if (sealed.tokenSecret !== undefined) configureAuditKey(sealed.tokenSecret)
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  registerRequestLog(app)
  // JSON bodies (application/json, application/*+json) and 415 for any other type (json-bodies.ts)
  registerJsonBodies(app)

  // Before any schema runs: values no route can store (docs/api-conventions.md, "Bodies").
  app.addHook('preValidation', async (request) => {
    const problem = findTextProblem(request.query, 'query') ?? findTextProblem(request.params, 'path') ??
      (Buffer.isBuffer(request.body) ? undefined : findTextProblem(request.body, 'body'))
    if (problem !== undefined) throw invalidField(problem.location, problem.message)
  })

  registerErrorHandling(app, config.baseUrl)
  // before the routes' own onSend hooks (compression): a matching If-None-Match answers 304 (not-modified.ts)
  registerNotModified(app)
  // before every route: each route gets its compression hook when it is added
  await registerCompression(app)
  registerSchemaLinks(app, config.baseUrl)
  await registerOpenApi(app)
  // before authentication: a preflight carries no token (CORS_ORIGINS; off when unset)
  await registerCors(app, config.corsOrigins)

  const ctx: AppContext = {
    config: sealed,
    db: handle.db,
    systemDb: handle.systemDb,
    dbKind: handle.kind,
    userGate: { current: undefined },
    writes: new TenantWrites(),
    eventBodies: newEventBodyCache(),
    engines: {
      automation: createAutomationEngine(handle.db, handle.systemDb, sealed),
      webhooks: createWebhookEngine(handle.db, sealed.automationWebhookAllow),
      apiKeys: createApiKeyEngine(handle.db)
    }
  }
  // PostgreSQL without TOKEN_SECRET: instances that do not share DATA_DIR would refuse each other's sync tokens
  if (config.tokenSecret === undefined && config.databaseUrl !== undefined) app.log.warn(TOKEN_SECRET_WARNING)
  const verifier = options.verifier ?? await createTokenVerifier(config)
  if (verifier.devMode) {
    app.log.warn(
      `DEV MODE: OIDC_ISSUER is unset, so only the dev signing key in ${config.dataDir} is trusted. Mint tokens with ` +
      '"npm run token". Never run this in production.'
    )
  }
  const limiter = options.rateLimiter ?? createRateLimiter({ ...config.rateLimit, redisUrl: config.redisUrl })
  const anonymousLimiter =
    options.anonymousRateLimiter ??
    createRateLimiter({ ...config.anonymousRateLimit, redisUrl: config.redisUrl, prefix: 'rl:anon' })
  // a refused token draws on its address's bucket before the 401; then every other request draws on
  // its caller's bucket, or its address's when it carries no valid token
  registerAuth(app, verifier, ctx.userGate, refusalCharge(anonymousLimiter), ctx.engines.apiKeys)
  app.addHook('onRequest', bindTenant)
  registerRateLimit(app, limiter, anonymousLimiter)
  registerIdempotency(app, handle.db, replayCheckOf)
  registerTenantWrites(app, ctx.writes)
  // GET /metrics and the request metrics, only with METRICS_TOKEN
  if (config.metricsToken !== undefined) {
    registerMetrics(app, { token: config.metricsToken, db: handle.db, systemDb: handle.systemDb })
  }

  for (const mod of MODULES) await app.register(mod(ctx))

  app.addHook('onClose', async () => {
    await ctx.engines.automation.queue.stop().catch(() => {})
    // the API keys' last uses waiting for the audit log, before the database closes
    await ctx.engines.apiKeys.close()
    await limiter.close()
    await anonymousLimiter.close()
    if (options.database === undefined) await handle.close()
  })
  // every background loop (src/workers.ts), registered last, so they stop before the queue and the database close
  startBackgroundWork(app, ctx)
  return { app, ctx, database: handle }
}

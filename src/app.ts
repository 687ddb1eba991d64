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
import { registerErrorHandling, sendProblem } from './platform/http/error-handler.ts'
import { registerSchemaLinks } from './platform/http/schema-links.ts'
import { registerOpenApi } from './platform/http/openapi.ts'
import { serializerCompiler } from './platform/http/serialization.ts'
import { findTextProblem, validatorCompiler } from './platform/http/validation.ts'
import { ApiError, invalidField } from './platform/http/errors.ts'
import { registerIdempotency } from './platform/http/idempotency.ts'
import { registerAuth } from './platform/auth/plugin.ts'
import { createTokenVerifier, type TokenVerifier } from './platform/auth/verify.ts'
import { createRateLimiter, registerRateLimit, type RateLimiter } from './platform/rate-limit.ts'
import type { AppContext, Module } from './platform/app-context.ts'
import path from 'node:path'
import { healthModule } from './modules/health/health.routes.ts'
import { identityModule } from './modules/identity/identity.routes.ts'
import { contactsModule } from './modules/contacts/contacts.routes.ts'
import { spacesModule } from './modules/spaces/spaces.routes.ts'
import { eventsModule } from './modules/events/events.routes.ts'
import { seriesModule } from './modules/series/series.routes.ts'
import { eventCollabModule } from './modules/event-collab/event-collab.routes.ts'
import { automationModule } from './modules/automation/automation.routes.ts'

/** The feature modules, in the order their routes are registered. */
const MODULES: Module[] = [
  healthModule,
  identityModule,
  contactsModule,
  spacesModule,
  eventsModule,
  seriesModule,
  eventCollabModule,
  automationModule
]

export interface BuildOptions {
  /** an open database; otherwise one is created from the config and closed with the app */
  database?: DatabaseHandle
  /** run migrations before serving (default true) */
  migrate?: boolean
  logger?: FastifyServerOptions['logger']
  verifier?: TokenVerifier
  rateLimiter?: RateLimiter
}

export async function buildApp (config: Config, options: BuildOptions = {}) {
  const handle = options.database ?? await createDatabase({
    databaseUrl: config.databaseUrl,
    databaseAppUrl: config.databaseAppUrl,
    pgliteDir: path.join(config.dataDir, 'pgdata')
  })
  if (options.migrate !== false) await migrate(handle)

  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Errors the router raises before any route runs (a bad percent-encoding, an over-long
    // parameter) leave as ErrorModel like every other error.
    frameworkErrors: (err, request, reply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400
      void sendProblem(reply, new ApiError(status, status === 414 ? 'a path segment is too long' : 'the request URL is malformed', [
        { location: 'path', message: status === 414 ? 'expected path parameters of at most 500 characters' : 'expected a valid percent-encoded URL' }
      ]), config.baseUrl)
    }
  })
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  app.addContentTypeParser(['application/merge-patch+json'], { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  // Before any schema runs: values no route can store (docs/api-conventions.md, "Bodies").
  app.addHook('preValidation', async (request) => {
    const problem = findTextProblem(request.query, 'query') ?? findTextProblem(request.params, 'path') ??
      (Buffer.isBuffer(request.body) ? undefined : findTextProblem(request.body, 'body'))
    if (problem !== undefined) throw invalidField(problem.location, problem.message)
  })

  registerErrorHandling(app, config.baseUrl)
  registerSchemaLinks(app, config.baseUrl)
  await registerOpenApi(app, config.baseUrl)

  const ctx: AppContext = { config, db: handle.db, dbKind: handle.kind, userGate: { current: undefined } }
  const verifier = options.verifier ?? await createTokenVerifier(config)
  if (verifier.devMode) {
    app.log.warn(`DEV MODE: OIDC_ISSUER is unset, so only the dev signing key in ${config.dataDir} is trusted. Mint tokens with "npm run token". Never run this in production.`)
  }
  registerAuth(app, verifier, ctx.userGate)
  const limiter = options.rateLimiter ?? createRateLimiter({ ...config.rateLimit, redisUrl: config.redisUrl })
  registerRateLimit(app, limiter)
  registerIdempotency(app, handle.db)

  for (const mod of MODULES) await app.register(mod(ctx))

  app.addHook('onClose', async () => {
    await limiter.close()
    if (options.database === undefined) await handle.close()
  })
  return { app, ctx, database: handle }
}

/**
 * Liveness and readiness. `/health` answers while the process runs; `/ready` also asks the
 * database and answers 503 while it is unreachable, so a load balancer can take the instance out.
 * In OIDC mode it then asks the identity provider's state: 503 naming it while discovery or the
 * JWKS does not answer, or names another issuer (the provider is asked again at most every 5 s,
 * by this probe or by a request; docs/authentication.md).
 */
import { Type } from '@sinclair/typebox'
import { defineModule } from '../../platform/app-context.ts'
import { ping } from '../../platform/db/database.ts'
import { model, StringEnum } from '../../platform/http/schema.ts'
import { error503ServiceUnavailable } from '../../platform/http/errors.ts'
import { sendProblem } from '../../platform/http/error-handler.ts'

export const SERVICE_NAME = 'collaboration-service'

export const LivenessOutputBody = model('LivenessOutputBody', {
  service: Type.String({ description: 'Service name', examples: [SERVICE_NAME] }),
  status: StringEnum(['ok'] as const, { description: 'ok while the process runs' })
})

export const ReadinessOutputBody = model('ReadinessOutputBody', {
  service: Type.String({ description: 'Service name' }),
  status: StringEnum(['ok'] as const, { description: 'ok when the database answers' }),
  database: Type.String({ description: 'Database kind: pg or pglite' })
})

const READY_TIMEOUT_MS = 2_000
const tags = ['Health']

export const healthModule = defineModule(async (app, ctx) => {
  app.get('/health', {
    schema: {
      description: 'Answers 200 while the process runs, without touching the database. Use it as the liveness probe ' +
        'of an orchestrator.',
      operationId: 'get-health',
      summary: 'Liveness check',
      tags,
      response: { 200: LivenessOutputBody }
    }
  }, async () => ({ service: SERVICE_NAME, status: 'ok' as const }))

  app.get('/ready', {
    schema: {
      description: 'Answers 200 when the database answers, 503 otherwise. Use it as the readiness probe: an instance ' +
        'that is not ready should get no traffic.',
      operationId: 'get-ready',
      summary: 'Readiness check (database reachable)',
      tags,
      response: { 200: ReadinessOutputBody }
    }
  }, async (_request, reply) => {
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        ping(ctx.db),
        new Promise((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS)
        })
      ])
    } catch {
      throw error503ServiceUnavailable('database unreachable')
    } finally {
      clearTimeout(timer)
    }
    const provider = app.identityProvider
    if (provider !== null) {
      const state = await provider.check(READY_TIMEOUT_MS)
      if (state.kind !== 'ready') {
        // its changes are logged once by the auth plugin: not an error line at every probe
        return sendProblem(
          reply,
          error503ServiceUnavailable(`identity provider ${state.kind} (${provider.issuer}): ${state.reason}`),
          ctx.config.baseUrl
        )
      }
    }
    return { service: SERVICE_NAME, status: 'ok' as const, database: ctx.dbKind }
  })
})

/**
 * OpenAPI 3.1 at `/openapi.json` and interactive docs at `/docs`, generated from the route
 * schemas. Every `/api/v1` route gets the bearer security requirement (unless it opted out) and
 * the ErrorModel for its error statuses, so the document states what the error handler does. The
 * permission a route declares appears as `x-permission` on its operation.
 */
import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { ErrorModel } from './errors.ts'
import { declaredPermission } from '../auth/permissions.ts'

// one object for all: serializers are shared by schema object (compile-on-demand.ts)
const ERROR_RESPONSE = { ...ErrorModel, description: 'Error' }
const ERROR_STATUSES = ['400', '401', '403', '404', '409', '412', '413', '415', '422', '429', '500', '503']

export async function registerOpenApi (app: FastifyInstance, baseUrl: string): Promise<void> {
  app.addHook('onRoute', (route) => {
    if (route.schema === undefined || route.url.startsWith('/docs')) return
    const isApi = route.url.startsWith('/api/v1/')
    const mode = route.config?.auth ?? (isApi ? 'required' : 'none')
    const response = { ...(route.schema.response as Record<string, unknown> | undefined ?? {}) }
    for (const code of ERROR_STATUSES) {
      if (!isApi && !['400', '404', '500', '503'].includes(code)) continue
      if (mode === 'none' && ['401', '403'].includes(code)) continue
      response[code] ??= ERROR_RESPONSE
    }
    const permission = declaredPermission(route.onRequest)
    route.schema = {
      ...route.schema,
      response,
      // the permission the route requires (route matrix, clients): `x-permission: contacts:write`
      ...(permission !== undefined ? { 'x-permission': permission } : {}),
      ...(isApi && mode !== 'none' ? { security: mode === 'optional' ? [{ bearerAuth: [] }, {}] : [{ bearerAuth: [] }] } : {})
    }
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Collaboration Service API',
        version: '1.0.0',
        description: 'Contacts, spaces, events with drafts and recurring series, attendees, managers, automation.'
      },
      servers: [{ url: baseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }
        }
      }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}`
    }
  })
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } })

  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'none' } }, async () => app.swagger())
}

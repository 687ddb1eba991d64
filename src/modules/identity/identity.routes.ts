/**
 * Identity: who the caller is (`GET /api/v1/auth/me`). The identity-provider webhook and the
 * user lifecycle live beside it in this module.
 */
import { defineModule } from '../../platform/app-context.ts'
import { AuthContext } from './identity.schemas.ts'

export const identityModule = defineModule(async (app) => {
  app.get('/api/v1/auth/me', {
    schema: {
      operationId: 'get-auth-me',
      summary: 'Identity and permissions of the caller',
      tags: ['Identity'],
      response: { 200: AuthContext }
    }
  }, async (request) => {
    const a = request.auth
    return {
      user_id: a.userId,
      tenant_id: a.tenantId,
      email: a.email ?? '',
      roles: [...a.roles],
      effective_role: a.effectiveRole,
      permissions: [...a.permissions],
      org_id: a.orgId
    }
  })
})

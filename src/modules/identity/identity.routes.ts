/**
 * Identity: who the caller is (`GET /api/v1/auth/me`), the identity-provider webhook
 * (identity.idp-webhook.routes.ts) and the user lifecycle it drives: profiles in `users`, deliveries in
 * `idp_deliveries`, and the `UserGate` that refuses tokens of removed or inactive users.
 * docs/identity.md describes the rules and the resync.
 */
import { defineModule } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { findUser } from './identity.repository.ts'
import { AuthContext } from './identity.schemas.ts'
import { idpWebhookRoutes } from './identity.idp-webhook.routes.ts'
import { userGateOf } from './identity.user-gate.ts'

export const identityModule = defineModule(async (app, ctx) => {
  const gate = userGateOf(ctx)
  ctx.userGate.current = gate.check

  app.get('/api/v1/auth/me', {
    schema: {
      description: 'The tenant, user, role and permissions the bearer token stands for. Call it once after sign-in ' +
        'to decide what a client offers its user.',
      operationId: 'get-auth-me',
      summary: 'Identity and permissions of the caller',
      tags: ['Identity'],
      response: { 200: AuthContext }
    }
  }, async (request) => {
    const a = request.auth
    // A token without an e-mail claim (machine users, some providers) takes the profile's.
    const email = a.email ?? (await withTenant(ctx.db, a, trx => findUser(trx, a.tenantId, a.userId)))?.email ?? null
    return {
      user_id: a.userId,
      tenant_id: a.tenantId,
      email: email ?? '',
      roles: [...a.roles],
      effective_role: a.effectiveRole,
      permissions: [...a.permissions],
      org_id: a.orgId
    }
  })

  await app.register(idpWebhookRoutes(gate)(ctx))
})

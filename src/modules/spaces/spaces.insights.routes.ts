/**
 * What happens in a space: its activity (newest first), its analytics, and the events linked to it.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { requirePermission } from '../../platform/auth/permissions.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { PageQuery } from '../../platform/http/schema.ts'
import * as repo from './spaces.repository.ts'
import { PagedBodySpaceActivity, SpaceParams } from './spaces.schemas.ts'
import { visibleOr404 } from './spaces.service.ts'

const tags = ['Spaces']

export function registerInsightRoutes (app: App, { db }: AppContext): void {
  app.get('/api/v1/spaces/:id/activity', {
    schema: { operationId: 'list-space-activity', summary: 'Recent activity of a space, newest first', tags, params: SpaceParams, querystring: PageQuery, response: { 200: PagedBodySpaceActivity } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => {
    const q = request.query
    const { items, total } = await withTenant(db, request.auth, async (trx) => {
      await visibleOr404(trx, request.auth, request.params.id)
      return await repo.listActivity(trx, request.auth.tenantId, request.params.id, q.page, q.size)
    })
    return { items, page: q.page, size: q.size, total }
  })
}

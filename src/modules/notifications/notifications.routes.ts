/**
 * Notifications as administrators see them: `GET /api/v1/notifications` lists the tenant's
 * notification outbox, newest first, filtered by status, channel and time, so that failed and
 * undeliverable notifications are visible (docs/notifications.md, "Seeing what failed"). Tenant
 * admins only (`notification:read` → `tenant:admin`). The rows are written by
 * `src/platform/notifications/` and the modules that queue notifications; this module only reads.
 */
import { defineModule } from '../../platform/app-context.ts'
import { invalidField } from '../../platform/http/errors.ts'
import { answerPage, operationsTagged } from '../../platform/http/routes.ts'
import { listNotifications } from './notifications.repository.ts'
import { requirePolicy } from '../policy/index.ts'
import { ListNotificationsQuery, PagedBodyNotification } from './notifications.schemas.ts'

const operation = operationsTagged('Notifications')

export const notificationsModule = defineModule(async (app, { db }) => {
  app.get('/api/v1/notifications', operation('list-notifications',
    "List the tenant's notifications, newest first, by status, channel and time (tenant admins)", {
      description: 'The tenant\'s notification outbox: what was sent, what waits and what failed, newest first. Use ' +
        'it to follow up on mails that did not go out.',
      querystring: ListNotificationsQuery,
      response: { 200: PagedBodyNotification }
    }, requirePolicy('notification', 'read')), async (request) => {
    const q = request.query
    if (
      q.created_after !== undefined &&
      q.created_before !== undefined &&
      Date.parse(q.created_before) < Date.parse(q.created_after)
    ) {
      throw invalidField('query.created_before', 'expected created_before >= created_after', q.created_before)
    }
    return await answerPage(db, request, trx => listNotifications(trx, request.auth, q))
  })
})

/**
 * What happens in a space: its activity (newest first), its analytics (for those who manage the
 * space), and the events linked to it (links live in the events module's `event_spaces`).
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import {
  ApiError, error403Forbidden, error404NotFound, error409Conflict, invalidField
} from '../../platform/http/errors.ts'
import { createdRoute, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { emit } from '../../platform/outbox.ts'
import { lockEventForWrite } from '../events/events.access.repository.ts'
import { activeManager } from './spaces.access.repository.ts'
import * as insights from './spaces.insights.repository.ts'
import {
  AddSpaceEventBody, PagedBodySpaceActivity, PagedBodySpaceEvent, SpaceAnalyticsResult, SpaceEventLink,
  SpaceEventParams, SpaceParams
} from './spaces.schemas.ts'
import { lockManageable, visibleOr404 } from './spaces.service.ts'
import { requirePolicy } from '../policy/policy.ts'
import { spaceEvent } from './spaces.events.ts'
import { spacePageRoute } from './spaces.pages.routes.ts'

const operation = operationsTagged('Spaces')

export function registerInsightRoutes (app: App, { db }: AppContext): void {
  spacePageRoute(app, db, 'activity', 'list-space-activity', 'Recent activity of a space, newest first',
    PagedBodySpaceActivity, (trx, auth, space, q, counting) => insights.listActivity(trx, auth, space.id, q, counting),
    insights.ACTIVITY_COUNTS_TRIGGER)

  app.get('/api/v1/spaces/:id/analytics', operation('get-space-analytics', 'Attendance, RSVPs and member growth of a space (for its managers)', {
    params: SpaceParams, response: { 200: SpaceAnalyticsResult }
  }, requirePolicy('space', 'read')), async request => {
    const auth = request.auth
    return await withTenant(db, auth, async trx => {
      const space = await visibleOr404(trx, auth, request.params.id)
      const manages =
        auth.permissions.has('tenant:admin') ||
        space.creator_id === auth.userId ||
        (await activeManager(trx, auth.tenantId, space.id, auth.userId)) !== undefined
      if (!manages) throw error403Forbidden('only the creator, a space manager or an admin may read the analytics')
      const [events, growth, members] = [
        await insights.eventFigures(trx, auth.tenantId, space.id),
        await insights.memberGrowth(trx, auth.tenantId, space.id),
        await insights.activeMemberCount(trx, auth.tenantId, space.id)
      ]
      return insights.analyticsOf(events, growth, members)
    })
  })

  spacePageRoute(app, db, 'events', 'list-space-events', 'Events of a space the caller can see, latest start first',
    PagedBodySpaceEvent, (trx, auth, space, q) => insights.listSpaceEvents(trx, auth, space.id, q))

  createdRoute(app, db, 'post', '/api/v1/spaces/:id/events', operation('add-space-event', 'Add an event the caller can see to a space they manage', {
    params: SpaceParams, body: AddSpaceEventBody, response: { 201: SpaceEventLink }
  }, requirePolicy('space', 'events')), async (trx, { auth, params, body }) => {
    const eventId = body.event_id
    const space = await lockManageable(trx, auth, params.id, 'space:events')
    if (space.status === 'archived') throw error409Conflict('an archived space cannot take events')
    // linking is a write on both ends: the event too (docs/authorization.md, event:link_space)
    const event = await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: false }).catch(
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 404) {
          throw invalidField('body.event_id', 'event not found', eventId)
        }
        throw err
      }
    )
    const created = await insights.insertSpaceEvent(trx, auth.tenantId, space.id, event.id, space.org_id)
    if (created === undefined) {
      throw error409Conflict('the event already belongs to this space', [
        { location: 'body.event_id', message: 'already linked', value: eventId }
      ])
    }
    await emit(trx, spaceEvent(auth, space.id, 'space.event_added', { space_id: space.id, event_id: event.id }))
    return created
  })

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id/events/:event_id', operation('remove-space-event', 'Remove an event from a space', {
    params: SpaceEventParams
  }, requirePolicy('space', 'events')), async (trx, { auth, params: { id, event_id: eventId } }) => {
    await lockManageable(trx, auth, id, 'space:events')
    await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: false })
    if (!(await insights.deleteSpaceEvent(trx, auth.tenantId, id, eventId))) {
      throw error404NotFound('the event does not belong to this space')
    }
    await emit(trx, spaceEvent(auth, id, 'space.event_removed', { space_id: id, event_id: eventId }))
  })
}

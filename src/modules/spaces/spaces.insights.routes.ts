/**
 * What happens in a space: its activity (newest first), its analytics (for those who manage the
 * space), and the events linked to it (links live in the events module's `event_spaces`).
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { CSV_CHUNK_ROWS, csvBody, CsvQuery, sendCsv, type CsvColumn } from '../../platform/http/csv.ts'
import type { KeyValue } from '../../platform/http/cursor.ts'
import {
  ApiError, error403Forbidden, error404NotFound, error409Conflict, invalidField
} from '../../platform/http/errors.ts'
import { createdRoute, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { emit } from '../../platform/outbox.ts'
import { lockEventForWrite } from '../events/index.ts'
import { activeManager } from './spaces.access.repository.ts'
import * as insights from './spaces.insights.repository.ts'
import {
  AddSpaceEventBody, PagedBodySpaceActivity, PagedBodySpaceEvent, SpaceAnalyticsResult, SpaceEventLink,
  SpaceEventParams, SpaceParams
} from './spaces.schemas.ts'
import { lockManageable, visibleOr404 } from './spaces.service.ts'
import { requirePolicy } from '../policy/index.ts'
import { spaceEvent } from './spaces.events.ts'
import { spacePageRoute } from './spaces.pages.routes.ts'

const operation = operationsTagged('Spaces')

/** The space whose analytics the caller asks for: 404 unless visible, 403 unless creator, space manager or admin. */
async function analyticsSpace (trx: Tx, auth: AuthContext, id: number) {
  const space = await visibleOr404(trx, auth, id)
  const manages =
    auth.permissions.has('tenant:admin') ||
    space.creator_id === auth.userId ||
    (await activeManager(trx, auth.tenantId, space.id, auth.userId)) !== undefined
  if (!manages) throw error403Forbidden('only the creator, a space manager or an admin may read the analytics')
  return space
}

/** The columns of the analytics export: the figures of `events_performance`, in order. */
const ANALYTICS_CSV_COLUMNS: ReadonlyArray<CsvColumn<insights.EventFigures>> = [
  { header: 'event_id', cell: e => e.event_id },
  { header: 'title', cell: e => e.title },
  { header: 'status', cell: e => e.status },
  { header: 'start_at', cell: e => e.start_at },
  { header: 'end_at', cell: e => e.end_at },
  { header: 'upcoming', cell: e => e.upcoming },
  { header: 'rsvps', cell: e => e.rsvps },
  { header: 'attended', cell: e => e.attended },
  { header: 'no_shows', cell: e => e.no_shows },
  { header: 'rate', cell: e => insights.performanceOf(e).rate },
  { header: 'needs_care', cell: e => insights.performanceOf(e).needs_care }
]

export function registerInsightRoutes (app: App, { db }: AppContext): void {
  spacePageRoute(app, db, 'activity', 'list-space-activity', 'Recent activity of a space, newest first',
    'What happened in a space lately, newest first: edits, publishing, people and events. Use it for an activity ' +
      'feed.',
    PagedBodySpaceActivity, (trx, auth, space, q, counting) => insights.listActivity(trx, auth, space.id, q, counting),
    insights.ACTIVITY_COUNTS_TRIGGER)

  app.get('/api/v1/spaces/:id/analytics', operation('get-space-analytics',
    'Attendance, RSVPs and member growth of a space (for its managers)', {
      description: 'Attendance, answers and member growth of the space\'s events, for its managers. Use the CSV ' +
        'export to work with the figures per event.',
      params: SpaceParams,
      response: { 200: SpaceAnalyticsResult }
    }, requirePolicy('space', 'read')), async request => {
    const auth = request.auth
    return await withTenant(db, auth, async trx => {
      const space = await analyticsSpace(trx, auth, request.params.id)
      const [events, growth, members] = [
        await insights.eventFigures(trx, auth, space.id),
        await insights.memberGrowth(trx, auth.tenantId, space.id),
        await insights.activeMemberCount(trx, auth.tenantId, space.id)
      ]
      return insights.analyticsOf(events, growth, members)
    })
  })

  app.get('/api/v1/spaces/:id/analytics/export', operation('export-space-analytics',
    'The per-event analytics figures of a space as CSV (for its managers)', {
      description: 'The analytics figures of every event of the space as a CSV file, one row per event. For ' +
        'spreadsheets and reports.',
      params: SpaceParams,
      querystring: CsvQuery,
      produces: ['text/csv'],
      response: {
        200: csvBody(
          'RFC 4180 CSV (CRLF, header row): one line per linked event with the figures of events_performance ' +
          '(every linked event, not only the first 50), latest start first. Text beginning with = + - @ tab or CR ' +
          'is prefixed with \'. A failure after the first byte cuts the transfer short (docs/exports.md)',
        `${ANALYTICS_CSV_COLUMNS.map(c => c.header).join(',')}\r\n` +
          '41,Spring meetup,published,2026-04-02T17:00:00.000Z,2026-04-02T19:00:00.000Z,false,12,9,2,0.75,false\r\n'
        )
      }
    }, requirePolicy('space', 'read')), async (request, reply) => {
    const auth = request.auth
    const space = await withTenant(db, auth, trx => analyticsSpace(trx, auth, request.params.id))
    return await sendCsv(
      reply,
      `space-${space.id}-analytics.csv`,
      ANALYTICS_CSV_COLUMNS,
      async (after: KeyValue[] | undefined) => await withTenant(db, auth, trx =>
        insights.eventFigures(trx, auth, space.id, { after, limit: CSV_CHUNK_ROWS })
      ),
      insights.figuresKey,
      { bom: request.query.bom }
    )
  })

  spacePageRoute(app, db, 'events', 'list-space-events', 'Events of a space the caller can see, latest start first',
    'The events linked to the space that the caller can see, latest start first. Events of a space can also be ' +
      'read from its calendar feed.',
    PagedBodySpaceEvent, (trx, auth, space, q) => insights.listSpaceEvents(trx, auth, space.id, q))

  createdRoute(app, db, 'post', '/api/v1/spaces/:id/events', operation('add-space-event',
    'Add an event the caller can see to a space they manage', {
      description: 'Links an event the caller can see to a space they manage. The event is not copied: it appears in ' +
        'both places.',
      params: SpaceParams,
      body: AddSpaceEventBody,
      response: { 201: SpaceEventLink }
    }, requirePolicy('space', 'events')), async (trx, { auth, params, body }) => {
    const eventId = body.event_id
    const space = await lockManageable(trx, auth, params.id, 'space:events')
    if (space.status === 'archived') {
      throw error409Conflict('an archived space cannot take events', [], 'space_archived')
    }
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
      ], 'already_linked')
    }
    await emit(trx, spaceEvent(auth, space.id, 'space.event_added', { space_id: space.id, event_id: event.id }))
    return created
  })

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id/events/:event_id', operation('remove-space-event',
    'Remove an event from a space', {
      description: 'Unlinks an event from the space; the event itself stays. Its place in the space\'s feed goes ' +
        'with it.',
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

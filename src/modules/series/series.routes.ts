/**
 * Recurring series: create an event with a series, turn an event into a series, read the series
 * with paged occurrences and attendee counts, patch it (cascade and regeneration), delete
 * occurrences by scope, publish it, invite a series manager. Owns the tables `event_series` and
 * `series_windows`; occurrences are rows of `events` (series_id, series_index), and the scoped
 * `PATCH /events/{id}?scope=` of the events module calls `applyScopedEdit` of this module.
 * The rolling windows of ends_on=never series are extended in the background (`startSeriesWindows`, started by
 * src/workers.ts).
 */
import { Type } from '@sinclair/typebox'
import { defineModule } from '../../platform/app-context.ts'
import { ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import { answerWithEtag, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { Event } from '../events/index.ts'
import {
  CreateEventWithSeriesBody, CreateSeriesBody, DeleteSeriesQuery, EventSeries, EventSeriesUpdate, EventWithSeries,
  OccurrencesQuery, PagedOccurrences, PatchSeriesBody, PublishSeriesBody, SeriesManagerBody, SeriesParams,
  SeriesWithOccurrences
} from './series.schemas.ts'
import * as service from './series.service.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Series')
/** How often the window job runs when workers are on. */

export const seriesModule = defineModule(async (app, ctx) => {
  const { db } = ctx

  app.post('/api/v1/events/with-series', operation('create-event-with-series',
    'Create an event and, when `series` is given, its series and its occurrences (one transaction); ' +
    'answers the first page of occurrences', {
      description: 'Creates an event and, with `series`, its recurrence and occurrences in one transaction. Use it ' +
        'instead of two calls when a recurring event is made in one form.',
      body: CreateEventWithSeriesBody,
      response: { 201: EventWithSeries }
    }, requirePolicy('series', 'create')), async (request, reply) => {
    const auth = request.auth
    const result = await withTenant(db, auth, trx => service.createEventWithSeries(trx, auth, request.body))
    return await reply
      .code(201)
      .header('location', `/api/v1/events/${result.event?.id ?? ''}`)
      .send(result)
  })

  app.post('/api/v1/events/:id/series', operation('create-event-series',
    'Turn an event into the anchor (index 0) of a new series; returns the first 200 occurrences (X-Total-Count: all; ' +
    'Link rel="next": the occurrences list)', {
      description: 'Makes an existing event the first occurrence of a new series and generates the following ones. ' +
        'Answers the first 200 occurrences; the rest are paged through the occurrences list.',
      params: SeriesParams,
      body: CreateSeriesBody,
      response: { 201: Type.Array(Event) }
    }, requirePolicy('series', 'create')), async (request, reply) => {
    const auth = request.auth
    const { items, total, limit } = await withTenant(db, auth, trx =>
      service.convertToSeries(trx, auth, request.params.id, request.body)
    )
    void reply.header('x-total-count', String(total))
    if (total > items.length) {
      void reply.header(
        'link',
        `</api/v1/events/${request.params.id}/series/occurrences?page=2&limit=${limit}>; rel="next"`
      )
    }
    return await reply.code(201).send(items)
  })

  app.get('/api/v1/events/:id/series', operation('get-event-series',
    'The series of an occurrence with a page of occurrences and attendee counts', {
      description: 'The series an occurrence belongs to, its rule and a page of occurrences with attendee counts.',
      params: SeriesParams,
      querystring: OccurrencesQuery,
      response: { 200: SeriesWithOccurrences }
    }, requirePolicy('series', 'read')), async (request, reply) => {
    const q = request.query
    const result = await withTenant(db, request.auth, trx =>
      service.getSeries(trx, request.auth, request.params.id, q.page, q.limit)
    )
    setEtag(reply, result.series.revision)
    return result
  })

  app.get('/api/v1/events/:id/series/occurrences', operation('list-series-occurrences',
    'Occurrences of the series of an event, by start', {
      description: 'The occurrences of the event\'s series, by start, paged. Use it after `create-event-series` for ' +
        'occurrences past the first page.',
      params: SeriesParams,
      querystring: OccurrencesQuery,
      response: { 200: PagedOccurrences }
    }, requirePolicy('series', 'read')), async (request) => {
    const q = request.query
    return await withTenant(db, request.auth, trx =>
      service.listOccurrences(trx, request.auth, request.params.id, q.page, q.limit, q.cursor)
    )
  })

  app.patch('/api/v1/events/:id/series', operation('patch-event-series',
    'Merge-patch the series: cascades to occurrences without overrides; a rule change regenerates future occurrences', {
      description: 'Changes the series: content changes reach the occurrences that have not been changed on their ' +
        'own, a rule change regenerates the future occurrences. `null` clears a field.',
      params: SeriesParams,
      body: PatchSeriesBody,
      response: { 200: EventSeriesUpdate }
    }, requirePolicy('series', 'edit_all')), async (request, reply) =>
    await answerWithEtag(db, request, reply, (trx, auth) =>
      service.patchSeries(trx, auth, request.params.id, request.body, ifMatchOf(request))
    )
  )

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/series', operation('delete-event-series',
    'Delete this occurrence, this and the following, or the whole series', {
      description: 'Deletes this occurrence, this and the following ones, or the whole series, as `scope` says.',
      params: SeriesParams,
      querystring: DeleteSeriesQuery
    }, requirePolicy('series', 'delete_all')), (trx, request) =>
    service.deleteSeries(trx, request.auth, request.params.id, request.query.scope, ifMatchOf(request)))

  noContentRoute(app, db, 'post', '/api/v1/events/:id/series/publish', operation('publish-event-series',
    'Publish the series and every occurrence (one transaction)', {
      description: 'Publishes the series and all its occurrences in one transaction; attendees can be told by ' +
        'notification.',
      params: SeriesParams,
      body: PublishSeriesBody
    }, requirePolicy('series', 'publish'), { optionalBody: true }), (trx, request) =>
    service.publishSeries(trx, request.auth, request.params.id, request.body, ifMatchOf(request)))

  app.post('/api/v1/events/:id/series/manager', operation('invite-series-manager',
    'Invite a manager of every occurrence by e-mail (pending for 7 days)', {
      description: 'Invites someone by e-mail to manage every occurrence of the series; pending for 7 days. The ' +
        'token is shown once in the answer and sent by mail.',
      params: SeriesParams,
      body: SeriesManagerBody,
      response: { 200: EventSeries }
    }, requirePolicy('series', 'managers')), async request =>
    await withTenant(db, request.auth, trx =>
      service.inviteSeriesManager(trx, request.auth, request.params.id, request.body.email)
    )
  )
})

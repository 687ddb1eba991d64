/**
 * The registration form of an event or a series (attendees.forms.ts; docs/guests.md, "Questions"): read it, and
 * store a new version of it. Answers are read with the attendee list (`answers`, attendees:read), exported as
 * columns, and carried by webhooks and sync.
 */
import { Type } from '@sinclair/typebox'
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error400BadRequest } from '../../platform/http/errors.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { EventParams, lockEventForWrite, readEvent, rootEventId } from '../events/index.ts'
import { requirePolicy } from '../policy/index.ts'
import { lockForSeriesWrite } from '../series/index.ts'
import { FORM_EXAMPLE, formErrors, PutFormBody, Question } from './attendees.forms.ts'
import { formOf } from './attendees.forms.service.ts'
import * as formRepo from './attendees.forms.repository.ts'

const operation = operationsTagged('Guests')

const RegistrationForm = model('RegistrationForm', {
  form_id: Nullable(Type.Integer({ description: 'This version\'s id (answers name it); null: no form' })),
  version: Type.Integer({ description: '1, 2, … (0: no form yet)' }),
  owner: Nullable(StringEnum(['event', 'series'], { description: 'The event\'s own form, or its series\'' })),
  created_at: Nullable(Timestamp()),
  questions: Type.Array(Question)
}, {
  examples: [{
    form_id: 7,
    version: 2,
    owner: 'event',
    created_at: '2027-04-01T09:00:00.000Z',
    questions: FORM_EXAMPLE
  }]
})

const shown = (f: formRepo.FormVersion | undefined) => f === undefined
  ? { form_id: null, version: 0, owner: null, created_at: null, questions: [] }
  : { form_id: f.id, version: f.version, owner: f.owner, created_at: f.created_at, questions: f.questions }

/** A map of each question id ever used by the owners' forms to its type (a question id keeps its type). */
async function earlierTypes (trx: Parameters<typeof formRepo.allVersions>[0], tenantId: string,
  owner: formRepo.FormOwner): Promise<Map<string, string>> {
  const types = new Map<string, string>()
  for (const v of await formRepo.allVersions(trx, tenantId, [owner])) {
    for (const q of v.questions) if (!types.has(q.id)) types.set(q.id, q.type)
  }
  return types
}

export async function formRoutes (app: App, { db }: AppContext): Promise<void> {
  app.get('/api/v1/events/:id/registration/form', operation('get-event-registration-form',
    'The registration questions in force for an event (its own form, else its series\')', {
      description: 'The registration questions in force for the event: its own form, else its series\'. Guests ' +
        'answer them when they register.',
      params: EventParams,
      response: { 200: RegistrationForm }
    }, requirePolicy('event', 'read')), async request =>
    await withTenant(db, request.auth, async trx =>
      shown(await formOf(trx, await readEvent(trx, request.auth, request.params.id)))))

  app.put('/api/v1/events/:id/registration/form', operation('put-event-registration-form',
    'Store a new version of the event\'s registration questions (earlier versions and their answers are kept)', {
      description: 'Stores a new version of the event\'s registration questions; earlier versions and their answers ' +
        'are kept.',
      params: EventParams,
      body: PutFormBody,
      response: { 200: RegistrationForm }
    }, requirePolicy('event', 'edit')), async request => {
    const { auth, body: b } = request
    return await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, request.params.id, 'event:edit', { includeDraftClones: false })
      const owner = { eventId: rootEventId(event) }
      const errors = formErrors(b.questions, await earlierTypes(trx, auth.tenantId, owner))
      if (errors.length > 0) throw error400BadRequest(`${errors.length} problem(s) in the form`, errors)
      return shown(await formRepo.insertFormVersion(trx, auth.tenantId, owner, b.questions, auth.userId))
    })
  })

  app.put('/api/v1/events/:id/series/registration/form', operation('put-series-registration-form',
    'Store a new version of the series\' registration questions (its occurrences without a form of their own ' +
    'follow it)', {
      description: 'Stores a new version of the series\' registration questions; its occurrences without a form of ' +
        'their own follow it.',
      params: EventParams,
      body: PutFormBody,
      response: { 200: RegistrationForm }
    }, requirePolicy('series', 'edit_all')), async request => {
    const { auth, body: b } = request
    return await withTenant(db, auth, async trx => {
      const { series } = await lockForSeriesWrite(trx, auth, request.params.id, 'event:edit', 'series')
      const owner = { seriesId: series.id }
      const errors = formErrors(b.questions, await earlierTypes(trx, auth.tenantId, owner))
      if (errors.length > 0) throw error400BadRequest(`${errors.length} problem(s) in the form`, errors)
      return shown(await formRepo.insertFormVersion(trx, auth.tenantId, owner, b.questions, auth.userId))
    })
  })
}

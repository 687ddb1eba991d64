/**
 * Registration routes: an event's and a series' registration settings (capacity, waitlist, approval), approving and
 * declining pending registrations (one or in bulk), marking no-shows, and cancelling an event or occurrences of a
 * series. The rules themselves live in attendees.registration.ts; docs/event-collaboration.md, "Registration".
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { error400BadRequest, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { emitMany, type DomainEvent } from '../../platform/outbox.ts'
import {
  eventDomainEvent, EventParams, type EventRow, lockById as lockEventById, lockEventForWrite, readEvent, rootEventId
} from '../events/index.ts'
import { requirePolicy } from '../policy/index.ts'
import { lockForSeriesWrite } from '../series/index.ts'
import { attendeeEvent, emitChanges } from './attendees.routes.ts'
import {
  decide, markNoShows, notifyContacts, registrationFigures, settleWaitlist
} from './attendees.registration.ts'
import * as regRepo from './attendees.registration.repository.ts'
import {
  AttendeeList, AttendeeParams, Attendee, BulkDecisionBody, CancelEventBody, CancelResult, EventRegistration,
  NoShowsResult, PatchRegistrationBody, PatchSeriesRegistrationBody, SeriesRegistration
} from './attendees.schemas.ts'

const operation = operationsTagged('Event registration')

/** The figures of an event after a change, with what the change did. */
async function registrationBody (trx: Tx, event: EventRow, promoted: number): Promise<EventRegistration> {
  const f = await registrationFigures(trx, event)
  const guests = await regRepo.guestSettings(trx, event.tenant_id, rootEventId(event))
  if (guests === undefined) throw new Error(`event ${rootEventId(event)} vanished while locked or read`)
  const notice = f.over_capacity > 0
    ? `capacity ${f.capacity ?? ''} is below the ${f.confirmed_count} attendees holding a seat: nobody was ` +
      'demoted; new confirmations are waitlisted (or refused without a waitlist) until seats free up'
    : null
  return { ...f, promoted, notice, guests }
}

/** 400 naming `body.registration_closes_at` when the window a body sets (with the stored one) closes before it opens */
function checkWindow (b: regRepo.GuestSettingsInput, stored: regRepo.GuestSettings | undefined): void {
  const opens = b.registration_opens_at !== undefined ? b.registration_opens_at : stored?.registration_opens_at
  const closes = b.registration_closes_at !== undefined ? b.registration_closes_at : stored?.registration_closes_at
  if (opens === null || opens === undefined || closes === null || closes === undefined) return
  if (new Date(closes).getTime() <= new Date(opens).getTime()) {
    const at = b.registration_closes_at !== undefined ? 'body.registration_closes_at' : 'body.registration_opens_at'
    throw invalidField(at, 'registrations must close after they open', b.registration_closes_at ??
      b.registration_opens_at)
  }
}

/** A domain event about the event itself, with the fields every event topic carries (automation catalogue). */
const eventChanged = (auth: AuthContext, event: EventRow, topic: string, extra: Record<string, unknown>): DomainEvent =>
  eventDomainEvent(auth, event, topic, {
    template: event.template,
    template_version: event.template_version,
    state: event.state,
    title: event.title,
    status: event.status,
    ...extra
  })

export async function registrationRoutes (app: App, { db }: AppContext): Promise<void> {
  app.get('/api/v1/events/:id/registration', operation('get-event-registration',
    'Registration settings in force and seat counts of an event', {
      description: 'The registration settings in force for the event (its own or its series\') and its seat counts. ' +
        'Use it before offering a place.',
      params: EventParams,
      response: { 200: EventRegistration }
    }, requirePolicy('event', 'read')), async request =>
    await withTenant(db, request.auth, async trx =>
      await registrationBody(trx, await readEvent(trx, request.auth, request.params.id), 0)))

  app.patch('/api/v1/events/:id/registration', operation('patch-event-registration',
    'Set capacity, waitlist and approval of an event (an occurrence stops following its series; ' +
    '`inherit` follows it again); frees seats to the waitlist at once', {
      description: 'Sets capacity, waitlist, approval and public registration of the event; seats freed go to the ' +
        'waitlist at once. On an occurrence, the settings become its own until `inherit` follows the series again.',
      params: EventParams,
      body: PatchRegistrationBody,
      response: { 200: EventRegistration }
    }, requirePolicy('event', 'edit')), async request => {
    const { auth, body: b } = request
    return await withTenant(db, auth, async trx => {
      const locked = await lockEventForWrite(trx, auth, request.params.id, 'event:edit', { includeDraftClones: false })
      if (b.inherit === true) {
        if (Object.keys(b).some(k => k !== 'inherit' && k !== '$schema')) {
          throw invalidField('body.inherit', 'inherit goes alone: the series\' settings replace the others', true)
        }
        if (locked.series_id === null) {
          throw invalidField('body.inherit', 'the event is not an occurrence of a series', true)
        }
      }
      if (b.inherit !== true) checkWindow(b, await regRepo.guestSettings(trx, auth.tenantId, locked.id))
      await regRepo.writeEventRegistration(trx, auth.tenantId, locked.id, {
        ...(b.inherit === true ? {} : b),
        inherited: b.inherit === true
      })
      const event = await lockEventById(trx, auth.tenantId, locked.id)
      const promoted = await settleWaitlist(trx, event)
      await emitMany(trx, [eventChanged(auth, event, 'event.updated', {
        fields: Object.keys(b).filter(k => k !== '$schema'),
        draft: false
      })])
      return await registrationBody(trx, event, promoted.length)
    })
  })

  app.patch('/api/v1/events/:id/series/registration', operation('patch-series-registration',
    "Set capacity, waitlist and approval of a series: every occurrence that follows the series' settings gets them " +
    '(and frees seats to its waitlist at once)', {
      description: 'Sets capacity, waitlist, approval and public registration for the series; every occurrence ' +
        'following the series gets them. Seats freed go to the waitlists at once.',
      params: EventParams,
      body: PatchSeriesRegistrationBody,
      response: { 200: SeriesRegistration }
    }, requirePolicy('series', 'edit_all')), async request => {
    const { auth, body: b } = request
    return await withTenant(db, auth, async trx => {
      const { series } = await lockForSeriesWrite(trx, auth, request.params.id, 'event:edit', 'series')
      const { $schema: _schema, ...settings } = b
      checkWindow(settings, await regRepo.seriesGuestSettings(trx, auth.tenantId, series.id))
      const stored = await regRepo.writeSeriesRegistration(trx, auth.tenantId, series.id, settings)
      const following = await regRepo.followingOccurrences(trx, auth.tenantId, series.id)
      let promoted = 0
      // only occurrences with a waitlist can promote; locked in id order, as every series write does
      for (const o of following.filter(f => f.waiting)) {
        promoted += (await settleWaitlist(trx, await lockEventById(trx, auth.tenantId, o.id))).length
      }
      return {
        series_id: stored.id,
        capacity: stored.capacity,
        waitlist_enabled: stored.waitlist_enabled,
        requires_approval: stored.requires_approval,
        public_registration: stored.public_registration,
        registration_opens_at: stored.registration_opens_at,
        registration_closes_at: stored.registration_closes_at,
        registration_limit_per_email: stored.registration_limit_per_email,
        double_opt_in: stored.double_opt_in,
        occurrences_following: following.length,
        promoted
      }
    })
  })

  for (const decision of ['approve', 'decline'] as const) {
    const verb = decision === 'approve' ? 'Approve' : 'Decline'
    const decides = decision === 'approve' ? 'Accepts' : 'Refuses'
    const told = decision === 'approve' ? 'while seats last, and the guest is told' : 'and the guest is told'
    app.post(`/api/v1/events/:id/attendees/:contact_id/${decision}`, operation(`${decision}-event-attendee`,
      `${verb} a pending registration (409 unless pending)`, {
        description: `${decides} a registration that waits for approval, ${told}. Answers 409 unless it is pending.`,
        params: AttendeeParams,
        response: { 200: Attendee }
      }, requirePolicy('attendee', 'write')), async request => {
      const { auth, params } = request
      return await withTenant(db, auth, async trx => {
        const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write')
        const [one] = await decide(trx, event, [params.contact_id], decision, {
          by: auth.userId, at: () => 'path.contact_id'
        })
        if (one === undefined) throw error409Conflict('the contact does not attend this event', [], 'not_attending')
        await emitChanges(trx, auth, event, [one])
        return one.row
      })
    })

    app.post(`/api/v1/events/:id/attendees/bulk/${decision}`, operation(`bulk-${decision}-event-attendees`,
      `${verb} pending registrations in request order (all or nothing)`, {
        description: `${decides} registrations that wait for approval in the order given, ${told}. All or nothing: ` +
          'one that is not pending refuses the whole call.',
        params: EventParams,
        body: BulkDecisionBody,
        response: { 200: AttendeeList }
      }, requirePolicy('attendee', 'write')), async request => {
      const { auth, params, body } = request
      return await withTenant(db, auth, async trx => {
        const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write')
        const ids = [...new Set(body.contact_ids)]
        const changed = await decide(trx, event, ids, decision, {
          by: auth.userId,
          at: i => `body.contact_ids[${body.contact_ids.indexOf(ids[i] ?? '')}]`
        })
        await emitChanges(trx, auth, event, changed)
        return { items: changed.map(c => c.row) }
      })
    })
  }

  app.post('/api/v1/events/:id/attendees/no-shows', operation('mark-event-no-shows',
    'After the event: every confirmed attendee who never checked in becomes no_show', {
      description: 'After the event has ended, marks every confirmed attendee who never checked in as `no_show`. ' +
        'Refused before the end of the event.',
      params: EventParams,
      response: { 200: NoShowsResult }
    }, requirePolicy('attendee', 'write')), async request => {
    const { auth, params } = request
    return await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write')
      const marked = await markNoShows(trx, event)
      await emitMany(trx, marked.map(contactId =>
        attendeeEvent(auth, event, 'attendee.status_changed', contactId, 'no_show', { previous_status: 'confirmed' })))
      return { marked: marked.length }
    })
  })

  app.post('/api/v1/events/:id/cancel', operation('cancel-event',
    'Cancel a published event (or occurrences of its series): it stays readable, takes no registrations, ' +
    'and every attendee is told once', {
      description: 'Cancels a published event or occurrences of its series: it stays readable, takes no more ' +
        'registrations, and every attendee is told once. Use it rather than delete for an event people expect.',
      params: EventParams,
      body: CancelEventBody,
      response: { 200: CancelResult }
    }, requirePolicy('event', 'cancel')), async request => {
    const { auth, params, body: b } = request
    return await withTenant(db, auth, async trx => {
      const scope = b.scope ?? 'this'
      let targets: EventRow[]
      if (scope === 'this') {
        targets = [await lockEventForWrite(trx, auth, params.id, 'event:edit', { includeDraftClones: false })]
      } else {
        const { occurrence, series } = await lockForSeriesWrite(trx, auth, params.id, 'event:edit', 'series')
        const ids = await regRepo.occurrencesToCancel(
          trx, auth.tenantId, series.id, scope === 'future' ? occurrence.series_index ?? 0 : null)
        targets = []
        for (const o of ids) targets.push(await lockEventById(trx, auth.tenantId, o.id))
        if (targets.length === 0) {
          throw error409Conflict(
            `no published occurrence of the series to cancel (scope ${scope})`, [], 'event_state_conflict'
          )
        }
      }
      const first = targets[0]
      if (first === undefined) throw error400BadRequest('nothing to cancel')
      if (scope === 'this') {
        if (first.status !== 'published') {
          throw error409Conflict('only a published event can be cancelled (delete a draft instead)', [
            fieldError('path.id', `status ${first.status}`, params.id)
          ], 'event_state_conflict')
        }
        if (first.cancelled_at !== null) {
          throw error409Conflict('the event is already cancelled',
            [fieldError('path.id', 'already cancelled', params.id)], 'already_cancelled')
        }
      }
      const ids = targets.map(t => t.id)
      await regRepo.cancelEvents(trx, auth.tenantId, ids, auth.userId, b.reason)
      // one mail per occurrence and attendee (each removes its own calendar entry); `notified` counts the contacts
      // told, each once, as it always has
      const told = new Set<string>()
      for (const target of b.notify === false ? [] : targets) {
        const contacts = await regRepo.contactsToTell(trx, auth.tenantId, [target.id])
        await notifyContacts(trx, target, contacts, { kind: 'event.cancelled', reason: b.reason })
        for (const c of contacts) told.add(c)
      }
      const notified = told.size
      await emitMany(trx, targets.map(t => eventChanged(auth, t, 'event.cancelled', {
        reason: b.reason,
        scope,
        cancelled_by: auth.userId
      })))
      return { cancelled: ids, notified }
    })
  })
}

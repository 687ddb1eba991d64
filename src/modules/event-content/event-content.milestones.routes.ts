/**
 * Milestones: other events of the tenant attached to a base event, ordered by sequence, with a
 * lifecycle status that is derived from the milestone event's dates or set by hand. Reading needs
 * only to see the base event; writes need the event permission `milestones:manage` on the base.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error404NotFound, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { KeysetPageQuery } from '../../platform/http/schema.ts'
import { answerPage, createdRoute, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { emit } from '../../platform/outbox.ts'
import {
  eventEvent, EventParams, findVisibleEvent, lockEventForWrite, readEvent, removeFromEvent, rootEventId
} from '../events/index.ts'
import {
  AddMilestoneBody, Milestone, MilestoneParams, PagedBodyMilestone, PatchMilestoneBody, UpdateMilestoneSequenceBody
} from './event-content.schemas.ts'
import * as repo from './event-content.milestones.repository.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Event milestones')

async function milestoneOr404 (...args: Parameters<typeof repo.findMilestone>) {
  const row = await repo.findMilestone(...args)
  if (row === undefined) throw error404NotFound('milestone not found')
  return row
}

export async function milestonesRoutes (app: App, { db }: AppContext): Promise<void> {
  app.get('/api/v1/events/:id/milestones', operation('list-event-milestones',
    'List the milestones of an event by sequence', {
      description: 'The events that are milestones of this one, in their sequence, with their status.',
      params: EventParams,
      querystring: KeysetPageQuery,
      response: { 200: PagedBodyMilestone }
    }, requirePolicy('link', 'read')), async request => await answerPage(db, request, async (trx, q) => {
    const event = await readEvent(trx, request.auth, request.params.id)
    return await repo.listMilestones(trx, request.auth.tenantId, rootEventId(event), q)
  }))

  createdRoute(app, db, 'post', '/api/v1/events/:id/milestones', operation('add-event-milestone',
    'Add another event as a milestone (no self, no duplicate, no cycle)', {
      description: 'Makes another event a milestone of this one. Refused for the event itself, a duplicate or a cycle.',
      params: EventParams,
      body: AddMilestoneBody,
      response: { 201: Milestone }
    }, requirePolicy('link', 'write')), async (trx, { auth, params, body: b }) => {
    const base = await lockEventForWrite(trx, auth, params.id, 'milestones:manage')
    const baseId = rootEventId(base)
    const target = await findVisibleEvent(trx, auth, b.milestone_event_id, ['id', 'start_dt', 'end_dt', 'status'])
    if (target === undefined) throw invalidField('body.milestone_event_id', 'unknown event', b.milestone_event_id)
    if (target.id === baseId) {
      throw invalidField('body.milestone_event_id', 'an event cannot be its own milestone', b.milestone_event_id)
    }
    await repo.lockMilestoneGraph(trx, auth.tenantId)
    if (await repo.reaches(trx, auth.tenantId, target.id, baseId)) {
      throw error409Conflict(
        'the base event is already a milestone (directly or not) of this event: that would be a cycle',
        [fieldError('body.milestone_event_id', 'would create a cycle', b.milestone_event_id)], 'milestone_cycle')
    }
    const created = await repo.insertMilestone(trx, {
      tenantId: auth.tenantId,
      baseId,
      milestoneId: target.id,
      orgId: base.org_id,
      sequence: b.sequence ?? 0,
      status: repo.derivedStatus(target)
    })
    if (created === undefined) {
      throw error409Conflict('the event is already a milestone of this event', [
        fieldError('body.milestone_event_id', 'already a milestone', b.milestone_event_id)
      ], 'already_linked')
    }
    await emit(trx, eventEvent(auth, baseId, 'milestone.added', {
      event_id: baseId, milestone_event_id: target.id, template: base.template
    }))
    return await milestoneOr404(trx, auth.tenantId, baseId, target.id)
  })

  app.put('/api/v1/events/:id/milestones/:milestone_event_id', operation('update-event-milestone-sequence',
    'Set the sequence of a milestone', {
      description: 'Moves a milestone to another place in the sequence.',
      params: MilestoneParams,
      body: UpdateMilestoneSequenceBody,
      response: { 200: Milestone }
    }, requirePolicy('link', 'write')), async request => {
    const { auth, params: { id, milestone_event_id: milestoneId } } = request
    return await withTenant(db, auth, async trx => {
      const base = await lockEventForWrite(trx, auth, id, 'milestones:manage')
      if (
        !(await repo.updateMilestone(trx, auth.tenantId, rootEventId(base), milestoneId, {
          sequence: request.body.sequence
        }))
      ) { throw error404NotFound('milestone not found') }
      await emit(trx, eventEvent(auth, rootEventId(base), 'milestone.updated', {
        event_id: rootEventId(base),
        milestone_event_id: milestoneId,
        sequence: request.body.sequence,
        template: base.template
      }))
      return await milestoneOr404(trx, auth.tenantId, rootEventId(base), milestoneId)
    })
  })

  app.patch('/api/v1/events/:id/milestones/:milestone_event_id', operation('update-event-milestone-status',
    'Set the lifecycle status by hand (status) or go back to the derived status (reset_to_derived: true)', {
      description: 'Sets the status of a milestone by hand, or returns it to the status derived from its event.',
      params: MilestoneParams,
      body: PatchMilestoneBody,
      response: { 200: Milestone }
    }, requirePolicy('link', 'write')), async request => {
    const { auth, body: b, params: { id, milestone_event_id: milestoneId } } = request
    if (b.status !== undefined && b.reset_to_derived === true) {
      throw invalidField('body.reset_to_derived', 'expected either status or reset_to_derived, not both', true)
    }
    if (b.status === undefined && b.reset_to_derived !== true) {
      throw invalidField('body.status', 'expected status, or reset_to_derived: true')
    }
    return await withTenant(db, auth, async trx => {
      const base = await lockEventForWrite(trx, auth, id, 'milestones:manage')
      const current = await milestoneOr404(trx, auth.tenantId, rootEventId(base), milestoneId)
      const values =
        b.status !== undefined
          ? { status: b.status, status_mode: 'manual' as const }
          : { status: current.status, status_mode: 'derived' as const }
      await repo.updateMilestone(trx, auth.tenantId, rootEventId(base), milestoneId, values)
      await emit(trx, eventEvent(auth, rootEventId(base), 'milestone.status_changed', {
        event_id: rootEventId(base),
        milestone_event_id: milestoneId,
        status_mode: values.status_mode,
        template: base.template
      }))
      return await milestoneOr404(trx, auth.tenantId, rootEventId(base), milestoneId)
    })
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/milestones/:milestone_event_id', operation(
    'remove-event-milestone', 'Remove a milestone (the milestone event itself stays)', {
      description: 'Removes a milestone from the event; the milestone event itself stays.',
      params: MilestoneParams
    }, requirePolicy('link', 'write')), async (trx, { auth, params: { id, milestone_event_id: milestoneId } }) => {
    const base = await removeFromEvent(trx, auth, id, 'milestones:manage', 'milestone not found', root =>
      repo.deleteMilestone(trx, auth.tenantId, root, milestoneId))
    await emit(trx, eventEvent(auth, rootEventId(base), 'milestone.removed', {
      event_id: rootEventId(base), milestone_event_id: milestoneId, template: base.template
    }))
  })
}

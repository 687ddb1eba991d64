/**
 * The domain events automation writes (src/platform/outbox.ts): the changes of rules
 * (`automation.rule_created|updated|deleted|disabled`) and what actions do to events
 * (`event.activity_added`, `attendee.status_changed`), which carry the chain depth + 1.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { DomainEvent } from '../../platform/outbox.ts'
import type { RuleRow } from './automation.table.ts'

function ruleEvent (
  tenantId: string,
  topic: string,
  ruleId: string,
  actorId: string | null,
  payload: Record<string, unknown>
): DomainEvent {
  return { tenantId, topic, aggregateType: 'automation_rule', aggregateId: ruleId, actorId, payload }
}

export const ruleCreated = (auth: AuthContext, rule: RuleRow): DomainEvent =>
  ruleEvent(auth.tenantId, 'automation.rule_created', rule.id, auth.userId, {
    rule_id: rule.id,
    scope: rule.scope,
    scope_id: rule.scope_id,
    event_type: rule.event_type
  })

export const ruleUpdated = (auth: AuthContext, rule: RuleRow): DomainEvent =>
  ruleEvent(auth.tenantId, 'automation.rule_updated', rule.id, auth.userId, { rule_id: rule.id, version: rule.version })

export const ruleDeleted = (auth: AuthContext, ruleId: string): DomainEvent =>
  ruleEvent(auth.tenantId, 'automation.rule_deleted', ruleId, auth.userId, { rule_id: ruleId })

/**
 * The service disabled a rule: its creator may no longer act, or it was paused after the failed
 * execution `pausedBy`.
 */
export const ruleDisabled = (
  rule: Pick<RuleRow, 'tenant_id' | 'id' | 'name' | 'creator_id'>,
  reason: string,
  pausedBy?: string
): DomainEvent =>
  ruleEvent(rule.tenant_id, 'automation.rule_disabled', rule.id, null, {
    rule_id: rule.id,
    name: rule.name,
    creator_id: rule.creator_id,
    reason,
    ...(pausedBy !== undefined ? { paused: true, execution_id: pausedBy } : {})
  })

/** Where an action's change comes from: its rule and the depth of the trigger that ran it. */
export interface ActionSource { tenantId: string, ruleId: string, depth: number }

/** An `activity` action appended an activity row to an event. */
export const activityAdded = (
  s: ActionSource,
  eventId: number,
  activity: { id: number | string, kind: string }
): DomainEvent => ({
  tenantId: s.tenantId,
  topic: 'event.activity_added',
  aggregateType: 'event',
  aggregateId: eventId,
  actorId: null,
  payload: {
    event_id: eventId, activity_id: activity.id, kind: activity.kind, source: 'automation', rule_id: s.ruleId
  },
  depth: s.depth + 1
})

/** A `set_attendee_status` action changed an attendee's status. */
export const attendeeStatusChanged = (
  s: ActionSource,
  eventId: number,
  change: { contactId: string, status: string, previous: string }
): DomainEvent => ({
  tenantId: s.tenantId,
  topic: 'attendee.status_changed',
  aggregateType: 'event',
  aggregateId: eventId,
  actorId: null,
  payload: {
    event_id: eventId,
    contact_id: change.contactId,
    status: change.status,
    previous_status: change.previous,
    source: 'automation',
    rule_id: s.ruleId
  },
  depth: s.depth + 1
})

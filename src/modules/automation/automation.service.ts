/**
 * Rule use cases: validation of what a schema cannot check (trigger types, cron patterns, JSON
 * Logic conditions, what the action schemas cannot say, scope entities), the event-automation view
 * of a rule (scope EVENT, scope_id = the event) and the ready-made automations per event template.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import type { KeysetPageQuery } from '../../platform/http/schema.ts'
import {
  ApiError, error403Forbidden, error404NotFound, error409Conflict, invalidField
} from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { type EventRow, findEventForRead, hasEventPermission, lockEventForWrite, rootEventId } from '../events/index.ts'
import { checkActions, maskActions, type Action, type AttendeeStatus } from './automation.actions.ts'
import { checkJsonText, RELATIVE_TRIGGERS, validateConditions, validateSchedule } from './automation.catalogue.ts'
import { ruleCreated, ruleDeleted, ruleUpdated } from './automation.events.ts'
import * as executions from './automation.executions.repository.ts'
import * as repo from './automation.repository.ts'
import { actionNeeds, canManageRule, writerOf } from './automation.run-as.ts'
import { eventInSpace } from './automation.targets.repository.ts'
import type { CreateRuleBody, EventAutomationBody, PatchRuleBody } from './automation.schemas.ts'
import type { ExecutionRow, RuleAction, RuleRow, RuleScope } from './automation.table.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const INT = /^[1-9][0-9]{0,15}$/

/** Checks scope and scope id; an EVENT scope needs the event permission automations:manage. */
async function checkScope (
  trx: Tx,
  auth: AuthContext,
  scope: RuleScope,
  scopeId: string | null,
  eventType: string
): Promise<void> {
  if (scope === 'GLOBAL') {
    if (scopeId !== null) throw invalidField('body.scope_id', 'a GLOBAL rule has no scope id', scopeId)
  } else if (scope === 'EVENT' || scope === 'SPACE') {
    if (scopeId === null) throw invalidField('body.scope_id', `required for scope ${scope}`)
    if (!INT.test(scopeId)) {
      throw invalidField(
        'body.scope_id',
        `expected the ${scope === 'EVENT' ? 'event' : 'space'} id (a positive integer)`,
        scopeId
      )
    }
    if (scope === 'EVENT') {
      await lockEventForAutomations(trx, auth, Number(scopeId))
    }
  } else if (scopeId !== null && !UUID.test(scopeId)) {
    throw invalidField('body.scope_id', 'expected a contact UUID', scopeId)
  }
  if (scope === 'CONTACT' && (RELATIVE_TRIGGERS as readonly string[]).includes(eventType)) {
    throw invalidField(
      'body.schedule.event_type',
      'times relative to an event need scope EVENT, SPACE or GLOBAL',
      eventType
    )
  }
}

/** Locks an event whose automations change: the event permission automations:manage, archived events too. */
async function lockEventForAutomations (trx: Tx, auth: AuthContext, eventId: number): Promise<EventRow> {
  return await lockEventForWrite(trx, auth, eventId, 'automations:manage', { allowArchived: true })
}

/** Inserts a rule and its domain event `automation.rule_created`. */
async function insertRuleWithEvent (trx: Tx, auth: AuthContext, values: repo.RuleValues): Promise<RuleRow> {
  const row = await repo.insertRule(trx, auth.tenantId, writerOf(auth), values)
  await emit(trx, ruleCreated(auth, row))
  return row
}

/** Stores the new values of a rule and its domain event `automation.rule_updated`. */
async function updateRuleWithEvent (trx: Tx, auth: AuthContext, id: string, values: repo.RuleValues): Promise<RuleRow> {
  const row = await repo.updateRule(trx, auth.tenantId, id, values, writerOf(auth))
  await emit(trx, ruleUpdated(auth, row))
  return row
}

/** Deletes a rule (and its history) and writes its domain event `automation.rule_deleted`. */
async function deleteRuleWithEvent (trx: Tx, auth: AuthContext, id: string): Promise<void> {
  await repo.deleteRule(trx, auth.tenantId, id)
  await emit(trx, ruleDeleted(auth, id))
}

function ruleValues (input: CreateRuleBody, previous: RuleAction[] = []): repo.RuleValues {
  checkJsonText(input, 'body')
  return {
    name: input.name,
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    priority: input.priority ?? 0,
    scope: input.scope,
    scope_id: input.scope_id ?? null,
    schedule: validateSchedule(input.schedule, 'body.schedule'),
    conditions: validateConditions(input.conditions ?? {}, 'body.conditions'),
    actions: checkActions(input.actions, 'body.actions', previous)
  }
}

/**
 * A rule as responses show it: webhook secrets masked, webhook URLs too unless `full` (the caller may manage the rule).
 */
export function toRule (row: RuleRow, full: boolean): RuleRow {
  return { ...row, actions: maskActions(row.actions, full) }
}

/** Rules as the caller may see them (canManageRule per rule; at most a page of rules). */
export async function toRules (trx: Tx, auth: AuthContext, rows: RuleRow[]): Promise<RuleRow[]> {
  const out: RuleRow[] = []
  for (const row of rows) out.push(toRule(row, await canManageRule(trx, auth, row)))
  return out
}

export async function createRule (trx: Tx, auth: AuthContext, input: CreateRuleBody): Promise<RuleRow> {
  const values = ruleValues(input)
  await checkScope(trx, auth, values.scope, values.scope_id, values.schedule.event_type)
  return await insertRuleWithEvent(trx, auth, values)
}

/** A rule the caller may read: 404 when unknown, or when it belongs to an event they cannot see. */
export async function findRuleForRead (trx: Tx, auth: AuthContext, id: string): Promise<RuleRow> {
  const row = await repo.findRule(trx, auth.tenantId, id)
  if (row === undefined) throw error404NotFound('rule not found')
  if (row.scope === 'EVENT' && row.scope_id !== null) {
    await findEventForRead(trx, auth, Number(row.scope_id)).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) throw error404NotFound('rule not found')
      throw err
    })
  }
  return row
}

/**
 * Locks a rule for a change: 404 unknown; an EVENT rule also needs automations:manage on its event;
 * 412 when `ifMatch` (the If-Match header) names another version than the rule's (its ETag is `"<version>"`).
 */
export async function lockRuleForWrite (trx: Tx, auth: AuthContext, id: string, ifMatch?: string): Promise<RuleRow> {
  const row = await repo.findRule(trx, auth.tenantId, id, true)
  if (row === undefined) throw error404NotFound('rule not found')
  if (row.scope === 'EVENT' && row.scope_id !== null) {
    await lockEventForAutomations(trx, auth, Number(row.scope_id)).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) throw error404NotFound('rule not found')
      throw err
    })
  }
  checkIfMatch(ifMatch, row.version)
  return row
}

/**
 * A rule for a manual run: the checks of `lockRuleForWrite` (404 unknown; an EVENT rule needs
 * automations:manage on its event) without its locks. A run pins the version it reads and the
 * execution's foreign key keeps the rule from going away before the commit, so it need not wait
 * for (nor hold up) the workers that lock the event while they run the rule's earlier executions.
 */
export async function findRuleForRun (trx: Tx, auth: AuthContext, id: string): Promise<RuleRow> {
  const row = await findRuleForRead(trx, auth, id)
  if (row.scope === 'EVENT' && row.scope_id !== null) await checkManagesAutomations(trx, auth, Number(row.scope_id))
  return row
}

/** `findRuleForRun` of an event's automation (the rule must belong to the event). */
export async function eventRuleForRun (trx: Tx, auth: AuthContext, eventId: number, ruleId: string): Promise<RuleRow> {
  await checkManagesAutomations(trx, auth, eventId)
  return await eventRule(trx, auth.tenantId, eventId, ruleId)
}

async function checkManagesAutomations (trx: Tx, auth: AuthContext, eventId: number): Promise<void> {
  const event = await findEventForRead(trx, auth, eventId)
  if (!(await hasEventPermission(trx, auth, event, 'automations:manage'))) {
    throw error403Forbidden('missing event permission automations:manage')
  }
}

export async function replaceRule (
  trx: Tx,
  auth: AuthContext,
  id: string,
  input: CreateRuleBody,
  ifMatch?: string
): Promise<RuleRow> {
  const current = await lockRuleForWrite(trx, auth, id, ifMatch)
  const values = ruleValues(input, current.actions)
  await checkScope(trx, auth, values.scope, values.scope_id, values.schedule.event_type)
  return await updateRuleWithEvent(trx, auth, id, values)
}

export async function patchRule (
  trx: Tx,
  auth: AuthContext,
  id: string,
  input: PatchRuleBody,
  ifMatch?: string
): Promise<RuleRow> {
  const current = await lockRuleForWrite(trx, auth, id, ifMatch)
  const merged: CreateRuleBody = {
    name: input.name ?? current.name,
    description: input.description === undefined ? current.description : input.description,
    enabled: input.enabled ?? current.enabled,
    priority: input.priority ?? current.priority,
    scope: input.scope ?? current.scope,
    scope_id: input.scope_id === undefined ? current.scope_id : input.scope_id,
    conditions: input.conditions ?? current.conditions,
    // stored actions passed the same schema
    actions: input.actions ?? (current.actions as Action[]),
    schedule: input.schedule ?? current.schedule
  }
  return await replaceRule(trx, auth, id, merged)
}

export async function deleteRule (trx: Tx, auth: AuthContext, id: string, ifMatch?: string): Promise<void> {
  await lockRuleForWrite(trx, auth, id, ifMatch)
  await deleteRuleWithEvent(trx, auth, id)
}

// ---- event automations: a view over rules with scope EVENT

export function toEventAutomation (row: RuleRow, full: boolean) {
  const s = row.schedule
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    enabled: row.enabled,
    trigger: {
      type: s.event_type,
      ...(s.cron_expression !== undefined ? { cron_expression: s.cron_expression } : {}),
      ...(s.timezone !== undefined ? { timezone: s.timezone } : {}),
      ...(s.offset_minutes !== undefined ? { offset_minutes: s.offset_minutes } : {}),
      ...(Object.keys(row.conditions).length > 0 ? { conditions: row.conditions } : {})
    },
    actions: maskActions(row.actions, full),
    created_at: row.created_at,
    updated_at: row.updated_at
  }
}

function eventRuleValues (eventId: number, input: EventAutomationBody, previous: RuleAction[] = []): repo.RuleValues {
  checkJsonText(input, 'body')
  const t = input.trigger
  return {
    name: input.name,
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    priority: 0,
    scope: 'EVENT',
    scope_id: String(eventId),
    schedule: validateSchedule(
      {
        event_type: t.type,
        cron_expression: t.cron_expression,
        timezone: t.timezone,
        offset_minutes: t.offset_minutes
      },
      'body.trigger',
      'type'
    ),
    conditions: validateConditions(t.conditions ?? {}, 'body.trigger.conditions'),
    actions: checkActions(input.actions, 'body.actions', previous)
  }
}

/** The rule of an event automation, if it belongs to that event. */
async function eventRule (trx: Tx, tenantId: string, eventId: number, ruleId: string, lock = false): Promise<RuleRow> {
  const row = await repo.findRule(trx, tenantId, ruleId, lock)
  if (row === undefined || row.scope !== 'EVENT' || row.scope_id !== String(eventId)) {
    throw error404NotFound('automation not found')
  }
  return row
}

export async function listEventAutomations (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  q: KeysetPageQuery
) {
  const event = await findEventForRead(trx, auth, eventId)
  const found = await repo.listRules(trx, auth.tenantId, { scope: 'EVENT', scopeId: String(event.id) }, q)
  // every item is a rule of this event: whoever may manage one of them holds automations:manage here, or is its creator
  const manager = await hasEventPermission(trx, auth, event, 'automations:manage')
  return {
    ...found,
    items: found.items.map(r => toEventAutomation(r, manager || r.creator_id === auth.userId)),
    size: q.size
  }
}

export async function getEventAutomation (trx: Tx, auth: AuthContext, eventId: number, ruleId: string) {
  const event = await findEventForRead(trx, auth, eventId)
  return await eventRule(trx, auth.tenantId, event.id, ruleId)
}

export async function createEventAutomation (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  input: EventAutomationBody
): Promise<RuleRow> {
  const values = eventRuleValues(eventId, input)
  await lockEventForAutomations(trx, auth, eventId)
  return await insertRuleWithEvent(trx, auth, values)
}

export async function replaceEventAutomation (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  ruleId: string,
  input: EventAutomationBody
): Promise<RuleRow> {
  await lockEventForAutomations(trx, auth, eventId)
  const current = await eventRule(trx, auth.tenantId, eventId, ruleId, true)
  return await updateRuleWithEvent(trx, auth, ruleId, eventRuleValues(eventId, input, current.actions))
}

export async function deleteEventAutomation (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  ruleId: string
): Promise<void> {
  await lockEventForAutomations(trx, auth, eventId)
  await eventRule(trx, auth.tenantId, eventId, ruleId, true)
  await deleteRuleWithEvent(trx, auth, ruleId)
}

/** The rule an execute or history request addresses, with the caller's right to it checked. */
export async function eventRuleFor (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  ruleId: string,
  write: boolean
): Promise<RuleRow> {
  if (write) await lockEventForAutomations(trx, auth, eventId)
  else await findEventForRead(trx, auth, eventId)
  return await eventRule(trx, auth.tenantId, eventId, ruleId)
}

// ---- manual runs

const EVENT_ID_AT = 'body.trigger_context.event_id'

/**
 * The event a manual run targets, checked for the caller. An EVENT rule acts on its own event only
 * (a context naming another is a 400); a SPACE rule on an event of its space; other rules on the
 * event the context names, if any. The caller must see the event and hold on it every event
 * permission the rule's actions need (actionNeeds), as the rule's creator must when it runs.
 */
export async function manualRunTarget (
  trx: Tx,
  auth: AuthContext,
  rule: RuleRow,
  context: Record<string, unknown>
): Promise<number | undefined> {
  const raw = context.event_id
  let id: number | undefined
  if (raw !== undefined && raw !== null) {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && INT.test(raw) ? Number(raw) : Number.NaN
    if (!Number.isSafeInteger(n) || n < 1) {
      throw invalidField(EVENT_ID_AT, 'expected an event id (a positive integer)', raw)
    }
    id = n
  }
  if (rule.scope === 'EVENT' && rule.scope_id !== null) {
    if (id !== undefined && String(id) !== rule.scope_id) {
      throw invalidField(EVENT_ID_AT, `this rule acts on its own event (${rule.scope_id}) only`, raw)
    }
    id = Number(rule.scope_id)
  }
  if (id === undefined) return undefined
  const event = await findEventForRead(trx, auth, id).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) throw invalidField(EVENT_ID_AT, 'no event with this id', raw)
    throw err
  })
  if (rule.scope === 'SPACE' && rule.scope_id !== null) {
    if (!(await eventInSpace(trx, auth.tenantId, rootEventId(event), Number(rule.scope_id)))) {
      throw invalidField(EVENT_ID_AT, `the event is not in space ${rule.scope_id}, the rule's scope`, raw)
    }
  }
  await checkCallerActions(trx, auth, rule.actions, event)
  return event.id
}

/**
 * The caller must hold on the event every permission the actions need (actionNeeds), as the rule's creator must when it
 * runs.
 */
async function checkCallerActions (trx: Tx, auth: AuthContext, actions: RuleAction[], event: EventRow): Promise<void> {
  for (const action of actions) {
    const needs = actionNeeds(action)
    if (needs === undefined) continue
    if (!auth.permissions.has(needs.tenant)) {
      throw error403Forbidden(`missing permission ${needs.tenant} to ${needs.verb} the event`)
    }
    if (needs.event !== undefined && !(await hasEventPermission(trx, auth, event, needs.event))) {
      throw error403Forbidden(
        `missing event permission ${needs.event} on event ${event.id}: the rule would ${needs.verb} it`
      )
    }
  }
}

// ---- retries

/**
 * The failed execution a retry request names, locked, with the caller's right checked as for a
 * manual run: they may manage the rule (canManageRule), and on the event the execution targets
 * they see it and hold what the actions of the execution's rule version need. 404 when the rule
 * has no such execution; 409 naming the state unless it failed, or when it was retried already.
 */
const notRetryable = (detail: string): ApiError => error409Conflict(detail, [], 'execution_not_retryable')

export async function failedExecutionForRetry (
  trx: Tx,
  auth: AuthContext,
  rule: RuleRow,
  executionId: string
): Promise<ExecutionRow> {
  if (!(await canManageRule(trx, auth, rule))) {
    throw error403Forbidden(
      'only who may manage the rule (tenant admins, its creator, managers of its event) may retry its executions'
    )
  }
  const row = await executions.lockExecution(trx, auth.tenantId, executionId)
  if (row === undefined || row.rule_id !== rule.id) throw error404NotFound('execution not found')
  if (row.status !== 'failed') {
    throw notRetryable(`the execution is ${row.status}: only failed executions can be retried`)
  }
  const retried = await executions.findRetryOf(trx, auth.tenantId, row.id)
  if (retried !== undefined) {
    throw notRetryable(
      `the execution was retried already by execution ${retried.id} (${retried.status}); retry that one if it failed`
    )
  }
  const version = await repo.findRuleVersion(trx, auth.tenantId, rule.id, row.rule_version)
  if (version === undefined) {
    throw notRetryable(`version ${row.rule_version} of the rule, which the execution ran, no longer exists`)
  }
  const raw = row.trigger_payload.event_id ?? (version.scope === 'EVENT' ? version.scope_id : undefined)
  const eventId = typeof raw === 'number' ? raw : typeof raw === 'string' && INT.test(raw) ? Number(raw) : undefined
  if (eventId !== undefined && Number.isSafeInteger(eventId)) {
    const event = await findEventForRead(trx, auth, eventId).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) {
        throw error403Forbidden(`the execution targets event ${eventId}, which you may not see`)
      }
      throw err
    })
    await checkCallerActions(trx, auth, version.actions, event)
  }
  return row
}

// ---- templates

const REMIND_STATUSES: AttendeeStatus[] = ['invited', 'confirmed', 'tentative']

/** Ready-made automations suited to an event template; each is a valid POST body as is. */
export function automationTemplates (template: string): EventAutomationBody[] {
  const common: EventAutomationBody[] = [
    {
      name: 'Reminder 24 hours before start',
      description: 'E-mails invited, confirmed and tentative attendees a day before the event starts',
      enabled: true,
      trigger: { type: 'event.starts_in', offset_minutes: 1440 },
      actions: [
        {
          type: 'notify',
          to: 'attendees',
          attendee_status: REMIND_STATUSES,
          channel: 'email',
          subject: 'Reminder: {{title}} starts tomorrow',
          body: '{{title}} starts at {{start_dt}}.',
          priority: 'normal'
        }
      ]
    },
    {
      name: 'Notify managers when someone declines',
      description: 'Tells the event managers when an attendee declines',
      enabled: true,
      trigger: { type: 'attendee.status_changed', conditions: { '==': [{ var: 'payload.status' }, 'declined'] } },
      actions: [
        {
          type: 'notify',
          to: 'managers',
          channel: 'push',
          subject: 'An attendee declined {{title}}',
          body: 'Contact {{contact_id}} declined.',
          priority: 'normal'
        }
      ]
    },
    {
      name: 'Thank attendees after the event',
      description: 'Thanks everyone who checked in, when the event ends',
      enabled: true,
      trigger: { type: 'event.ends_in', offset_minutes: 0 },
      actions: [
        {
          type: 'notify',
          to: 'attendees',
          attendee_status: ['checked_in'],
          channel: 'email',
          subject: 'Thank you for attending {{title}}',
          body: 'Thank you for coming to {{title}}.',
          priority: 'normal'
        }
      ]
    },
    {
      // check-ins write their own activity rows (docs/check-in.md): what a door leaves undone is the no-shows
      name: 'Mark no-shows when the event ends',
      description: 'Marks every confirmed attendee who never checked in as no_show, when the event ends',
      enabled: true,
      trigger: { type: 'event.ends_in', offset_minutes: 0 },
      actions: [{ type: 'mark_no_shows' }]
    }
  ]
  const byTemplate: Record<string, EventAutomationBody[]> = {
    announcement: [
      {
        name: 'Announce to attendees on publish',
        description: 'E-mails every attendee when the announcement is published',
        enabled: true,
        trigger: { type: 'announcement.published' },
        actions: [
          {
            type: 'notify',
            to: 'attendees',
            channel: 'email',
            subject: 'Announcement: {{title}}',
            body: '{{title}} was published.',
            priority: 'normal'
          }
        ]
      }
    ],
    delivery: [
      {
        name: 'Tell the creator about failed deliveries',
        description: 'Notifies the creator when a delivery moves to the failed state',
        enabled: true,
        trigger: { type: 'delivery.transitioned', conditions: { '==': [{ var: 'payload.to_state' }, 'failed'] } },
        actions: [
          {
            type: 'notify',
            to: 'creator',
            channel: 'email',
            subject: 'Delivery {{title}} failed',
            body: 'Reason: {{payload.failure_reason}}',
            priority: 'high'
          }
        ]
      }
    ],
    meeting: [
      {
        name: 'Remind managers an hour before',
        description: 'Notifies the managers one hour before the meeting starts',
        enabled: true,
        trigger: { type: 'event.starts_in', offset_minutes: 60 },
        actions: [
          {
            type: 'notify',
            to: 'managers',
            channel: 'push',
            subject: '{{title}} starts in an hour',
            body: '{{title}} starts at {{start_dt}}.',
            priority: 'normal'
          }
        ]
      }
    ]
  }
  return [...common, ...(byTemplate[template] ?? [])]
}

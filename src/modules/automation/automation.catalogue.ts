/**
 * What triggers and conditions are made of, defined once and served by
 * `GET /api/v1/automation/triggers`: the trigger catalogue (domain events of the outbox, schedules,
 * times relative to an event) and the condition language (JSON Logic over the trigger payload,
 * bounded), with the checks of a rule's schedule and condition. Checks throw a 400 naming the
 * field (`body.schedule.event_type`). Actions: automation.actions.ts.
 */
import { Cron } from 'croner'
import jsonLogic from 'json-logic-js'
import { invalidField } from '../../platform/http/errors.ts'
import { checkTimezone, LONE_SURROGATE, loneSurrogateAt } from '../../platform/http/validation.ts'
import type { RuleSchedule } from './automation.table.ts'

export interface TriggerDescriptor {
  type: string
  kind: 'domain_event' | 'schedule' | 'relative_time'
  description: string
  /** the payload fields a condition can read (`{"var": "payload.<field>"}`) */
  payload: Record<string, string>
}

const EVENT_FIELDS = {
  event_id: 'integer: the (published) event',
  template: 'string: the event template (generic, announcement, meeting, delivery…)',
  template_version: 'integer',
  state: 'string or null: the template state',
  title: 'string',
  status: 'string: draft, published or archived'
}
const ATTENDEE_FIELDS = {
  event_id: 'integer',
  contact_id: 'string (uuid)',
  status: 'string: invited, confirmed, declined, tentative, checked_in',
  template: 'string'
}

const USER_FIELDS = {
  user_id: 'string',
  state: 'string: active, inactive or removed',
  fields: 'array of string: changed profile fields',
  source: 'string: the identity-provider event kind'
}

/** Domain events of the outbox that rules can react to (`grep -rn "topic:" src/modules`). */
export const DOMAIN_TRIGGERS: TriggerDescriptor[] = [
  { type: 'event.created', kind: 'domain_event', description: 'An event was created (draft)', payload: EVENT_FIELDS },
  {
    type: 'event.updated',
    kind: 'domain_event',
    description: 'An event or its draft was edited',
    payload: { ...EVENT_FIELDS, fields: 'array of string: changed fields', draft: 'boolean' }
  },
  { type: 'event.published', kind: 'domain_event', description: 'An event was published', payload: EVENT_FIELDS },
  { type: 'event.archived', kind: 'domain_event', description: 'An event was archived', payload: EVENT_FIELDS },
  { type: 'event.deleted', kind: 'domain_event', description: 'An event was deleted', payload: EVENT_FIELDS },
  {
    type: 'event.transitioned',
    kind: 'domain_event',
    description: 'An event moved to another template state',
    payload: {
      ...EVENT_FIELDS,
      from_state: 'string or null',
      to_state: 'string',
      reason: 'string or null',
      payload: 'object: the transition payload'
    }
  },
  {
    type: 'event.activity_added',
    kind: 'domain_event',
    description: 'A client appended an activity row',
    payload: { ...EVENT_FIELDS, activity_id: 'integer', kind: 'string' }
  },
  {
    type: 'event.draft_started',
    kind: 'domain_event',
    description: 'An editing draft of a published event was started',
    payload: { ...EVENT_FIELDS, draft_id: 'integer' }
  },
  {
    type: 'event.draft_discarded',
    kind: 'domain_event',
    description: 'A draft was discarded',
    payload: { ...EVENT_FIELDS, draft_id: 'integer' }
  },
  {
    type: 'event.space_added',
    kind: 'domain_event',
    description: 'An event was added to a space',
    payload: { ...EVENT_FIELDS, space_id: 'integer' }
  },
  {
    type: 'event.space_removed',
    kind: 'domain_event',
    description: 'An event was removed from a space',
    payload: { ...EVENT_FIELDS, space_id: 'integer' }
  },
  {
    type: 'attendee.added',
    kind: 'domain_event',
    description: 'A contact was added to an event',
    payload: ATTENDEE_FIELDS
  },
  {
    type: 'attendee.status_changed',
    kind: 'domain_event',
    description: "An attendee's status changed",
    payload: { ...ATTENDEE_FIELDS, previous_status: 'string' }
  },
  {
    type: 'attendee.checked_in',
    kind: 'domain_event',
    description: 'An attendee checked in',
    payload: { ...ATTENDEE_FIELDS, previous_status: 'string', checked_in_at: 'string (ISO 8601)' }
  },
  {
    type: 'attendee.removed',
    kind: 'domain_event',
    description: 'A contact was removed from an event',
    payload: ATTENDEE_FIELDS
  },
  {
    type: 'event.cover_updated',
    kind: 'domain_event',
    description: 'The cover image of an event was replaced',
    payload: {
      event_id: 'integer',
      template: 'string',
      cover_image_key: 'string',
      content_type: 'string',
      size: 'integer'
    }
  },
  {
    type: 'event.document_linked',
    kind: 'domain_event',
    description: 'A document was linked to an event',
    payload: { event_id: 'integer', document_id: 'integer', template: 'string' }
  },
  {
    type: 'event.document_unlinked',
    kind: 'domain_event',
    description: 'A document was unlinked from an event',
    payload: { event_id: 'integer', document_id: 'integer', template: 'string' }
  },
  {
    type: 'event.link_added',
    kind: 'domain_event',
    description: 'An event was linked to another',
    payload: { event_id: 'integer', target_id: 'integer', template: 'string' }
  },
  {
    type: 'event.link_removed',
    kind: 'domain_event',
    description: 'A link between events was removed',
    payload: { event_id: 'integer', target_id: 'integer', template: 'string' }
  },
  {
    type: 'event.manager_added',
    kind: 'domain_event',
    description: 'A manager was added to an event',
    payload: { event_id: 'integer', user_id: 'string', role: 'string or null', permissions: 'array of string' }
  },
  {
    type: 'event.manager_invited',
    kind: 'domain_event',
    description: 'A manager was invited by e-mail',
    payload: {
      event_id: 'integer',
      manager_id: 'integer',
      email: 'string',
      role: 'string or null',
      permissions: 'array of string',
      renewed: 'boolean'
    }
  },
  {
    type: 'event.manager_updated',
    kind: 'domain_event',
    description: "A manager's permissions changed",
    payload: { event_id: 'integer', user_id: 'string', role: 'string or null', permissions: 'array of string' }
  },
  {
    type: 'event.manager_removed',
    kind: 'domain_event',
    description: 'A manager was removed',
    payload: { event_id: 'integer', user_id: 'string' }
  },
  {
    type: 'milestone.added',
    kind: 'domain_event',
    description: 'A milestone was added to an event',
    payload: { event_id: 'integer', milestone_event_id: 'integer', template: 'string' }
  },
  {
    type: 'milestone.updated',
    kind: 'domain_event',
    description: "A milestone's sequence changed",
    payload: { event_id: 'integer', milestone_event_id: 'integer', sequence: 'integer', template: 'string' }
  },
  {
    type: 'milestone.status_changed',
    kind: 'domain_event',
    description: "A milestone's status changed",
    payload: { event_id: 'integer', milestone_event_id: 'integer', status_mode: 'string', template: 'string' }
  },
  {
    type: 'milestone.removed',
    kind: 'domain_event',
    description: 'A milestone was removed',
    payload: { event_id: 'integer', milestone_event_id: 'integer', template: 'string' }
  },
  {
    type: 'attachment.added',
    kind: 'domain_event',
    description: 'An attachment was added to an event',
    payload: { event_id: 'integer', attachment_id: 'integer', kind: 'string', template: 'string' }
  },
  {
    type: 'attachment.removed',
    kind: 'domain_event',
    description: 'An attachment was removed',
    payload: {
      event_id: 'integer or null',
      series_id: 'integer or null',
      attachment_id: 'integer',
      kind: 'string',
      template: 'string'
    }
  },
  {
    type: 'series.created',
    kind: 'domain_event',
    description: 'A recurring series was created',
    payload: { series_id: 'integer', anchor_event_id: 'integer', occurrences: 'integer' }
  },
  {
    type: 'series.updated',
    kind: 'domain_event',
    description: 'A series was edited',
    payload: {
      series_id: 'integer',
      fields: 'array of string',
      removed_occurrences: 'array of integer',
      added_occurrences: 'array'
    }
  },
  {
    type: 'series.published',
    kind: 'domain_event',
    description: 'A series was published',
    payload: { series_id: 'integer', version: 'integer', notify: 'boolean' }
  },
  {
    type: 'series.split',
    kind: 'domain_event',
    description: 'A series was split in two',
    payload: { series_id: 'integer', from_series_id: 'integer', at_index: 'integer' }
  },
  {
    type: 'series.occurrences_deleted',
    kind: 'domain_event',
    description: 'Occurrences of a series were deleted',
    payload: {
      series_id: 'integer',
      scope: 'string: this, future or all',
      event_id: 'integer',
      series_index: 'integer'
    }
  },
  {
    type: 'space.created',
    kind: 'domain_event',
    description: 'A space was created',
    payload: { space_id: 'integer', title: 'string', parent_ids: 'array of integer' }
  },
  {
    type: 'space.updated',
    kind: 'domain_event',
    description: 'A space was edited',
    payload: { space_id: 'integer', fields: 'array of string', pending: 'boolean' }
  },
  {
    type: 'space.published',
    kind: 'domain_event',
    description: 'A space was published',
    payload: {
      space_id: 'integer',
      version: 'integer',
      first_publish: 'boolean',
      fields: 'array of string',
      notify: 'boolean'
    }
  },
  {
    type: 'space.archived',
    kind: 'domain_event',
    description: 'A space was archived',
    payload: { space_id: 'integer' }
  },
  { type: 'space.deleted', kind: 'domain_event', description: 'A space was deleted', payload: { space_id: 'integer' } },
  {
    type: 'space.member_added',
    kind: 'domain_event',
    description: 'A member joined a space',
    payload: { space_id: 'integer', user_id: 'string', role: 'string' }
  },
  {
    type: 'space.member_removed',
    kind: 'domain_event',
    description: 'A member left a space',
    payload: { space_id: 'integer', user_id: 'string' }
  },
  {
    type: 'space.member_updated',
    kind: 'domain_event',
    description: "A member's role changed",
    payload: { space_id: 'integer', user_id: 'string', role: 'string', previous_role: 'string' }
  },
  {
    type: 'space.manager_added',
    kind: 'domain_event',
    description: 'A manager was added to a space',
    payload: { space_id: 'integer', user_id: 'string', role: 'string', permissions: 'array of string' }
  },
  {
    type: 'space.manager_removed',
    kind: 'domain_event',
    description: 'A manager was removed from a space',
    payload: { space_id: 'integer', user_id: 'string' }
  },
  {
    type: 'space.contact_added',
    kind: 'domain_event',
    description: 'A contact was linked to a space',
    payload: { space_id: 'integer', contact_id: 'string (uuid)' }
  },
  {
    type: 'space.contact_removed',
    kind: 'domain_event',
    description: 'A contact was unlinked from a space',
    payload: { space_id: 'integer', contact_id: 'string (uuid)' }
  },
  {
    type: 'space.event_removed',
    kind: 'domain_event',
    description: 'An event was unlinked from a space',
    payload: { space_id: 'integer', event_id: 'integer' }
  },
  {
    type: 'space.event_added',
    kind: 'domain_event',
    description: 'An event was linked to a space',
    payload: { space_id: 'integer', event_id: 'integer' }
  },
  {
    type: 'contact.created',
    kind: 'domain_event',
    description: 'A contact was created',
    payload: { contact_id: 'string (uuid)', email: 'string or null', source: 'string: api or upsert' }
  },
  {
    type: 'contact.updated',
    kind: 'domain_event',
    description: 'A contact was edited',
    payload: { contact_id: 'string (uuid)', fields: 'array of string' }
  },
  {
    type: 'contact.deleted',
    kind: 'domain_event',
    description: 'A contact was deleted',
    payload: { contact_id: 'string (uuid)' }
  },
  {
    type: 'user.added',
    kind: 'domain_event',
    description: 'A user was added by the identity provider',
    payload: { ...USER_FIELDS, email: 'string', display_name: 'string' }
  },
  { type: 'user.changed', kind: 'domain_event', description: "A user's profile changed", payload: USER_FIELDS },
  {
    type: 'user.removed',
    kind: 'domain_event',
    description: 'A user was removed (their access is revoked)',
    payload: { ...USER_FIELDS, revoked: 'object: what was revoked' }
  },
  { type: 'user.deactivated', kind: 'domain_event', description: 'A user was deactivated', payload: USER_FIELDS },
  { type: 'user.reactivated', kind: 'domain_event', description: 'A user was reactivated', payload: USER_FIELDS },
  {
    type: 'automation.rule_disabled',
    kind: 'domain_event',
    description:
      "The service disabled a rule because its creator was removed or deactivated (the rule's disabled_reason says which)",
    payload: { rule_id: 'string (uuid)', name: 'string', creator_id: 'string', reason: 'string' }
  }
]

export const CRON_TRIGGER = 'schedule.cron'
export const RELATIVE_TRIGGERS = ['event.starts_in', 'event.ends_in'] as const

export const TIME_TRIGGERS: TriggerDescriptor[] = [
  {
    type: CRON_TRIGGER,
    kind: 'schedule',
    description:
      'Fires at every slot of `cron_expression` (5 or 6 fields) in `timezone` (IANA, default UTC); a slot missed while no worker ran fires once',
    payload: { scheduled_for: 'string: the slot (ISO 8601)', rule_id: 'string' }
  },
  {
    type: 'event.starts_in',
    kind: 'relative_time',
    description:
      '`offset_minutes` (0 to 525600) before a published event starts; once per event and start time; a missed one still fires until an hour after the start',
    payload: { ...EVENT_FIELDS, start_dt: 'string (ISO 8601)', offset_minutes: 'integer' }
  },
  {
    type: 'event.ends_in',
    kind: 'relative_time',
    description:
      '`offset_minutes` (0 to 525600) before a published event ends (0 = when it ends); once per event and end time; a missed one still fires until an hour after the end',
    payload: { ...EVENT_FIELDS, end_dt: 'string (ISO 8601)', offset_minutes: 'integer' }
  }
]

/** Event topics also fire `<template>.<verb>` (e.g. `announcement.published`) for non-generic templates. */
export const TEMPLATE_QUALIFIED_NOTE =
  'Event and attendee triggers of an event whose template is not generic also fire as <template>.<verb>, e.g. announcement.published, delivery.transitioned.'

const DOMAIN_TYPES = new Set(DOMAIN_TRIGGERS.map(t => t.type))
const TEMPLATE_QUALIFIED = /^[a-z][a-z0-9_]{0,49}\.[a-z][a-z0-9_]{0,49}$/

/** The trigger types an outbox row fires: its topic, plus `<template>.<verb>` for event and attendee topics. */
export function triggerTypesOf (topic: string, payload: Record<string, unknown>): string[] {
  const types = [topic]
  const template = payload.template
  const [aggregate, verb] = topic.split('.')
  if (
    (aggregate === 'event' || aggregate === 'attendee') &&
    typeof template === 'string' &&
    template !== '' &&
    template !== 'generic' &&
    verb !== undefined
  ) {
    types.push(`${template}.${verb}`)
  }
  return types
}

export function isKnownTriggerType (type: string): boolean {
  if (DOMAIN_TYPES.has(type) || type === CRON_TRIGGER || (RELATIVE_TRIGGERS as readonly string[]).includes(type)) {
    return true
  }
  // template-qualified names: <template>.<verb of an event or attendee topic>
  if (!TEMPLATE_QUALIFIED.test(type)) return false
  const verb = type.split('.')[1]
  return DOMAIN_TRIGGERS.some(
    t => (t.type.startsWith('event.') || t.type.startsWith('attendee.')) && t.type.split('.')[1] === verb
  )
}

// ---- JSON text that jsonb refuses

/** Refuses strings (values or keys) with a lone UTF-16 surrogate, which jsonb cannot store (22P05). */
export function checkJsonText (value: unknown, at: string): void {
  const bad = loneSurrogateAt(value, at)
  if (bad === undefined) return
  // keys are checked before what they hold: a location with a lone surrogate ends in the key that has it
  throw LONE_SURROGATE.test(bad)
    ? invalidField(bad, 'expected a key without lone UTF-16 surrogates')
    : invalidField(bad, 'expected text without lone UTF-16 surrogates')
}

/** Refuses JSON nested deeper than `max` levels (walked without recursion, so any depth is safe to check). */
export function checkJsonDepth (value: unknown, at: string, max: number): void {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number]
    if (v === null || typeof v !== 'object') continue
    if (depth >= max) throw invalidField(at, `expected at most ${max} levels of nesting`)
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1])
  }
}

// ---- schedule / trigger validation

export const MAX_OFFSET_MINUTES = 525_600

/** Checks a schedule (`event_type` + optional cron, timezone, offset); `at` is its location. */
export function validateSchedule (s: RuleSchedule, at: string, typeField = 'event_type'): RuleSchedule {
  if (!isKnownTriggerType(s.event_type)) {
    throw invalidField(`${at}.${typeField}`, 'unknown trigger type; see GET /api/v1/automation/triggers', s.event_type)
  }
  const isCron = s.event_type === CRON_TRIGGER
  const isRelative = (RELATIVE_TRIGGERS as readonly string[]).includes(s.event_type)
  if (isCron) {
    if (s.cron_expression === undefined) throw invalidField(`${at}.cron_expression`, `required for ${CRON_TRIGGER}`)
    checkTimezone(s.timezone, `${at}.timezone`)
    try {
      // croner parses; it throws on a malformed pattern
      const c = new Cron(s.cron_expression, { timezone: s.timezone ?? 'UTC', paused: true })
      c.stop()
    } catch (err) {
      throw invalidField(
        `${at}.cron_expression`,
        `invalid cron expression: ${(err as Error).message}`,
        s.cron_expression
      )
    }
  } else if (s.cron_expression !== undefined) {
    throw invalidField(`${at}.cron_expression`, `only ${CRON_TRIGGER} takes a cron expression`, s.cron_expression)
  } else if (s.timezone !== undefined) {
    throw invalidField(`${at}.timezone`, `only ${CRON_TRIGGER} takes a timezone`, s.timezone)
  }
  if (isRelative) {
    if (s.offset_minutes === undefined) throw invalidField(`${at}.offset_minutes`, `required for ${s.event_type}`)
  } else if (s.offset_minutes !== undefined) {
    throw invalidField(
      `${at}.offset_minutes`,
      'only event.starts_in and event.ends_in take an offset',
      s.offset_minutes
    )
  }
  const out: RuleSchedule = { event_type: s.event_type }
  if (s.cron_expression !== undefined) out.cron_expression = s.cron_expression
  if (isCron) out.timezone = s.timezone ?? 'UTC'
  if (s.offset_minutes !== undefined) out.offset_minutes = s.offset_minutes
  return out
}

// ---- conditions: JSON Logic, bounded

export const CONDITION_MAX_DEPTH = 8
export const CONDITION_MAX_BYTES = 4096
export const CONDITION_MAX_NODES = 200

/** JSON Logic operations allowed in conditions (no `method`, no custom operations). */
export const CONDITION_OPERATORS = [
  '==', '===', '!=', '!==', '>', '>=', '<', '<=', '!', '!!', 'and', 'or', 'if', '?:',
  'in', 'var', 'missing', 'missing_some', 'cat', 'substr', '+', '-', '*', '/', '%', 'min', 'max',
  'all', 'some', 'none', 'merge'
] as const
const OPERATORS = new Set<string>(CONDITION_OPERATORS)

/**
 * Validates a condition: a JSON Logic expression (or `{}` = always true) of known operators,
 * at most 8 levels deep, 200 nodes and 4096 bytes.
 */
export function validateConditions (value: unknown, at: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidField(at, 'expected a JSON Logic object, e.g. {"==": [{"var": "payload.status"}, "declined"]}', value)
  }
  if (Buffer.byteLength(JSON.stringify(value)) > CONDITION_MAX_BYTES) {
    throw invalidField(at, `expected at most ${CONDITION_MAX_BYTES} bytes of JSON`)
  }
  if (Object.keys(value).length === 0) return {}
  let nodes = 0
  const walk = (v: unknown, path: string, depth: number): void => {
    if (++nodes > CONDITION_MAX_NODES) throw invalidField(at, `expected at most ${CONDITION_MAX_NODES} nodes`)
    if (depth > CONDITION_MAX_DEPTH) {
      throw invalidField(path, `expected at most ${CONDITION_MAX_DEPTH} levels of nesting`)
    }
    if (v === null || typeof v !== 'object') return
    if (Array.isArray(v)) {
      v.forEach((item, i) => { walk(item, `${path}[${i}]`, depth + 1) })
      return
    }
    const keys = Object.keys(v)
    if (keys.length !== 1) throw invalidField(path, 'expected an object with exactly one operator', v)
    const op = keys[0] as string
    if (!OPERATORS.has(op)) {
      throw invalidField(`${path}.${op}`, `unknown operator; expected one of ${CONDITION_OPERATORS.join(' ')}`, op)
    }
    const arg = (v as Record<string, unknown>)[op]
    if (op === 'var') {
      const name = Array.isArray(arg) ? arg[0] : arg
      if (typeof name !== 'string' && typeof name !== 'number') {
        throw invalidField(`${path}.var`, 'expected a field path string', arg)
      }
    }
    walk(arg, `${path}.${op}`, depth + 1)
  }
  walk(value, at, 1)
  return value as Record<string, unknown>
}

export interface ConditionResult { condition: unknown, result: boolean }

/** Evaluates a validated condition against `data`: each clause of a top-level `and` is reported. */
export function evaluateConditions (
  conditions: Record<string, unknown>,
  data: Record<string, unknown>
): { met: boolean; results: ConditionResult[] } {
  if (Object.keys(conditions).length === 0) return { met: true, results: [] }
  const clauses = Array.isArray(conditions.and) ? (conditions.and as unknown[]) : [conditions]
  const results = clauses.map(c => ({
    condition: c,
    result: jsonLogic.truthy(jsonLogic.apply(c as jsonLogic.RulesLogic, data))
  }))
  return { met: results.every(r => r.result), results }
}

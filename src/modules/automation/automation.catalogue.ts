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
  status: 'string: invited, confirmed, declined, tentative, checked_in, pending, waitlisted, no_show, ' +
    'awaiting_confirmation',
  template: 'string'
}

const USER_FIELDS = {
  user_id: 'string',
  state: 'string: active, inactive or removed',
  fields: 'array of string: changed profile fields',
  source: 'string: the identity-provider event kind'
}

const DOCUMENT_FIELDS = { event_id: 'integer', document_id: 'integer', template: 'string' }
const LINK_FIELDS = { event_id: 'integer', target_id: 'integer', template: 'string' }
const EVENT_USER_FIELDS = { event_id: 'integer', user_id: 'string' }
const EVENT_MANAGER_FIELDS = { ...EVENT_USER_FIELDS, role: 'string or null', permissions: 'array of string' }
/** The payload of a milestone topic: `extra` before the template, as the milestones routes write it. */
const milestoneFields = (extra: Record<string, string> = {}) =>
  ({ event_id: 'integer', milestone_event_id: 'integer', ...extra, template: 'string' })
const SPACE_USER_FIELDS = { space_id: 'integer', user_id: 'string' }
const SPACE_CONTACT_FIELDS = { space_id: 'integer', contact_id: 'string (uuid)' }
const SPACE_EVENT_FIELDS = { space_id: 'integer', event_id: 'integer' }

/** A trigger on a domain event of the outbox: its topic, what it means, the payload fields a condition can read. */
function domainEvent (type: string, description: string, payload: Record<string, string>): TriggerDescriptor {
  return { type, kind: 'domain_event', description, payload }
}

/** Domain events of the outbox that rules can react to (`grep -rn "topic:" src/modules`). */
export const DOMAIN_TRIGGERS: TriggerDescriptor[] = [
  domainEvent('event.created', 'An event was created (draft), or cloned from another', {
    ...EVENT_FIELDS,
    cloned_from: 'integer: the event it was cloned from (POST /events/{id}/clone); absent otherwise',
    copied: 'array of string: the parts a clone copied (description, place, registration, questions, managers)'
  }),
  domainEvent('event.updated', 'An event or its draft was edited',
    { ...EVENT_FIELDS, fields: 'array of string: changed fields', draft: 'boolean' }),
  domainEvent('event.published', 'An event was published', EVENT_FIELDS),
  domainEvent('event.unpublished', 'A published event went back to draft (off public pages and feeds)', {
    ...EVENT_FIELDS,
    version: 'integer: the publishes so far',
    cancel_in_feeds: 'boolean: calendar feeds keep it as cancelled until it is published again',
    from_draft: 'boolean: an open draft was moved onto the event'
  }),
  domainEvent('event.archived', 'An event was archived', EVENT_FIELDS),
  domainEvent('event.deleted', 'An event was deleted', EVENT_FIELDS),
  domainEvent('event.cancelled',
    'An event was cancelled (one event, or each occurrence a series cancellation reached)', {
      ...EVENT_FIELDS,
      reason: 'string',
      scope: 'string: this, future or all',
      cancelled_by: 'string'
    }),
  domainEvent('event.transitioned', 'An event moved to another template state', {
    ...EVENT_FIELDS,
    from_state: 'string or null',
    to_state: 'string',
    reason: 'string or null',
    payload: 'object: the transition payload'
  }),
  domainEvent('event.activity_added', 'A client appended an activity row',
    { ...EVENT_FIELDS, activity_id: 'integer', kind: 'string' }),
  domainEvent('event.draft_started', 'An editing draft of a published event was started',
    { ...EVENT_FIELDS, draft_id: 'integer' }),
  domainEvent('event.draft_discarded', 'A draft was discarded', { ...EVENT_FIELDS, draft_id: 'integer' }),
  domainEvent('event.space_added', 'An event was added to a space', { ...EVENT_FIELDS, space_id: 'integer' }),
  domainEvent('event.space_removed', 'An event was removed from a space', { ...EVENT_FIELDS, space_id: 'integer' }),
  domainEvent('attendee.added', 'A contact was added to an event (past capacity: waitlisted; with approval: pending)',
    {
      ...ATTENDEE_FIELDS,
      waitlist_position: 'integer, when waitlisted',
      by: 'string: guest, when the guest registered from the public side (no actor; docs/guests.md)',
      source: 'string: registration, when the guest registered from the public side',
      answers: 'object: the answers to the registration questions, by question id, when given'
    }),
  domainEvent('attendee.status_changed', "An attendee's status changed (approval, decline, no-show included)",
    {
      ...ATTENDEE_FIELDS,
      previous_status: 'string',
      waitlist_position: 'integer, when waitlisted',
      by: 'string: guest, when the guest answered through their own link (no actor; docs/guests.md)'
    }),
  domainEvent('attendee.answers_changed', 'A guest changed their answers to the registration questions', {
    ...ATTENDEE_FIELDS,
    answers: 'object: the answers, by question id',
    by: 'string: guest'
  }),
  domainEvent('attendee.promoted', 'A seat freed up and the first waitlisted attendee got it (now confirmed)', {
    ...ATTENDEE_FIELDS,
    previous_status: 'string: waitlisted',
    previous_position: 'integer: the place on the waitlist it had'
  }),
  domainEvent('attendee.checked_in', 'An attendee checked in (or came back in after a check-out: re_entry)', {
    ...ATTENDEE_FIELDS,
    previous_status: 'string',
    checked_in_at: 'string (ISO 8601): the arrival',
    method: 'string: manual, scan or api',
    checked_in_by: 'string: who let the attendee in',
    re_entry: 'boolean: present (true) only on a re-entry after a check-out'
  }),
  domainEvent('attendee.check_in_undone', 'A check-in was undone: the attendee is back in the status they had', {
    ...ATTENDEE_FIELDS,
    previous_status: 'string: checked_in',
    checked_in_at: 'string (ISO 8601): the undone check-in'
  }),
  domainEvent('attendee.checked_out', 'A checked-in attendee was checked out (the status stays checked_in)', {
    ...ATTENDEE_FIELDS,
    checked_in_at: 'string (ISO 8601)',
    checked_out_at: 'string (ISO 8601)',
    checked_out_by: 'string'
  }),
  domainEvent('attendee.removed', 'A contact was removed from an event', ATTENDEE_FIELDS),
  domainEvent('event.cover_updated', 'The cover image of an event was replaced',
    { event_id: 'integer', template: 'string', cover_image_key: 'string', content_type: 'string', size: 'integer' }),
  domainEvent('event.document_linked', 'A document was linked to an event', DOCUMENT_FIELDS),
  domainEvent('event.document_unlinked', 'A document was unlinked from an event', DOCUMENT_FIELDS),
  domainEvent('event.link_added', 'An event was linked to another', LINK_FIELDS),
  domainEvent('event.link_removed', 'A link between events was removed', LINK_FIELDS),
  domainEvent('event.manager_added', 'A manager was added to an event', EVENT_MANAGER_FIELDS),
  domainEvent('event.manager_invited', 'A manager was invited by e-mail', {
    event_id: 'integer',
    manager_id: 'integer',
    email: 'string',
    role: 'string or null',
    permissions: 'array of string',
    renewed: 'boolean'
  }),
  domainEvent('event.manager_updated', "A manager's permissions changed", EVENT_MANAGER_FIELDS),
  domainEvent('event.manager_removed', 'A manager was removed', EVENT_USER_FIELDS),
  domainEvent('milestone.added', 'A milestone was added to an event', milestoneFields()),
  domainEvent('milestone.updated', "A milestone's sequence changed", milestoneFields({ sequence: 'integer' })),
  domainEvent('milestone.status_changed', "A milestone's status changed", milestoneFields({ status_mode: 'string' })),
  domainEvent('milestone.removed', 'A milestone was removed', milestoneFields()),
  domainEvent('attachment.added', 'An attachment was added to an event',
    { event_id: 'integer', attachment_id: 'integer', kind: 'string', template: 'string' }),
  domainEvent('attachment.removed', 'An attachment was removed', {
    event_id: 'integer or null',
    series_id: 'integer or null',
    attachment_id: 'integer',
    kind: 'string',
    template: 'string'
  }),
  domainEvent('series.created', 'A recurring series was created',
    { series_id: 'integer', anchor_event_id: 'integer', occurrences: 'integer' }),
  domainEvent('series.updated', 'A series was edited', {
    series_id: 'integer',
    fields: 'array of string',
    removed_occurrences: 'array of integer',
    added_occurrences: 'array'
  }),
  domainEvent('series.published', 'A series was published',
    { series_id: 'integer', version: 'integer', notify: 'boolean' }),
  domainEvent('series.split', 'A series was split in two',
    { series_id: 'integer', from_series_id: 'integer', at_index: 'integer' }),
  domainEvent('series.occurrences_deleted', 'Occurrences of a series were deleted',
    { series_id: 'integer', scope: 'string: this, future or all', event_id: 'integer', series_index: 'integer' }),
  domainEvent('space.created', 'A space was created',
    { space_id: 'integer', title: 'string', parent_ids: 'array of integer' }),
  domainEvent('space.updated', 'A space was edited',
    { space_id: 'integer', fields: 'array of string', pending: 'boolean' }),
  domainEvent('space.published', 'A space was published', {
    space_id: 'integer',
    version: 'integer',
    first_publish: 'boolean',
    fields: 'array of string',
    notify: 'boolean'
  }),
  domainEvent('space.unpublished', 'A published space went back to draft (off its public page)', {
    space_id: 'integer',
    version: 'integer: the publishes so far',
    fields: 'array of string: pending changes that became its content',
    cancel_in_feeds: 'boolean: its anonymous feed shows its events cancelled (else none)'
  }),
  domainEvent('space.archived', 'A space was archived', { space_id: 'integer' }),
  domainEvent('space.deleted', 'A space was deleted', { space_id: 'integer' }),
  domainEvent('space.member_added', 'A member joined a space', { ...SPACE_USER_FIELDS, role: 'string' }),
  domainEvent('space.member_removed', 'A member left a space', SPACE_USER_FIELDS),
  domainEvent('space.member_updated', "A member's role changed",
    { ...SPACE_USER_FIELDS, role: 'string', previous_role: 'string' }),
  domainEvent('space.manager_added', 'A manager was added to a space',
    { ...SPACE_USER_FIELDS, role: 'string', permissions: 'array of string' }),
  domainEvent('space.manager_removed', 'A manager was removed from a space', SPACE_USER_FIELDS),
  domainEvent('space.contact_added', 'A contact was linked to a space', SPACE_CONTACT_FIELDS),
  domainEvent('space.contact_removed', 'A contact was unlinked from a space', SPACE_CONTACT_FIELDS),
  domainEvent('space.event_removed', 'An event was unlinked from a space', SPACE_EVENT_FIELDS),
  domainEvent('space.event_added', 'An event was linked to a space', SPACE_EVENT_FIELDS),
  domainEvent('contact.created', 'A contact was created',
    { contact_id: 'string (uuid)', email: 'string or null', source: 'string: api or upsert' }),
  domainEvent('contact.updated', 'A contact was edited', { contact_id: 'string (uuid)', fields: 'array of string' }),
  domainEvent('contact.deleted', 'A contact was deleted', { contact_id: 'string (uuid)' }),
  domainEvent('contact.merged', 'Contacts were merged into one: the absorbed ones are deleted and redirect to it', {
    contact_id: 'string (uuid): the contact kept, which the absorbed ones became',
    absorbed_ids: 'array of string: the absorbed contacts (uuids), deleted; a read of one answers 308 to contact_id',
    fields: 'array of string: the fields whose value the merge changed (taken from an absorbed contact; tags: union)'
  }),
  domainEvent('user.added', 'A user was added by the identity provider',
    { ...USER_FIELDS, email: 'string', display_name: 'string' }),
  domainEvent('user.changed', "A user's profile changed", USER_FIELDS),
  domainEvent('user.removed', 'A user was removed (their access is revoked)',
    { ...USER_FIELDS, revoked: 'object: what was revoked' }),
  domainEvent('user.deactivated', 'A user was deactivated', USER_FIELDS),
  domainEvent('user.reactivated', 'A user was reactivated', USER_FIELDS),
  domainEvent(
    'automation.rule_disabled',
    'The service disabled a rule because its creator was removed or deactivated ' +
    "(the rule's disabled_reason says which)",
    { rule_id: 'string (uuid)', name: 'string', creator_id: 'string', reason: 'string' }
  )
]

export const CRON_TRIGGER = 'schedule.cron'
export const RELATIVE_TRIGGERS = ['event.starts_in', 'event.ends_in'] as const

export const TIME_TRIGGERS: TriggerDescriptor[] = [
  {
    type: CRON_TRIGGER,
    kind: 'schedule',
    description:
      'Fires at every slot of `cron_expression` (5 or 6 fields) in `timezone` (IANA, default UTC); ' +
      'a slot missed while no worker ran fires once',
    payload: { scheduled_for: 'string: the slot (ISO 8601)', rule_id: 'string' }
  },
  {
    type: 'event.starts_in',
    kind: 'relative_time',
    description:
      '`offset_minutes` (0 to 525600) before a published event starts; once per event and start time; ' +
      'a missed one still fires until an hour after the start',
    payload: { ...EVENT_FIELDS, start_dt: 'string (ISO 8601)', offset_minutes: 'integer' }
  },
  {
    type: 'event.ends_in',
    kind: 'relative_time',
    description:
      '`offset_minutes` (0 to 525600) before a published event ends (0 = when it ends); once per event and end time; ' +
      'a missed one still fires until an hour after the end',
    payload: { ...EVENT_FIELDS, end_dt: 'string (ISO 8601)', offset_minutes: 'integer' }
  }
]

/** Event topics also fire `<template>.<verb>` (e.g. `announcement.published`) for non-generic templates. */
export const TEMPLATE_QUALIFIED_NOTE =
  'Event and attendee triggers of an event whose template is not generic also fire as <template>.<verb>, ' +
  'e.g. announcement.published, delivery.transitioned.'

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

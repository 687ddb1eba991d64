/**
 * Actions: one TypeBox schema per action type, joined as a union discriminated by `type`
 * (`Action`). The union validates the actions of rule bodies and documents them in OpenAPI, and
 * `GET /api/v1/automation/actions` answers the catalogue read from the same schemas (`ACTIONS`).
 * What a schema cannot say is checked after it (`checkActions`): the webhook URL's policy, a masked
 * webhook secret, the size of a transition's payload, attendee statuses only for attendees. What an
 * action needs of the rule's creator on the event: automation.run-as.ts.
 */
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox'
import { invalidField } from '../../platform/http/errors.ts'
import { StringEnum } from '../../platform/http/schema.ts'
import { NOTIFICATION_CHANNELS } from '../../platform/notifications/notifications.ts'
import type { RuleAction } from './automation.table.ts'

export const ATTENDEE_STATUSES = ['invited', 'confirmed', 'declined', 'tentative', 'checked_in'] as const
export type AttendeeStatus = typeof ATTENDEE_STATUSES[number]
export const NOTIFY_AUDIENCES = ['attendees', 'managers', 'creator'] as const
export const CHANNELS = NOTIFICATION_CHANNELS
export const PRIORITIES = ['normal', 'high'] as const
export const ACTIVITY_KINDS = ['automation', 'note', 'comment'] as const
export const MAX_ACTIONS = 20
/** JSON bytes of a transition's payload. */
const TRANSITION_PAYLOAD_MAX_BYTES = 4096

/**
 * Webhook secrets are write-only: responses show this instead, and a write that sends it back keeps the stored secret.
 */
export const SECRET_MASK = '********'

/**
 * Whether an action type acts on the trigger's event (the catalogue's `needs_event`), by type. Kept beside the
 * schemas rather than in them: a keyword of our own (it was `x-needs-event`) makes Ajv in its default strict mode
 * refuse the schema, in every integrator's validator (docs/api-conventions.md, "OpenAPI document").
 */
const NEEDS_EVENT = new Map<string, boolean>()

/** One action type: `type` and the fields, each described as the catalogue lists it. */
function actionSchema<T extends string, P extends TProperties> (
  type: T,
  name: string,
  o: { description: string, needsEvent: boolean },
  fields: P
) {
  NEEDS_EVENT.set(type, o.needsEvent)
  return Type.Object({ type: Type.Literal(type), ...fields }, {
    $id: `Automation${name}Action`,
    description: o.description,
    additionalProperties: false
  })
}

const statusList = (description: string) =>
  Type.Array(StringEnum(ATTENDEE_STATUSES), { minItems: 1, maxItems: ATTENDEE_STATUSES.length, description })

export const NotifyAction = actionSchema('notify', 'Notify', {
  description:
    "Queue a notification (notification_outbox, delivered by the notification sender) to the event's attendees " +
    '(optionally of some statuses), its active managers or its creator. {{field}} in subject and body is replaced by ' +
    "the trigger payload's field.",
  needsEvent: true
}, {
  to: StringEnum(NOTIFY_AUDIENCES, { description: 'attendees | managers | creator' }),
  attendee_status: Type.Optional(statusList('array of attendee statuses (to = attendees)')),
  channel: Type.Optional(StringEnum(CHANNELS, { description: 'email (default), push, sms' })),
  subject: Type.String({ minLength: 1, maxLength: 200, description: 'string (1..200)' }),
  body: Type.String({ minLength: 1, maxLength: 5000, description: 'string (1..5000)' }),
  priority: Type.Optional(StringEnum(PRIORITIES, { description: 'normal (default) or high' }))
})

export const ActivityAction = actionSchema('activity', 'Activity', {
  description: 'Append an activity row (kind `automation` unless given) to the event',
  needsEvent: true
}, {
  kind: Type.Optional(StringEnum(ACTIVITY_KINDS, { description: 'string: note, comment or automation (default)' })),
  message: Type.Optional(Type.String({ maxLength: 2000, description: 'string (..2000)' }))
})

export const TransitionAction = actionSchema('transition', 'Transition', {
  description: 'Move the event to another state of its template state machine (as the service)',
  needsEvent: true
}, {
  to_state: Type.String({ minLength: 1, maxLength: 100, description: 'string' }),
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'string' })),
  payload: Type.Optional(
    Type.Object({}, { additionalProperties: true, description: 'object: transition payload (guards)' })
  )
})

export const SetAttendeeStatusAction = actionSchema('set_attendee_status', 'SetAttendeeStatus', {
  description: "Set the status of the trigger's attendee (payload.contact_id) or of every attendee of some statuses",
  needsEvent: true
}, {
  status: StringEnum(ATTENDEE_STATUSES, { description: 'attendee status' }),
  from_status: Type.Optional(
    statusList("array of attendee statuses: apply to every attendee of these statuses instead of the trigger's one")
  )
})

export const MarkNoShowsAction = actionSchema('mark_no_shows', 'MarkNoShows', {
  description:
    'After the event ends: mark every confirmed attendee who never checked in as no_show ' +
    "(as POST /events/{id}/attendees/no-shows; fails before the event's end). Pair it with event.ends_in",
  needsEvent: true
}, {})

export const SendInvitationsAction = actionSchema('send_invitations', 'SendInvitations', {
  description:
    "Mail invited attendees their invitation with the guest's own link to answer (as POST /events/{id}/invitations): " +
    "the trigger's attendee (payload.contact_id) when the trigger names one, else every invited attendee of the event",
  needsEvent: true
}, {
  all: Type.Optional(Type.Boolean({ description: 'boolean: every invited attendee even when the trigger names one' }))
})

export const WebhookAction = actionSchema('webhook', 'Webhook', {
  description:
    'POST {rule_id, execution_id, trigger_type, payload} as JSON to an HTTPS URL, signed `Automation-Signature: ' +
    't=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`; 10 s timeout, no redirects, ' +
    'no private or loopback address unless AUTOMATION_WEBHOOK_ALLOW lists it',
  needsEvent: false
}, {
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'https URL' }),
  // the mask stands for the stored secret of the webhook with the same URL (a PUT of what a GET showed)
  secret: Type.Optional(
    Type.Union([Type.String({ minLength: 16, maxLength: 200 }), Type.Literal(SECRET_MASK)], {
      description: 'string (16..200): HMAC key; unsigned when absent'
    })
  )
})

const ACTION_SCHEMAS = [
  NotifyAction, ActivityAction, TransitionAction, SetAttendeeStatusAction, MarkNoShowsAction, SendInvitationsAction,
  WebhookAction
]
export const ACTION_TYPES = ACTION_SCHEMAS.map(s => s.properties.type.const)

export type Action =
  | Static<typeof NotifyAction>
  | Static<typeof ActivityAction>
  | Static<typeof TransitionAction>
  | Static<typeof SetAttendeeStatusAction>
  | Static<typeof MarkNoShowsAction>
  | Static<typeof SendInvitationsAction>
  | Static<typeof WebhookAction>

/**
 * Any action: exactly one of the action schemas, chosen by `type`. The union also declares `type`
 * on its own, so that a type no schema has is reported at `type` (not as every schema's misfit).
 * A plain `oneOf` whose branches fix `type` with a `const`, without OpenAPI's `discriminator`: Ajv in its default
 * strict mode refuses the keyword, its `discriminator` option refuses a `mapping`, and without a mapping OpenAPI reads
 * the schema's name as the value (`AutomationWebhookAction`, not `webhook`). Generated clients narrow on the const;
 * the validator finds the tag the same way (`namedBranchErrors`, validation.ts).
 */
export const Action = Type.Unsafe<Action>({
  $id: 'AutomationAction',
  description: 'An action, by its type (GET /api/v1/automation/actions); actions run in order',
  type: 'object',
  required: ['type'],
  properties: { type: StringEnum(ACTION_TYPES) },
  oneOf: ACTION_SCHEMAS
})

export const Actions = Type.Array(Action, { maxItems: MAX_ACTIONS, description: 'Actions, run in order' })

// ---- the catalogue

export interface ActionDescriptor {
  type: string
  description: string
  /** fields of the action object; `?` marks optional ones */
  fields: Record<string, string>
  needs_event: boolean
}

/** The action catalogue (`GET /api/v1/automation/actions`), read from the action schemas. */
export const ACTIONS: ActionDescriptor[] = ACTION_SCHEMAS.map(s => {
  const required = new Set<string>(s.required)
  const fields = Object.entries(s.properties as Record<string, TSchema>)
    .filter(([name]) => name !== 'type')
    .map(([name, field]) => [required.has(name) ? name : `${name}?`, String(field.description)])
  return {
    type: s.properties.type.const,
    description: String(s.description),
    fields: Object.fromEntries(fields),
    needs_event: NEEDS_EVENT.get(s.properties.type.const) === true
  }
})

// ---- what the schemas cannot say

/**
 * The actions of a rule as stored, after the checks a schema cannot make: defaults filled in, a
 * masked webhook secret replaced by the stored secret of the webhook with the same URL among
 * `previous` (the actions of the rule being replaced). Throws a 400 naming the field.
 */
export function checkActions (
  actions: readonly Action[],
  at: string,
  previous: readonly RuleAction[] = []
): RuleAction[] {
  return actions.map((a, i) => checkAction(a, `${at}[${i}]`, previous))
}

function checkAction (a: Action, at: string, previous: readonly RuleAction[]): RuleAction {
  switch (a.type) {
    case 'notify':
      if (a.attendee_status !== undefined && a.to !== 'attendees') {
        throw invalidField(`${at}.attendee_status`, 'only for to = attendees', a.attendee_status)
      }
      return { ...a, channel: a.channel ?? 'email', priority: a.priority ?? 'normal' }
    case 'activity':
      return { ...a, kind: a.kind ?? 'automation' }
    case 'transition':
      if (a.payload !== undefined && Buffer.byteLength(JSON.stringify(a.payload)) > TRANSITION_PAYLOAD_MAX_BYTES) {
        throw invalidField(`${at}.payload`, `expected at most ${TRANSITION_PAYLOAD_MAX_BYTES} bytes of JSON`)
      }
      return { ...a }
    case 'set_attendee_status':
    case 'mark_no_shows':
    case 'send_invitations':
      return { ...a }
    case 'webhook':
      return checkWebhook(a, at, previous)
  }
}

/** A webhook's URL: absolute, http(s) (https unless allow-listed, checked when it is called), no credentials. */
function checkWebhook (a: Static<typeof WebhookAction>, at: string, previous: readonly RuleAction[]): RuleAction {
  let parsed: URL
  try {
    parsed = new URL(a.url)
  } catch {
    throw invalidField(`${at}.url`, 'expected an absolute URL', a.url)
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw invalidField(`${at}.url`, 'expected an https URL', a.url)
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw invalidField(`${at}.url`, 'expected a URL without credentials', a.url)
  }
  if (a.secret !== SECRET_MASK) return { ...a }
  const stored = previous.find(p => p.type === 'webhook' && p.url === a.url && typeof p.secret === 'string')
  if (stored === undefined) {
    throw invalidField(
      `${at}.secret`,
      'the masked secret matches no stored webhook secret of this URL; send the secret itself',
      a.secret
    )
  }
  return { type: a.type, url: a.url, secret: stored.secret }
}

// ---- as responses show them

/** A URL as shown to those who may not manage its rule: scheme and host, then `/…`. */
export function maskUrl (url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}/…`
  } catch {
    return '…'
  }
}

/**
 * The actions as responses show them: webhook secrets masked for everyone; webhook URLs in full
 * only with `fullUrls` (callers who may manage the rule), else scheme and host only, since
 * receivers often take a secret in the path or query.
 */
export function maskActions (actions: RuleAction[], fullUrls: boolean): RuleAction[] {
  return actions.map(a => {
    if (a.type !== 'webhook') return a
    const out: RuleAction = { ...a }
    if (typeof a.secret === 'string') out.secret = SECRET_MASK
    if (!fullUrls && typeof a.url === 'string') out.url = maskUrl(a.url)
    return out
  })
}

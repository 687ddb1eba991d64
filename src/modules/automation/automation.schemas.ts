import { Type, type Static } from '@sinclair/typebox'
import {
  body, DateTimeInput, KeysetPageQuery, model, Nullable, pagedBody, QueryFlag, StringEnum, Timestamp, UuidString, IntId
} from '../../platform/http/schema.ts'
import { Actions, ATTENDEE_STATUSES, MAX_ACTIONS } from './automation.actions.ts'
import { MAX_OFFSET_MINUTES } from './automation.catalogue.ts'

export const SCOPES = ['EVENT', 'SPACE', 'CONTACT', 'GLOBAL'] as const
export type Scope = typeof SCOPES[number]

const AnyObject = (description: string) => Type.Object({}, { additionalProperties: true, description })
const Conditions = AnyObject(
  'A JSON Logic condition over {payload, trigger_type, rule_id, event} ({} = always); docs/automation.md'
)

const timing = {
  cron_expression: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 120,
      description: 'Cron pattern (croner syntax, 5 or 6 fields); only for schedule.cron'
    })
  ),
  timezone: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of the cron pattern (default UTC)' })
  ),
  offset_minutes: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_OFFSET_MINUTES,
      description: 'For event.starts_in / event.ends_in: minutes before the time'
    })
  )
}
const TriggerType = Type.String({
  minLength: 1,
  maxLength: 101,
  description:
    'Trigger type (GET /api/v1/automation/triggers), e.g. attendee.status_changed, announcement.published, ' +
    'schedule.cron, event.starts_in'
})

export const Schedule = Type.Object(
  { event_type: TriggerType, ...timing },
  {
    additionalProperties: false,
    description:
      'The trigger: a domain event type, schedule.cron with a cron expression, or a time relative to the event'
  }
)

export const Rule = model('Rule', {
  id: Type.String({ description: 'Rule id (UUID)' }),
  name: Type.String(),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  priority: Type.Integer({ description: 'Higher runs first when several rules match one trigger' }),
  scope: StringEnum(SCOPES),
  scope_id: Nullable(Type.String({ description: 'Scope entity id (event or space id, contact UUID)' })),
  org_id: Nullable(Type.String()),
  actions: Type.Array(AnyObject('Action')),
  conditions: AnyObject('JSON Logic condition'),
  schedule: Nullable(Schedule),
  created_by_kind: Type.String({ description: 'user, or system' }),
  creator_id: Type.String({
    description: "The rule's last writer: the rule acts with their rights (docs/automation.md)"
  }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  version: Type.Integer({ description: 'Incremented on every change' }),
  disabled_reason: Nullable(
    Type.String({
      description:
        'Why the service disabled the rule (its creator was removed or deactivated); ' +
        'null otherwise. Enabling the rule clears it'
    })
  )
})

const ruleFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  priority: Type.Optional(Type.Integer({ minimum: -1000, maximum: 1000, default: 0 })),
  scope: StringEnum(SCOPES),
  scope_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  conditions: Type.Optional(Conditions),
  actions: Actions,
  schedule: Schedule
}
export const CreateRuleBody = body(ruleFields)
export type CreateRuleBody = Static<typeof CreateRuleBody>
export const ReplaceRuleBody = CreateRuleBody
export const PatchRuleBody = body({
  name: Type.Optional(ruleFields.name),
  description: ruleFields.description,
  enabled: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.Integer({ minimum: -1000, maximum: 1000 })),
  scope: Type.Optional(ruleFields.scope),
  scope_id: ruleFields.scope_id,
  conditions: Type.Optional(Conditions),
  actions: Type.Optional(Actions),
  schedule: Type.Optional(Schedule)
})
export type PatchRuleBody = Static<typeof PatchRuleBody>

export const PagedBodyRule = pagedBody(Rule, 'PagedBodyRule')

export const ListRulesQuery = Type.Intersect([
  KeysetPageQuery,
  Type.Object({
    scope: Type.Optional(StringEnum(SCOPES, { description: 'Scope type' })),
    scope_id: Type.Optional(Type.String({ maxLength: 100, description: 'Scope entity id' })),
    event_type: Type.Optional(
      Type.String({ maxLength: 101, description: 'Trigger event type, e.g. announcement.published' })
    ),
    enabled: Type.Optional(QueryFlag('Only the enabled rules, or only the disabled ones; absent or empty: all'))
  })
])
export type ListRulesQuery = Static<typeof ListRulesQuery>

export const RuleParams = Type.Object({ rule_id: UuidString })
export const EventRuleParams = Type.Object({ id: IntId, rule_id: UuidString })

export const Trigger = Type.Object({
  type: TriggerType,
  ...timing,
  conditions: Type.Optional(Conditions)
}, { additionalProperties: false, description: 'When the automation runs, and the condition it checks' })

export const EventAutomation = model('EventAutomation', {
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  trigger: Trigger,
  actions: Type.Array(AnyObject('Action')),
  created_at: Timestamp(),
  updated_at: Timestamp()
})

const eventAutomationFields = {
  name: ruleFields.name,
  description: ruleFields.description,
  enabled: Type.Optional(Type.Boolean({ default: true })),
  trigger: Trigger
}
export const EventAutomationBody = body({ ...eventAutomationFields, actions: Actions })
export type EventAutomationBody = Static<typeof EventAutomationBody>
export const PagedBodyEventAutomation = pagedBody(EventAutomation, 'PagedBodyEventAutomation')

// Templates are typed as bodies (automationTemplates); their actions are sent as written, free-form
// objects like a Rule's: serialized by the action union they would come out with their fields reordered.
export const EventAutomationTemplates = Type.Array(
  body({
    ...eventAutomationFields,
    actions: Type.Array(
      AnyObject(
        'An action: {"type": "notify" | "activity" | "transition" | "set_attendee_status" | "webhook", …} ' +
        '(GET /api/v1/automation/actions)'
      ),
      { maxItems: MAX_ACTIONS, description: 'Actions, run in order' }
    )
  }),
  {
    description:
      "Ready-made automations for the event's template; each can be posted to /events/{id}/automations as is"
  }
)

export const EXECUTION_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'skipped'] as const

export const AutomationExecution = model('AutomationExecution', {
  id: Type.String({ description: 'Execution id (UUID)' }),
  rule_id: Type.String(),
  status: StringEnum(EXECUTION_STATUSES),
  trigger_type: Type.String(),
  trigger_key: Type.String({
    description: 'The trigger occurrence: outbox:<id>, cron:<slot>, starts_in:<event>:<start>:<offset>, manual:<uuid>'
  }),
  trigger: AnyObject('The trigger payload ({} when redacted)'),
  depth: Type.Integer({ description: 'Automation chain depth of the trigger' }),
  attempts: Type.Integer(),
  max_attempts: Type.Integer(),
  started_at: Nullable(Timestamp()),
  finished_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  conditions_met: Nullable(Type.Boolean()),
  condition_results: Nullable(Type.Array(AnyObject('{condition, result}'))),
  action_results: Nullable(Type.Array(AnyObject('{index, type, status, …}'))),
  error: Nullable(Type.String()),
  rule_version: Type.Integer({
    description: 'The version of the rule this execution runs (the rule as it was when the execution was queued)'
  }),
  retry_of: Nullable(
    Type.String({ description: 'The failed execution this one retries (POST …/executions/{id}/retry); null otherwise' })
  ),
  redacted: Type.Boolean({
    description:
      'true when the caller may not manage the rule: trigger is {}, and conditions_met, condition_results, ' +
      'action_results and error are null'
  })
})
export const PagedBodyAutomationExecution = pagedBody(AutomationExecution, 'PagedBodyAutomationExecution')

export const ListExecutionsQuery = Type.Intersect([
  KeysetPageQuery,
  Type.Object({
    status: Type.Optional(StringEnum(EXECUTION_STATUSES, { description: 'Only executions in this status' })),
    trigger_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 101,
        description: 'Only executions of this trigger type, e.g. event.published, schedule.cron'
      })
    ),
    from: Type.Optional(DateTimeInput('Only executions queued at or after this time')),
    to: Type.Optional(DateTimeInput('Only executions queued before this time'))
  })
])
export type ListExecutionsQuery = Static<typeof ListExecutionsQuery>

export const RuleExecutionParams = Type.Object({ rule_id: UuidString, id: UuidString })
export const EventRuleExecutionParams = Type.Object({ id: IntId, rule_id: UuidString, execution_id: UuidString })

export const ExecuteRuleBody = body({
  trigger_type: Type.Optional(
    Type.String({ minLength: 1, maxLength: 101, description: "Trigger type to report (default: the rule's)" })
  ),
  trigger_context: Type.Optional(AnyObject('Payload the conditions and actions see (at most 16 KiB)'))
})

export const TriggerCatalogue = model('AutomationTriggerCatalogue', {
  triggers: Type.Array(Type.Object({
    type: Type.String(),
    kind: StringEnum(['domain_event', 'schedule', 'relative_time'] as const),
    description: Type.String(),
    payload: Type.Record(Type.String(), Type.String())
  })),
  template_qualified: Type.String(),
  condition_operators: Type.Array(Type.String()),
  attendee_statuses: Type.Array(StringEnum(ATTENDEE_STATUSES))
})
export const ActionCatalogue = model('AutomationActionCatalogue', {
  actions: Type.Array(Type.Object({
    type: Type.String(),
    description: Type.String(),
    fields: Type.Record(Type.String(), Type.String()),
    needs_event: Type.Boolean()
  }))
})

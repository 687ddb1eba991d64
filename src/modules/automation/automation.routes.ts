/**
 * Automation: rules (`/api/v1/automation/rules`), per-event automations
 * (`/api/v1/events/{id}/automations`, a view over EVENT-scoped rules), execution history, manual
 * runs, the trigger and action catalogues (docs/automation.md). The engine is made in app.ts (`ctx.engines`) and its
 * workers started by src/workers.ts.
 * Owns `automation_rules`, `automation_executions`, `automation_schedule_state` and the pg-boss
 * queue `automation-execution`.
 */
import crypto from 'node:crypto'
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import { defineModule } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { countingOf } from '../../platform/db/kept-counts.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { invalidField } from '../../platform/http/errors.ts'
import { ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import { IdParams, KeysetPageQuery, NoContent } from '../../platform/http/schema.ts'
import { answerPage, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { findEventForRead } from '../events/index.ts'
import { ACTIONS, ATTENDEE_STATUSES } from './automation.actions.ts'
import {
  checkJsonDepth, checkJsonText, CONDITION_OPERATORS, DOMAIN_TRIGGERS, TEMPLATE_QUALIFIED_NOTE, TIME_TRIGGERS
} from './automation.catalogue.ts'
import { enqueueExecution, enqueueRetry } from './automation.engine.ts'
import * as executions from './automation.executions.repository.ts'
import * as repo from './automation.repository.ts'
import { canManageRule, executionView } from './automation.run-as.ts'
import {
  ActionCatalogue, AutomationExecution, CreateRuleBody, EventAutomation, EventAutomationBody, EventAutomationTemplates,
  EventRuleExecutionParams, EventRuleParams, ExecuteRuleBody, ListExecutionsQuery, ListRulesQuery,
  PagedBodyAutomationExecution, PagedBodyEventAutomation, PagedBodyRule, PatchRuleBody, ReplaceRuleBody, Rule,
  RuleExecutionParams, RuleParams, TriggerCatalogue
} from './automation.schemas.ts'
import * as service from './automation.service.ts'
import type { RuleRow } from './automation.table.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Automation')

/** What the execution routes of a rule say of themselves in the document. */
interface Describing { operationId: string, summary: string, description: string }
const CONTEXT_MAX_BYTES = 16_384
/** Nesting levels of a manual run's trigger_context (checked before it is measured or stored). */
const CONTEXT_MAX_DEPTH = 16

/** The history filters of a list request; `to` before `from` is a 400 naming `query.to`. */
function executionFilter (q: ListExecutionsQuery): executions.ExecutionFilter {
  const at = (field: 'from' | 'to'): Date | undefined => {
    const raw = q[field]
    if (raw === undefined) return undefined
    const d = new Date(raw)
    // the format admits what Date cannot hold (a leap second, a year past 275760)
    if (Number.isNaN(d.getTime())) throw invalidField(`query.${field}`, 'expected an ISO 8601 date-time', raw)
    return d
  }
  const from = at('from')
  const to = at('to')
  if (from !== undefined && to !== undefined && to < from) throw invalidField('query.to', 'expected to >= from', q.to)
  return { status: q.status, triggerType: q.trigger_type, from, to }
}

export const automationModule = defineModule(async (app, ctx) => {
  const { db } = ctx
  const engine = ctx.engines.automation

  /**
   * `GET <url>`: the execution history of the rule `findRule` finds from the path, newest first (filters checked
   * first), with trigger payloads and results only for who may manage the rule.
   */
  function historyRoute<P extends TObject> (
    url: string,
    { operationId, summary, description, params }: Describing & { params: P },
    findRule: (trx: Tx, auth: AuthContext, path: Static<P>) => Promise<RuleRow>
  ): void {
    app.get(url, operation(operationId, summary, {
      description,
      params,
      querystring: ListExecutionsQuery,
      response: { 200: PagedBodyAutomationExecution }
    }, requirePolicy('execution', 'read')), async request => {
      const { auth, query: q } = request
      const path = request.params as Static<P>
      const filter = executionFilter(q)
      // before the transaction: PGlite has one connection, which the transaction holds
      const counting = await countingOf(db, executions.EXECUTION_COUNTS_TRIGGER)
      return await withTenant(db, auth, async trx => {
        const rule = await findRule(trx, auth, path)
        const found = await executions.listExecutions(trx, auth.tenantId, rule.id, q, filter, counting)
        const full = await canManageRule(trx, auth, rule)
        return { ...found, items: found.items.map(e => executionView(e, full)), size: q.size }
      })
    })
  }

  /** Queues a manual run of `rule` on the event its context names, if any (checked for the caller). */
  async function enqueueManualRun (
    trx: Tx,
    auth: AuthContext,
    rule: RuleRow,
    context: Record<string, unknown>,
    triggerType: string
  ) {
    const target = await service.manualRunTarget(trx, auth, rule, context)
    return await enqueueExecution(trx, engine, auth.tenantId, rule, {
      triggerKey: `manual:${crypto.randomUUID()}`,
      triggerType,
      payload: {
        ...context,
        ...(target !== undefined ? { event_id: target } : {}),
        manual: true,
        actor_id: auth.userId
      },
      depth: 0
    })
  }

  /**
   * `POST <url>`: retries a failed execution of the rule `findRule` finds from the path (`execution`: the execution's
   * id in it); 202 with the new attempt, queued.
   */
  function retryRoute<P extends TObject> (
    url: string,
    { operationId, summary, description, params }: Describing & { params: P },
    findRule: (trx: Tx, auth: AuthContext, path: Static<P>) => Promise<RuleRow>,
    execution: (path: Static<P>) => string
  ): void {
    app.post(url, operation(operationId, summary, {
      description,
      params,
      response: { 202: AutomationExecution }
    }, requirePolicy('execution', 'retry')), async (request, reply) => {
      const auth = request.auth
      const path = request.params as Static<P>
      await engine.queue.ready()
      const row = await withTenant(db, auth, async trx => {
        const rule = await findRule(trx, auth, path)
        const failed = await service.failedExecutionForRetry(trx, auth, rule, execution(path))
        return await enqueueRetry(trx, engine, auth.tenantId, failed)
      })
      if (row === undefined) throw new Error('retry key collided')
      return await reply.code(202).send(executionView(row, true))
    })
  }

  /** PUT and PATCH of a rule: the changed rule, with the ETag of its new version. */
  function ruleChangeRoute<B extends TSchema> (
    method: 'put' | 'patch',
    operationId: string,
    summary: string,
    description: string,
    body: B,
    change: (trx: Tx, auth: AuthContext, id: string, input: Static<B>, ifMatch?: string) => Promise<RuleRow>
  ): void {
    app.route({
      method,
      url: '/api/v1/automation/rules/:rule_id',
      ...operation(operationId, summary, {
        description,
        params: RuleParams,
        body,
        response: { 200: Rule }
      }, requirePolicy('rule', 'write')),
      handler: async (request, reply) => {
        const row = await withTenant(db, request.auth, trx =>
          change(trx, request.auth, request.params.rule_id, request.body, ifMatchOf(request))
        )
        setEtag(reply, row.version)
        return service.toRule(row, true)
      }
    })
  }

  // ---- catalogues

  app.get('/api/v1/automation/triggers', operation('list-automation-triggers',
    'Trigger catalogue: types, payload fields, condition operators', {
      description: 'The trigger types a rule can listen to, their payload fields and the operators conditions may ' +
        'use. Use it to build a rule editor.',
      response: { 200: TriggerCatalogue }
    }, requirePolicy('rule', 'catalogue')), async () => ({
    triggers: [...DOMAIN_TRIGGERS, ...TIME_TRIGGERS],
    template_qualified: TEMPLATE_QUALIFIED_NOTE,
    condition_operators: [...CONDITION_OPERATORS],
    attendee_statuses: [...ATTENDEE_STATUSES]
  }))

  app.get('/api/v1/automation/actions', operation('list-automation-actions',
    'Action catalogue: types and their fields', {
      description: 'The action types a rule can run, their fields, and whether each needs the trigger\'s event. Use ' +
        'it to build a rule editor.',
      response: { 200: ActionCatalogue }
    }, requirePolicy('rule', 'catalogue')), async () => ({ actions: ACTIONS }))

  // ---- rules

  app.get('/api/v1/automation/rules', operation('list-automation-rules', 'List automation rules', {
    description: 'Pages through the automation rules the caller can see, by scope, trigger and whether they are ' +
      'enabled.',
    querystring: ListRulesQuery,
    response: { 200: PagedBodyRule }
  }, requirePolicy('rule', 'read')), async request => await answerPage(db, request, async (trx, q) => {
    const found = await repo.listRules(
      trx,
      request.auth.tenantId,
      {
        scope: q.scope,
        scopeId: q.scope_id === '' ? undefined : q.scope_id,
        eventType: q.event_type === '' ? undefined : q.event_type,
        enabled: q.enabled
      },
      q,
      request.auth
    )
    return { ...found, items: await service.toRules(trx, request.auth, found.items) }
  }))

  app.post('/api/v1/automation/rules', operation('create-automation-rule', 'Create an automation rule', {
    description: 'Creates a rule: a trigger, optional conditions and the actions to run in order. It runs as its ' +
      'creator, within the creator\'s rights.',
    body: CreateRuleBody,
    response: { 201: Rule }
  }, requirePolicy('rule', 'create')), async (request, reply) => {
    const row = await withTenant(db, request.auth, trx => service.createRule(trx, request.auth, request.body))
    setEtag(reply, row.version)
    return await reply
      .code(201)
      .header('location', `/api/v1/automation/rules/${row.id}`)
      .send(service.toRule(row, true))
  })

  app.get('/api/v1/automation/rules/:rule_id', operation('get-automation-rule', 'Get an automation rule', {
    description: 'One automation rule with its ETag.',
    params: RuleParams,
    response: { 200: Rule }
  }, requirePolicy('rule', 'read')), async (request, reply) => {
    const { row, full } = await withTenant(db, request.auth, async trx => {
      const row = await service.findRuleForRead(trx, request.auth, request.params.rule_id)
      return { row, full: await canManageRule(trx, request.auth, row) }
    })
    setEtag(reply, row.version)
    return service.toRule(row, full)
  })

  // PUT, PATCH and DELETE answer 412 when If-Match names another version (the ETag is "<version>")
  ruleChangeRoute('put', 'replace-automation-rule', 'Replace an automation rule',
    'Replaces a rule; a masked webhook secret sent back keeps the stored secret. Executions already queued keep ' +
      'the version they started with.',
    ReplaceRuleBody, service.replaceRule)
  ruleChangeRoute(
    'patch',
    'patch-automation-rule',
    'Change some fields of an automation rule',
    'Changes the fields the body names, for instance `enabled` to switch a rule off. `null` clears a field.',
    PatchRuleBody,
    service.patchRule
  )

  noContentRoute(app, db, 'delete', '/api/v1/automation/rules/:rule_id', operation('delete-automation-rule',
    'Delete an automation rule and its history', {
      description: 'Deletes a rule with its execution history.',
      params: RuleParams
    }, requirePolicy('rule', 'write')), (trx, request) =>
    service.deleteRule(trx, request.auth, request.params.rule_id, ifMatchOf(request)))

  app.post('/api/v1/automation/rules/:rule_id/execute', operation('execute-automation-rule',
    'Run a rule now (queued; the execution is returned at once)', {
      description: 'Queues a run of the rule now with the trigger context given, and answers the queued execution at ' +
        'once. Use it to test a rule.',
      params: RuleParams,
      body: ExecuteRuleBody,
      response: { 202: AutomationExecution }
    }, requirePolicy('rule', 'execute'), { optionalBody: true }), async (request, reply) => {
    const context = request.body?.trigger_context ?? {}
    checkJsonDepth(context, 'body.trigger_context', CONTEXT_MAX_DEPTH)
    checkJsonText(request.body ?? {}, 'body')
    if (Buffer.byteLength(JSON.stringify(context)) > CONTEXT_MAX_BYTES) {
      throw invalidField('body.trigger_context', `expected at most ${CONTEXT_MAX_BYTES} bytes of JSON`)
    }
    await engine.queue.ready()
    const { row, full } = await withTenant(db, request.auth, async trx => {
      const rule = await service.findRuleForRun(trx, request.auth, request.params.rule_id)
      const triggerType = request.body?.trigger_type ?? rule.event_type
      const created = await enqueueManualRun(trx, request.auth, rule, context, triggerType)
      return { row: created, full: await canManageRule(trx, request.auth, rule) }
    })
    if (row === undefined) throw new Error('manual execution key collided')
    return await reply.code(202).send(executionView(row, full))
  })

  historyRoute('/api/v1/automation/rules/:rule_id/executions', {
    description: 'The runs of a rule, newest first, by status, trigger type and time. Use it to see why a rule did ' +
      'or did not act.',
    operationId: 'list-automation-rule-executions',
    summary: 'Execution history of a rule, newest first, by status, trigger type and time',
    params: RuleParams
  }, (trx, auth, path) => service.findRuleForRead(trx, auth, path.rule_id))

  retryRoute('/api/v1/automation/rules/:rule_id/executions/:id/retry', {
    description: 'Queues a new attempt of a failed execution with the same rule version and trigger. Answers the new ' +
      'execution at once.',
    operationId: 'retry-automation-rule-execution',
    summary: 'Retry a failed execution: a new attempt of the same rule version and trigger (queued; returned at once)',
    params: RuleExecutionParams
  }, (trx, auth, path) => service.findRuleForRun(trx, auth, path.rule_id), path => path.id)

  // ---- per-event automations

  app.get('/api/v1/events/:id/automations', operation('list-event-automations', 'List the automations of an event', {
    description: 'The automations of an event (rules scoped to it).',
    params: IdParams,
    querystring: KeysetPageQuery,
    response: { 200: PagedBodyEventAutomation }
  }, requirePolicy('rule', 'read')), async request =>
    await withTenant(db, request.auth, trx =>
      service.listEventAutomations(trx, request.auth, request.params.id, request.query)
    )
  )

  app.post('/api/v1/events/:id/automations', operation('create-event-automation', 'Create an automation of an event', {
    description: 'Creates an automation scoped to the event, for instance a reminder before it starts.',
    params: IdParams,
    body: EventAutomationBody,
    response: { 201: EventAutomation }
  }, requirePolicy('event', 'automate')), async (request, reply) => {
    const row = await withTenant(db, request.auth, trx =>
      service.createEventAutomation(trx, request.auth, request.params.id, request.body)
    )
    return await reply
      .code(201)
      .header('location', `/api/v1/events/${request.params.id}/automations/${row.id}`)
      .send(service.toEventAutomation(row, true))
  })

  app.get('/api/v1/events/:id/automations/templates', operation('list-event-automation-templates',
    "Ready-made automations for the event's template", {
      description: 'Ready-made automations for the event\'s template, to create as they are or adapted.',
      params: IdParams,
      response: { 200: EventAutomationTemplates }
    }, requirePolicy('rule', 'catalogue')), async request => {
    const event = await withTenant(db, request.auth, trx => findEventForRead(trx, request.auth, request.params.id))
    return service.automationTemplates(event.template)
  })

  app.get('/api/v1/events/:id/automations/:rule_id', operation('get-event-automation',
    'Get an automation of an event', {
      description: 'One automation of the event with its ETag.',
      params: EventRuleParams,
      response: { 200: EventAutomation }
    }, requirePolicy('rule', 'read')), async request =>
    await withTenant(db, request.auth, async trx => {
      const row = await service.getEventAutomation(trx, request.auth, request.params.id, request.params.rule_id)
      return service.toEventAutomation(row, await canManageRule(trx, request.auth, row))
    })
  )

  app.put('/api/v1/events/:id/automations/:rule_id', operation('replace-event-automation',
    'Replace an automation of an event', {
      description: 'Replaces an automation of the event.',
      params: EventRuleParams,
      body: EventAutomationBody,
      response: { 200: EventAutomation }
    }, requirePolicy('event', 'automate')), async request =>
    service.toEventAutomation(
      await withTenant(db, request.auth, trx =>
        service.replaceEventAutomation(trx, request.auth, request.params.id, request.params.rule_id, request.body)
      ),
      true
    )
  )

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/automations/:rule_id', operation('delete-event-automation',
    'Delete an automation of an event', {
      description: 'Deletes an automation of the event with its execution history.',
      params: EventRuleParams
    }, requirePolicy('event', 'automate')), (trx, request) =>
    service.deleteEventAutomation(trx, request.auth, request.params.id, request.params.rule_id))

  app.post('/api/v1/events/:id/automations/:rule_id/execute', operation('execute-event-automation',
    'Run an automation of an event now (queued)', {
      description: 'Queues a run of the event\'s automation now and answers the queued execution at once.',
      params: EventRuleParams,
      response: { 202: NoContent }
    }, requirePolicy('rule', 'execute')), async (request, reply) => {
    await engine.queue.ready()
    await withTenant(db, request.auth, async trx => {
      const rule = await service.eventRuleForRun(trx, request.auth, request.params.id, request.params.rule_id)
      await enqueueManualRun(trx, request.auth, rule, {}, rule.event_type)
    })
    // no body (upstream: execute documents none): an undefined payload skips the serializer
    return await reply.code(202).send(undefined as unknown as null)
  })

  historyRoute('/api/v1/events/:id/automations/:rule_id/executions', {
    description: 'The runs of an automation of the event, newest first, by status, trigger type and time.',
    operationId: 'list-event-automation-executions',
    summary: 'Execution history of an automation, newest first, by status, trigger type and time',
    params: EventRuleParams
  }, (trx, auth, path) => service.eventRuleFor(trx, auth, path.id, path.rule_id, false))

  retryRoute('/api/v1/events/:id/automations/:rule_id/executions/:execution_id/retry', {
    description: 'Queues a new attempt of a failed execution of the event\'s automation. Answers the new execution ' +
      'at once.',
    operationId: 'retry-event-automation-execution',
    summary: 'Retry a failed execution of an automation of an event (queued; returned at once)',
    params: EventRuleExecutionParams
  }, (trx, auth, path) => service.eventRuleFor(trx, auth, path.id, path.rule_id, true), path => path.execution_id)
})

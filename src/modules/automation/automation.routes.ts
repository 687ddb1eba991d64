/**
 * Automation: rules (`/api/v1/automation/rules`), per-event automations
 * (`/api/v1/events/{id}/automations`, a view over EVENT-scoped rules), execution history, manual
 * runs, the trigger and action catalogues, and the background engine (docs/automation.md).
 * Owns `automation_rules`, `automation_executions`, `automation_schedule_state` and the pg-boss
 * queue `automation-execution`.
 */
import crypto from 'node:crypto'
import { defineModule, type AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { countingOf, type Counting } from '../../platform/db/kept-counts.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { invalidField } from '../../platform/http/errors.ts'
import { ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import { IdParams, KeysetPageQuery, NoContent } from '../../platform/http/schema.ts'
import { findEventForRead } from '../events/events.access.repository.ts'
import { ACTIONS, ATTENDEE_STATUSES } from './automation.actions.ts'
import {
  checkJsonDepth,
  checkJsonText,
  CONDITION_OPERATORS,
  DOMAIN_TRIGGERS,
  TEMPLATE_QUALIFIED_NOTE,
  TIME_TRIGGERS
} from './automation.catalogue.ts'
import { enqueueExecution, enqueueRetry, startWorkers, type Engine } from './automation.engine.ts'
import { createJobQueue } from './automation.queue.ts'
import * as executions from './automation.executions.repository.ts'
import * as repo from './automation.repository.ts'
import { canManageRule, executionView } from './automation.run-as.ts'
import {
  ActionCatalogue,
  AutomationExecution,
  CreateRuleBody,
  EventAutomation,
  EventAutomationBody,
  EventAutomationTemplates,
  EventRuleExecutionParams,
  EventRuleParams,
  ExecuteRuleBody,
  ListExecutionsQuery,
  ListRulesQuery,
  PagedBodyAutomationExecution,
  PagedBodyEventAutomation,
  PagedBodyRule,
  PatchRuleBody,
  ReplaceRuleBody,
  Rule,
  RuleExecutionParams,
  RuleParams,
  TriggerCatalogue
} from './automation.schemas.ts'
import * as service from './automation.service.ts'
import type { RuleRow } from './automation.table.ts'
import { allowListOf } from './automation.webhook.ts'
import { requirePolicy } from '../policy/policy.ts'

const tags = ['Automation']
const CONTEXT_MAX_BYTES = 16_384
/** Nesting levels of a manual run's trigger_context (checked before it is measured or stored). */
const CONTEXT_MAX_DEPTH = 16

const engines = new WeakMap<AppContext, Engine>()

/** The engine of an app (tests drive its dispatcher, scheduler and runner directly). */
export function automationEngineOf (ctx: AppContext): Engine {
  const engine = engines.get(ctx)
  if (engine === undefined) throw new Error('automation module not registered')
  return engine
}

const WORKER_RETRY_MS = 5_000

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

/** A page of a rule's history, with trigger payloads and results only for who may manage the rule. */
async function executionsPage (
  trx: Tx,
  auth: AuthContext,
  rule: RuleRow,
  q: { page: number; size: number; cursor?: string | undefined },
  filter: executions.ExecutionFilter,
  counting: Counting
) {
  const found = await executions.listExecutions(trx, auth.tenantId, rule.id, q, filter, counting)
  const full = await canManageRule(trx, auth, rule)
  return { ...found, items: found.items.map(e => executionView(e, full)), size: q.size }
}

export const automationModule = defineModule(async (app, ctx) => {
  const { db } = ctx
  // the job queue keeps its own schema and works across tenants: the worker login, never the request login
  const engine: Engine = {
    db,
    queue: createJobQueue(ctx.systemDb),
    allow: allowListOf(ctx.config.automationWebhookAllow),
    now: () => new Date(),
    pauseAfterFailures: ctx.config.automationPauseAfterFailures
  }
  engines.set(ctx, engine)
  let stopWorkers: (() => Promise<void>) | undefined
  let retry: NodeJS.Timeout | undefined
  let closing = false
  if (ctx.config.workers) {
    // The database may be away when the process starts: the API serves (and /ready says 503)
    // while the workers keep trying to start in the background.
    const start = async (): Promise<void> => {
      try {
        stopWorkers = await startWorkers(engine, app.log)
      } catch (err) {
        if (closing) return
        app.log.warn({ err }, `automation workers could not start; retrying in ${WORKER_RETRY_MS / 1000} s`)
        retry = setTimeout(() => { void start() }, WORKER_RETRY_MS)
      }
    }
    app.addHook('onReady', async () => { void start() })
  }
  app.addHook('onClose', async () => {
    closing = true
    clearTimeout(retry)
    await stopWorkers?.()
    await engine.queue.stop().catch(() => {})
  })

  // ---- catalogues

  app.get(
    '/api/v1/automation/triggers',
    {
      schema: {
        operationId: 'list-automation-triggers',
        summary: 'Trigger catalogue: types, payload fields, condition operators',
        tags,
        response: { 200: TriggerCatalogue }
      },
      onRequest: requirePolicy('rule', 'catalogue')
    },
    async () => ({
      triggers: [...DOMAIN_TRIGGERS, ...TIME_TRIGGERS],
      template_qualified: TEMPLATE_QUALIFIED_NOTE,
      condition_operators: [...CONDITION_OPERATORS],
      attendee_statuses: [...ATTENDEE_STATUSES]
    })
  )

  app.get(
    '/api/v1/automation/actions',
    {
      schema: {
        operationId: 'list-automation-actions',
        summary: 'Action catalogue: types and their fields',
        tags,
        response: { 200: ActionCatalogue }
      },
      onRequest: requirePolicy('rule', 'catalogue')
    },
    async () => ({ actions: ACTIONS })
  )

  // ---- rules

  app.get(
    '/api/v1/automation/rules',
    {
      schema: {
        operationId: 'list-automation-rules',
        summary: 'List automation rules',
        tags,
        querystring: ListRulesQuery,
        response: { 200: PagedBodyRule }
      },
      onRequest: requirePolicy('rule', 'read')
    },
    async request => {
      const q = request.query
      const page = await withTenant(db, request.auth, async trx => {
        const found = await repo.listRules(
          trx,
          request.auth.tenantId,
          {
            scope: q.scope,
            scopeId: q.scope_id === '' ? undefined : q.scope_id,
            eventType: q.event_type === '' ? undefined : q.event_type,
            enabled: q.enabled === 'true' ? true : q.enabled === 'false' ? false : undefined
          },
          q,
          request.auth
        )
        return { ...found, items: await service.toRules(trx, request.auth, found.items) }
      })
      return { ...page, size: q.size }
    }
  )

  app.post(
    '/api/v1/automation/rules',
    {
      schema: {
        operationId: 'create-automation-rule',
        summary: 'Create an automation rule',
        tags,
        body: CreateRuleBody,
        response: { 201: Rule }
      },
      onRequest: requirePolicy('rule', 'create')
    },
    async (request, reply) => {
      const row = await withTenant(db, request.auth, trx => service.createRule(trx, request.auth, request.body))
      setEtag(reply, row.version)
      return await reply
        .code(201)
        .header('location', `/api/v1/automation/rules/${row.id}`)
        .send(service.toRule(row, true))
    }
  )

  app.get(
    '/api/v1/automation/rules/:rule_id',
    {
      schema: {
        operationId: 'get-automation-rule',
        summary: 'Get an automation rule',
        tags,
        params: RuleParams,
        response: { 200: Rule }
      },
      onRequest: requirePolicy('rule', 'read')
    },
    async (request, reply) => {
      const { row, full } = await withTenant(db, request.auth, async trx => {
        const row = await service.findRuleForRead(trx, request.auth, request.params.rule_id)
        return { row, full: await canManageRule(trx, request.auth, row) }
      })
      setEtag(reply, row.version)
      return service.toRule(row, full)
    }
  )

  // PUT, PATCH and DELETE answer 412 when If-Match names another version (the ETag is "<version>")
  app.put(
    '/api/v1/automation/rules/:rule_id',
    {
      schema: {
        operationId: 'replace-automation-rule',
        summary: 'Replace an automation rule',
        tags,
        params: RuleParams,
        body: ReplaceRuleBody,
        response: { 200: Rule }
      },
      onRequest: requirePolicy('rule', 'write')
    },
    async (request, reply) => {
      const row = await withTenant(db, request.auth, trx =>
        service.replaceRule(trx, request.auth, request.params.rule_id, request.body, ifMatchOf(request))
      )
      setEtag(reply, row.version)
      return service.toRule(row, true)
    }
  )

  app.patch(
    '/api/v1/automation/rules/:rule_id',
    {
      schema: {
        operationId: 'patch-automation-rule',
        summary: 'Change some fields of an automation rule',
        tags,
        params: RuleParams,
        body: PatchRuleBody,
        response: { 200: Rule }
      },
      onRequest: requirePolicy('rule', 'write')
    },
    async (request, reply) => {
      const row = await withTenant(db, request.auth, trx =>
        service.patchRule(trx, request.auth, request.params.rule_id, request.body, ifMatchOf(request))
      )
      setEtag(reply, row.version)
      return service.toRule(row, true)
    }
  )

  app.delete(
    '/api/v1/automation/rules/:rule_id',
    {
      schema: {
        operationId: 'delete-automation-rule',
        summary: 'Delete an automation rule and its history',
        tags,
        params: RuleParams,
        response: { 204: NoContent }
      },
      onRequest: requirePolicy('rule', 'write')
    },
    async (request, reply) => {
      await withTenant(db, request.auth, trx =>
        service.deleteRule(trx, request.auth, request.params.rule_id, ifMatchOf(request))
      )
      return await reply.code(204).send(null)
    }
  )

  app.post(
    '/api/v1/automation/rules/:rule_id/execute',
    {
      schema: {
        operationId: 'execute-automation-rule',
        summary: 'Run a rule now (queued; the execution is returned at once)',
        tags,
        params: RuleParams,
        body: ExecuteRuleBody,
        response: { 202: AutomationExecution }
      },
      onRequest: requirePolicy('rule', 'execute')
    },
    async (request, reply) => {
      const context = request.body?.trigger_context ?? {}
      checkJsonDepth(context, 'body.trigger_context', CONTEXT_MAX_DEPTH)
      checkJsonText(request.body ?? {}, 'body')
      if (Buffer.byteLength(JSON.stringify(context)) > CONTEXT_MAX_BYTES) {
        throw invalidField('body.trigger_context', `expected at most ${CONTEXT_MAX_BYTES} bytes of JSON`)
      }
      await engine.queue.ready()
      const { row, full } = await withTenant(db, request.auth, async trx => {
        const rule = await service.findRuleForRun(trx, request.auth, request.params.rule_id)
        const target = await service.manualRunTarget(trx, request.auth, rule, context)
        const created = await enqueueExecution(trx, engine, request.auth.tenantId, rule, {
          triggerKey: `manual:${crypto.randomUUID()}`,
          triggerType: request.body?.trigger_type ?? rule.event_type,
          payload: {
            ...context,
            ...(target !== undefined ? { event_id: target } : {}),
            manual: true,
            actor_id: request.auth.userId
          },
          depth: 0
        })
        return { row: created, full: await canManageRule(trx, request.auth, rule) }
      })
      if (row === undefined) throw new Error('manual execution key collided')
      return await reply.code(202).send(executionView(row, full))
    }
  )

  app.get(
    '/api/v1/automation/rules/:rule_id/executions',
    {
      schema: {
        operationId: 'list-automation-rule-executions',
        summary: 'Execution history of a rule, newest first, by status, trigger type and time',
        tags,
        params: RuleParams,
        querystring: ListExecutionsQuery,
        response: { 200: PagedBodyAutomationExecution }
      },
      onRequest: requirePolicy('execution', 'read')
    },
    async request => {
      const filter = executionFilter(request.query)
      // before the transaction: PGlite has one connection, which the transaction holds
      const counting = await countingOf(db, executions.EXECUTION_COUNTS_TRIGGER)
      return await withTenant(
        db,
        request.auth,
        async trx =>
          await executionsPage(
            trx,
            request.auth,
            await service.findRuleForRead(trx, request.auth, request.params.rule_id),
            request.query,
            filter,
            counting
          )
      )
    }
  )

  app.post(
    '/api/v1/automation/rules/:rule_id/executions/:id/retry',
    {
      schema: {
        operationId: 'retry-automation-rule-execution',
        summary:
          'Retry a failed execution: a new attempt of the same rule version and trigger (queued; returned at once)',
        tags,
        params: RuleExecutionParams,
        response: { 202: AutomationExecution }
      },
      onRequest: requirePolicy('execution', 'retry')
    },
    async (request, reply) => {
      await engine.queue.ready()
      const row = await withTenant(db, request.auth, async trx => {
        const rule = await service.findRuleForRun(trx, request.auth, request.params.rule_id)
        const failed = await service.failedExecutionForRetry(trx, request.auth, rule, request.params.id)
        return await enqueueRetry(trx, engine, request.auth.tenantId, failed)
      })
      if (row === undefined) throw new Error('retry key collided')
      return await reply.code(202).send(executionView(row, true))
    }
  )

  // ---- per-event automations

  app.get(
    '/api/v1/events/:id/automations',
    {
      schema: {
        operationId: 'list-event-automations',
        summary: 'List the automations of an event',
        tags,
        params: IdParams,
        querystring: KeysetPageQuery,
        response: { 200: PagedBodyEventAutomation }
      },
      onRequest: requirePolicy('rule', 'read')
    },
    async request =>
      await withTenant(db, request.auth, trx =>
        service.listEventAutomations(trx, request.auth, request.params.id, request.query)
      )
  )

  app.post(
    '/api/v1/events/:id/automations',
    {
      schema: {
        operationId: 'create-event-automation',
        summary: 'Create an automation of an event',
        tags,
        params: IdParams,
        body: EventAutomationBody,
        response: { 201: EventAutomation }
      },
      onRequest: requirePolicy('event', 'automate')
    },
    async (request, reply) => {
      const row = await withTenant(db, request.auth, trx =>
        service.createEventAutomation(trx, request.auth, request.params.id, request.body)
      )
      return await reply
        .code(201)
        .header('location', `/api/v1/events/${request.params.id}/automations/${row.id}`)
        .send(service.toEventAutomation(row, true))
    }
  )

  app.get(
    '/api/v1/events/:id/automations/templates',
    {
      schema: {
        operationId: 'list-event-automation-templates',
        summary: "Ready-made automations for the event's template",
        tags,
        params: IdParams,
        response: { 200: EventAutomationTemplates }
      },
      onRequest: requirePolicy('rule', 'catalogue')
    },
    async request => {
      const event = await withTenant(db, request.auth, trx => findEventForRead(trx, request.auth, request.params.id))
      return service.automationTemplates(event.template)
    }
  )

  app.get(
    '/api/v1/events/:id/automations/:rule_id',
    {
      schema: {
        operationId: 'get-event-automation',
        summary: 'Get an automation of an event',
        tags,
        params: EventRuleParams,
        response: { 200: EventAutomation }
      },
      onRequest: requirePolicy('rule', 'read')
    },
    async request =>
      await withTenant(db, request.auth, async trx => {
        const row = await service.getEventAutomation(trx, request.auth, request.params.id, request.params.rule_id)
        return service.toEventAutomation(row, await canManageRule(trx, request.auth, row))
      })
  )

  app.put(
    '/api/v1/events/:id/automations/:rule_id',
    {
      schema: {
        operationId: 'replace-event-automation',
        summary: 'Replace an automation of an event',
        tags,
        params: EventRuleParams,
        body: EventAutomationBody,
        response: { 200: EventAutomation }
      },
      onRequest: requirePolicy('event', 'automate')
    },
    async request =>
      service.toEventAutomation(
        await withTenant(db, request.auth, trx =>
          service.replaceEventAutomation(trx, request.auth, request.params.id, request.params.rule_id, request.body)
        ),
        true
      )
  )

  app.delete(
    '/api/v1/events/:id/automations/:rule_id',
    {
      schema: {
        operationId: 'delete-event-automation',
        summary: 'Delete an automation of an event',
        tags,
        params: EventRuleParams,
        response: { 204: NoContent }
      },
      onRequest: requirePolicy('event', 'automate')
    },
    async (request, reply) => {
      await withTenant(db, request.auth, trx =>
        service.deleteEventAutomation(trx, request.auth, request.params.id, request.params.rule_id)
      )
      return await reply.code(204).send(null)
    }
  )

  app.post(
    '/api/v1/events/:id/automations/:rule_id/execute',
    {
      schema: {
        operationId: 'execute-event-automation',
        summary: 'Run an automation of an event now (queued)',
        tags,
        params: EventRuleParams,
        response: { 202: NoContent }
      },
      onRequest: requirePolicy('rule', 'execute')
    },
    async (request, reply) => {
      await engine.queue.ready()
      await withTenant(db, request.auth, async trx => {
        const rule = await service.eventRuleForRun(trx, request.auth, request.params.id, request.params.rule_id)
        const target = await service.manualRunTarget(trx, request.auth, rule, {})
        await enqueueExecution(trx, engine, request.auth.tenantId, rule, {
          triggerKey: `manual:${crypto.randomUUID()}`,
          triggerType: rule.event_type,
          payload: { event_id: target, manual: true, actor_id: request.auth.userId },
          depth: 0
        })
      })
      // no body (upstream: execute documents none): an undefined payload skips the serializer
      return await reply.code(202).send(undefined as unknown as null)
    }
  )

  app.get(
    '/api/v1/events/:id/automations/:rule_id/executions',
    {
      schema: {
        operationId: 'list-event-automation-executions',
        summary: 'Execution history of an automation, newest first, by status, trigger type and time',
        tags,
        params: EventRuleParams,
        querystring: ListExecutionsQuery,
        response: { 200: PagedBodyAutomationExecution }
      },
      onRequest: requirePolicy('execution', 'read')
    },
    async request => {
      const filter = executionFilter(request.query)
      // before the transaction: PGlite has one connection, which the transaction holds
      const counting = await countingOf(db, executions.EXECUTION_COUNTS_TRIGGER)
      return await withTenant(
        db,
        request.auth,
        async trx =>
          await executionsPage(
            trx,
            request.auth,
            await service.eventRuleFor(trx, request.auth, request.params.id, request.params.rule_id, false),
            request.query,
            filter,
            counting
          )
      )
    }
  )

  app.post(
    '/api/v1/events/:id/automations/:rule_id/executions/:execution_id/retry',
    {
      schema: {
        operationId: 'retry-event-automation-execution',
        summary: 'Retry a failed execution of an automation of an event (queued; returned at once)',
        tags,
        params: EventRuleExecutionParams,
        response: { 202: AutomationExecution }
      },
      onRequest: requirePolicy('execution', 'retry')
    },
    async (request, reply) => {
      await engine.queue.ready()
      const row = await withTenant(db, request.auth, async trx => {
        const rule = await service.eventRuleFor(trx, request.auth, request.params.id, request.params.rule_id, true)
        const failed = await service.failedExecutionForRetry(trx, request.auth, rule, request.params.execution_id)
        return await enqueueRetry(trx, engine, request.auth.tenantId, failed)
      })
      if (row === undefined) throw new Error('retry key collided')
      return await reply.code(202).send(executionView(row, true))
    }
  )
})

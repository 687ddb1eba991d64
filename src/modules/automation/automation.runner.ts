/**
 * The runner of the automation engine: one execution at a time, claimed, checked against what its rule's creator
 * may see now, its conditions evaluated and its actions applied, its result recorded (exactly-once effects:
 * automation.engine.ts).
 */
import crypto from 'node:crypto'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withAuditActor } from '../../platform/audit.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { automationExecutions } from '../../platform/metrics.ts'
import { ApiError, error403Forbidden } from '../../platform/http/errors.ts'
import { emit, emitMany } from '../../platform/outbox.ts'
import { queueNotification, recipientFor } from '../../platform/notifications/notifications.ts'
import { automationMessage } from '../../platform/notifications/templates.ts'
import { findVisible as findVisibleContact } from '../contacts/index.ts'
import {
  type EventRow, findEventForRead, hasEventPermission, insertActivity, isTenantAdmin, lockEventForWrite, transitionEvent
} from '../events/index.ts'
import {
  type AttendeeStatus, type Changed, changeStatuses, markNoShows, sendInvitations
} from '../attendees/index.ts'
import { findUser } from '../identity/index.ts'
import { evaluateConditions } from './automation.catalogue.ts'
import { activityAdded, attendeeStatusChanged, ruleDisabled, type ActionSource } from './automation.events.ts'
import * as executions from './automation.executions.repository.ts'
import { EXPIRE_SEC, type ExecutionJob } from './automation.queue.ts'
import * as repo from './automation.repository.ts'
import * as targets from './automation.targets.repository.ts'
import { actionNeeds, subjectOf } from './automation.run-as.ts'
import { actorRefused, asTheyAreNow, mayLearnOf } from '../disclosure/index.ts'
import type { ExecutionRow, RuleAction, RuleRow, RuleVersionRow } from './automation.table.ts'
import { postWebhook, WebhookError } from '../../platform/http/outbound.ts'
import { signBody } from './automation.signature.ts'
import { type Engine, PAUSE_AFTER_FAILURES } from './automation.engine.ts'

type Json = Record<string, unknown>

/**
 * An action failure that a retry cannot fix (refused destination, illegal transition…): the execution fails at once.
 */
export class PermanentError extends Error {}

export type RunOutcome = 'succeeded' | 'skipped' | 'failed' | 'retry' | 'busy' | 'done' | 'missing'

interface Ctx {
  trx: Tx
  engine: Engine
  tenantId: string
  rule: RuleRow
  execution: ExecutionRow
  payload: Json
  eventId: number | undefined
  /** whom the rule acts as: its creator (last writer), docs/automation.md "Whom a rule acts as" */
  subject: AuthContext
  /** why the trigger's event is not a target of this rule (outside its scope), if it is not */
  outOfScope: string | undefined
}

/** The rule and chain depth the domain events of an action come from. */
const sourceOf = (c: Ctx): ActionSource => ({ tenantId: c.tenantId, ruleId: c.rule.id, depth: c.execution.depth })

function render (template: string, payload: Json): string {
  return template.replace(/\{\{\s*([a-zA-Z0-9_.]+)\s*\}\}/g, (_m, path: string) => {
    let v: unknown = payload
    for (const part of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Json)[part] : undefined
    return v === undefined || v === null
      ? ''
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v as string | number | boolean)
  })
}

/**
 * The event an action targets, with the creator's right to it checked as a request's would be:
 * in the rule's scope, the tenant permission, then `lockEventForWrite` (lock) or `findEventForRead`
 * plus the event permission the action needs (actionNeeds). A refusal fails the action for good.
 */
async function targetEvent (c: Ctx, a: RuleAction, lock: boolean): Promise<EventRow> {
  if (c.eventId === undefined) throw new PermanentError('the trigger names no event')
  if (c.outOfScope !== undefined) throw new PermanentError(c.outOfScope)
  const needs = actionNeeds(a)
  if (needs === undefined) throw new PermanentError(`action ${a.type} takes no event`)
  if (!c.subject.permissions.has(needs.tenant)) {
    throw new PermanentError(`the rule's creator may not ${needs.verb} events (missing permission ${needs.tenant})`)
  }
  try {
    if (lock) {
      return await lockEventForWrite(c.trx, c.subject, c.eventId, needs.event ?? 'event:edit', {
        includeDraftClones: false
      })
    }
    const row = await findEventForRead(c.trx, c.subject, c.eventId)
    if (needs.event !== undefined && !(await hasEventPermission(c.trx, c.subject, row, needs.event))) {
      throw error403Forbidden(`missing event permission ${needs.event}`)
    }
    return row
  } catch (err) {
    throw creatorRefused(err, needs.verb, c.eventId)
  }
}

/** A 404 or 403 of an access check, as the permanent failure "the rule's creator may not …". */
function creatorRefused (err: unknown, verb: string, eventId: number): unknown {
  if (err instanceof ApiError && (err.status === 404 || err.status === 403)) {
    return new PermanentError(
      `the rule's creator may not ${verb} event ${eventId}${err.status === 403 ? ` (${err.detail})` : ''}`
    )
  }
  return err
}

async function notify (c: Ctx, a: RuleAction): Promise<Json> {
  const event = await targetEvent(c, a, false)
  const recipients: string[] = []
  if (a.to === 'creator') {
    recipients.push(event.creator_id)
  } else if (a.to === 'managers') {
    recipients.push(...await targets.activeManagerIds(c.trx, c.tenantId, event.id))
  } else {
    if (!(await targets.attendeesAvailable(c.trx))) {
      throw new PermanentError('attendees are not available in this deployment')
    }
    const st = a.attendee_status as string[] | undefined
    recipients.push(...await targets.attendeeRecipients(c.trx, c.tenantId, event.id, st))
  }
  const channel = String(a.channel ?? 'email')
  // users: the stored profile's address (or the rule creator's own, when it is he); attendees: the contact's
  const resolved = new Map<string, { recipient: string, undeliverable?: string }>()
  for (const r of recipients) {
    const to =
      a.to === 'attendees'
        ? {
            recipient: r,
            ...(r.startsWith('contact:')
              ? { undeliverable: `the attendee's contact ${r.slice('contact:'.length)} has no e-mail address` }
              : {})
          }
        : channel === 'email'
          ? await recipientFor(c.trx, c.tenantId, channel, r, c.subject)
          : { recipient: `user:${r}` }
    if (!resolved.has(to.recipient)) resolved.set(to.recipient, to)
  }
  const template = automationMessage({
    subject: render(String(a.subject), c.payload),
    body: render(String(a.body), c.payload),
    eventId: event.id,
    ruleId: c.rule.id,
    executionId: c.execution.id
  })
  for (const to of resolved.values()) {
    await queueNotification(c.trx, {
      tenantId: c.tenantId,
      channel,
      recipient: to.recipient,
      ...template,
      priority: a.priority === 'high' ? 'high' : 'normal',
      undeliverable: channel === 'email' ? to.undeliverable : undefined
    })
  }
  return { recipients: resolved.size }
}

async function activity (c: Ctx, a: RuleAction): Promise<Json> {
  const event = await targetEvent(c, a, true)
  const created = await insertActivity(c.trx, {
    tenantId: c.tenantId,
    eventId: event.id,
    orgId: event.org_id,
    actorId: null,
    kind: String(a.kind ?? 'automation'),
    payload: {
      rule_id: c.rule.id,
      execution_id: c.execution.id,
      ...(a.message !== undefined ? { message: render(String(a.message), c.payload) } : {})
    }
  })
  await emit(c.trx, activityAdded(sourceOf(c), event.id, created))
  return { activity_id: created.id }
}

async function transition (c: Ctx, a: RuleAction): Promise<Json> {
  // the scope and tenant permission; transitionEvent itself locks the event as the creator (event:edit)
  const event = await targetEvent(c, a, true)
  try {
    const row = await transitionEvent(
      c.trx,
      { ...c.subject, depth: c.execution.depth + 1 },
      event.id,
      String(a.to_state),
      (a.payload ?? {}) as Json,
      a.reason === undefined ? `automation ${c.rule.name}` : String(a.reason)
    )
    return { state: row.state }
  } catch (err) {
    throw creatorRefused(err, 'change the state of', event.id)
  }
}

async function setAttendeeStatus (c: Ctx, a: RuleAction): Promise<Json> {
  const event = await targetEvent(c, a, true)
  if (!(await targets.attendeesAvailable(c.trx))) {
    throw new PermanentError('attendees are not available in this deployment')
  }
  const from = a.from_status as string[] | undefined
  const contactId = c.payload.contact_id
  if (from === undefined && (typeof contactId !== 'string' || !UUID.test(contactId))) {
    throw new PermanentError(
      'the trigger names no attendee (payload.contact_id); set from_status to address attendees by status'
    )
  }
  const status = String(a.status) as AttendeeStatus
  // the same registration rules as PATCH /events/{id}/attendees: capacity, waitlist, approval, promotions
  const contactIds = from !== undefined
    ? await targets.attendeesInStatuses(c.trx, c.tenantId, event.id, from, status)
    : [contactId as string]
  let changed: Changed[]
  try {
    ({ changed } = await changeStatuses(c.trx, event, contactIds.map(id => ({ contactId: id, status })), {
      at: i => `contact ${contactIds[i] ?? ''}`
    }))
  } catch (err) {
    if (err instanceof ApiError && (err.status === 400 || err.status === 409)) {
      throw new PermanentError(
        `${err.detail ?? err.message}${err.errors[0] !== undefined ? ` (${err.errors[0].location})` : ''}`)
    }
    throw err
  }
  const moved = changed.filter(r => r.previous !== r.row.status)
  await emitMany(
    c.trx,
    moved.map(r => attendeeStatusChanged(sourceOf(c), event.id, {
      contactId: r.row.contact_id,
      status: r.row.status,
      previous: r.previous
    }))
  )
  return { updated: moved.length }
}

async function markEventNoShows (c: Ctx, a: RuleAction): Promise<Json> {
  const event = await targetEvent(c, a, true)
  let marked: string[]
  try {
    marked = await markNoShows(c.trx, event, c.engine.now())
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) throw new PermanentError(err.detail ?? err.message)
    throw err
  }
  await emitMany(c.trx, marked.map(contactId =>
    attendeeStatusChanged(sourceOf(c), event.id, { contactId, status: 'no_show', previous: 'confirmed' })))
  return { marked: marked.length }
}

async function inviteGuests (c: Ctx, a: RuleAction): Promise<Json> {
  const event = await targetEvent(c, a, true)
  // a rule on attendee.added fires for drafts too: nothing to send yet, which is no failure (it would pause the rule)
  if (event.status !== 'published' || event.cancelled_at !== null) {
    const why = event.cancelled_at !== null ? 'event cancelled' : `status ${event.status}`
    return { invited: 0, mailed: 0, skipped: why }
  }
  const contact = typeof c.payload.contact_id === 'string' && a.all !== true ? [c.payload.contact_id] : null
  return await sendInvitations(c.trx, event, contact)
}

async function webhook (c: Ctx, a: RuleAction): Promise<Json> {
  const body = JSON.stringify({
    rule_id: c.rule.id,
    execution_id: c.execution.id,
    trigger_type: c.execution.trigger_type,
    payload: c.payload
  })
  const headers: Record<string, string> = { 'automation-execution': c.execution.id }
  if (typeof a.secret === 'string') {
    headers['automation-signature'] = signBody(a.secret, body, c.engine.now().getTime() / 1000)
  }
  try {
    const res = await postWebhook(String(a.url), body, headers, c.engine.allow, c.engine.webhookTimeoutMs)
    return { http_status: res.status }
  } catch (err) {
    if (err instanceof WebhookError && /private|reserved|must use https/.test(err.message)) {
      throw new PermanentError(err.message)
    }
    throw err
  }
}

const RUNNERS: Record<string, (c: Ctx, a: RuleAction) => Promise<Json>> = {
  notify,
  activity,
  transition,
  set_attendee_status: setAttendeeStatus,
  mark_no_shows: markEventNoShows,
  send_invitations: inviteGuests,
  webhook
}

class ActionFailed extends Error {
  constructor (readonly results: Json[], readonly permanent: boolean, message: string) { super(message) }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * The trigger's event as the creator sees it (the fields conditions read), or null when they may
 * not see it. A deleted event (event.deleted) is seen by tenant admins and its creator.
 */
async function eventSeenBy (trx: Tx, subject: AuthContext, eventId: number) {
  const columns = targets.TRIGGER_EVENT_COLUMNS
  const visible = await findEventForRead(trx, subject, eventId).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return undefined
    throw err
  })
  if (visible !== undefined) {
    return Object.fromEntries(columns.map(k => [k, visible[k]])) as Pick<EventRow, (typeof columns)[number]>
  }
  const deleted = await targets.findDeletedEvent(trx, subject.tenantId, eventId)
  if (deleted !== undefined && (isTenantAdmin(subject) || deleted.creator_id === subject.userId)) {
    const { creator_id: _creator, ...rest } = deleted
    return rest
  }
  // an id no event has: nothing to hide, and the actions report the missing event
  return (await targets.eventExists(trx, subject.tenantId, eventId)) ? null : undefined
}

/** The positive integer event id a payload names, or undefined. */
function eventIdOf (raw: unknown): number | undefined {
  const n =
    typeof raw === 'number' ? raw : typeof raw === 'string' && /^[0-9]{1,16}$/.test(raw) ? Number(raw) : Number.NaN
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined
}

/**
 * 'contact <id>' when a contact.* trigger names a contact the creator may not see (a contact that no longer exists
 * hides nothing).
 */
async function hiddenContact (trx: Tx, subject: AuthContext, payload: Json): Promise<string | undefined> {
  const contactId = payload.contact_id
  if (
    typeof payload.topic !== 'string' ||
    !payload.topic.startsWith('contact.') ||
    typeof contactId !== 'string' ||
    !UUID.test(contactId)
  ) { return undefined }
  if (
    !(await targets.contactExists(trx, subject.tenantId, contactId)) ||
    (await findVisibleContact(trx, subject, contactId)) !== undefined
  ) return undefined
  return `contact ${contactId}`
}

/** What the history keeps of a trigger the creator may not see: where it came from, not what it said. */
function withheldPayload (payload: Json): Json {
  const keep = ['topic', 'aggregate_type', 'aggregate_id', 'occurred_at', 'manual']
  return { ...Object.fromEntries(keep.filter(k => payload[k] !== undefined).map(k => [k, payload[k]])), withheld: true }
}

/**
 * Why an event is not a target of the rule's actions, or undefined: EVENT rules act on their event, SPACE rules on
 * events of their space.
 */
async function outsideScope (trx: Tx, rule: RuleRow, eventId: number): Promise<string | undefined> {
  if (rule.scope === 'EVENT' && rule.scope_id !== null && String(eventId) !== rule.scope_id) {
    return `event ${eventId} is outside the rule's scope (event ${rule.scope_id})`
  }
  if (rule.scope === 'SPACE' && rule.scope_id !== null) {
    if (!(await targets.eventInSpace(trx, rule.tenant_id, eventId, Number(rule.scope_id)))) {
      return `event ${eventId} is outside the rule's scope (space ${rule.scope_id})`
    }
  }
  return undefined
}

/**
 * Disables a rule whose creator may no longer act, saying why in the rule (`disabled_reason`), and
 * reports it with an `automation.rule_disabled` domain event (a trigger: an admin's own rule can
 * pass it on, e.g. to a webhook).
 */
async function disableForCreator (trx: Tx, rule: RuleRow, reason: string): Promise<void> {
  // disabled already (paused, or by another run)
  if (!(await repo.disableRule(trx, rule.tenant_id, rule.id, reason))) return
  await emit(trx, ruleDisabled(rule, reason))
}

/**
 * The rule as it was at a version: that version's trigger, conditions, actions, scope and writer; the rest (enabled,
 * id) as it is now.
 */
function ruleAtVersion (current: RuleRow, v: RuleVersionRow): RuleRow {
  return {
    ...current,
    version: v.version,
    name: v.name,
    event_type: v.event_type,
    schedule: v.schedule,
    conditions: v.conditions,
    actions: v.actions,
    scope: v.scope,
    scope_id: v.scope_id,
    created_by_kind: v.created_by_kind,
    creator_id: v.creator_id,
    creator_roles: v.creator_roles,
    org_id: v.org_id
  }
}

/**
 * Pauses a rule whose last `engine.pauseAfterFailures` finished executions (succeeded or failed)
 * all failed: disabled with the reason in `disabled_reason`, an `automation.rule_disabled` domain
 * event, and a notification to the rule's creator (last writer). Runs in the transaction that
 * records the failure; a rule already disabled is left alone (so one pause notifies once).
 */
async function pauseIfFailing (
  trx: Tx,
  engine: Engine,
  tenantId: string,
  ruleId: string,
  executionId: string,
  error: string
): Promise<void> {
  const n = engine.pauseAfterFailures ?? PAUSE_AFTER_FAILURES
  if (n <= 0 || !(await executions.failedInARow(trx, tenantId, ruleId, n))) return
  const reason = `paused after ${n} failed executions in a row (the last, ${executionId}: ${error.slice(0, 500)}); ` +
    'enabling the rule again resumes it'
  if (!(await repo.disableRule(trx, tenantId, ruleId, reason))) return
  const rule = await repo.findRule(trx, tenantId, ruleId)
  if (rule === undefined) return
  await emit(trx, ruleDisabled(rule, reason, executionId))
  const to = await recipientFor(trx, tenantId, 'email', rule.creator_id)
  await queueNotification(trx, {
    tenantId,
    channel: 'email',
    recipient: to.recipient,
    undeliverable: to.undeliverable,
    subject: `Automation rule "${rule.name.replace(/[\r\n]+/g, ' ').slice(0, 150)}" was paused`,
    body:
      `Your automation rule "${rule.name}" (${ruleId}) failed ${n} times in a row and was paused.\n\n` +
      `Last error (execution ${executionId}): ${error.slice(0, 1000)}\n\nFix the cause, then enable the rule again ` +
      `(PATCH /api/v1/automation/rules/${ruleId} with {"enabled": true}); failed executions can be retried ` +
      `(POST /api/v1/automation/rules/${ruleId}/executions/{id}/retry).`,
    priority: 'high',
    payload: { kind: 'automation.rule_paused', source: 'automation', rule_id: ruleId, execution_id: executionId }
  })
}

/**
 * Claims an execution for one attempt: queued, or running with an expired lease (its worker is
 * presumed dead). Returns the claimed row, or why it was not claimed.
 */
export async function claimExecution (
  engine: Engine,
  job: ExecutionJob,
  token: string
): Promise<ExecutionRow | 'busy' | 'done' | 'missing'> {
  const { tenantId, executionId } = job
  const now = engine.now()
  return await withTenant(engine.db, { tenantId }, async trx => {
    const row = await executions.lockExecution(trx, tenantId, executionId)
    if (row === undefined) return 'missing' as const
    if (row.status === 'succeeded' || row.status === 'failed' || row.status === 'skipped') return 'done' as const
    if (row.status === 'running' && row.lease_until !== null && row.lease_until > now) return 'busy' as const
    return await executions.claimExecutionRow(trx, tenantId, executionId, {
      attempts: row.attempts + 1,
      claimToken: token,
      leaseUntil: new Date(now.getTime() + EXPIRE_SEC * 1000),
      startedAt: row.started_at ?? now
    })
  })
}

/** How a run ends in its transaction: the execution's status and what its history keeps. */
interface Finish {
  status: 'succeeded' | 'skipped' | 'failed'
  values: { conditions_met?: boolean; condition_results?: unknown[]; action_results?: unknown[]; error?: string }
}
/** A step of a run: what it found, or how the run ends there. */
type Step<T> = { ok: T } | { finish: Finish }
const ends = (status: Finish['status'], error: string): { finish: Finish } =>
  ({ finish: { status, values: { error } } })

/**
 * Step 1: the rule at the version the execution was enqueued with (its conditions, actions, scope and writer, not a
 * later edit's), unless the rule was deleted or disabled since (manual runs and retries run a disabled or paused rule
 * too), or that version is gone. `current` is the rule as it is now.
 */
async function ruleToRun (trx: Tx, row: ExecutionRow): Promise<Step<{ rule: RuleRow, current: RuleRow }>> {
  const current = await repo.findRule(trx, row.tenant_id, row.rule_id)
  if (current === undefined) return ends('skipped', 'the rule was deleted')
  if (!current.enabled && !/^(manual|retry):/.test(row.trigger_key)) return ends('skipped', 'the rule is disabled')
  const version = await repo.findRuleVersion(trx, row.tenant_id, row.rule_id, row.rule_version)
  if (version === undefined) return ends('skipped', `version ${row.rule_version} of the rule no longer exists`)
  return { ok: { rule: ruleAtVersion(current, version), current } }
}

/**
 * Step 2: whom the rule acts as: the writer of that version, as they are now, who must still be an active user. A
 * removed or deactivated writer fails the run, and disables the rule while it still acts as them (a later version
 * may act as someone else).
 */
async function actingSubject (trx: Tx, rule: RuleRow, current: RuleRow): Promise<Step<AuthContext>> {
  const refused = await actorRefused(trx, rule.tenant_id, rule.creator_id)
  if (refused !== undefined) {
    const gone = `the rule's creator ${rule.creator_id} was ${refused}`
    if (current.creator_id !== rule.creator_id) {
      return ends('failed', `${gone} (the writer of version ${rule.version}, which this execution runs)`)
    }
    const reason = `${gone}; the rule was disabled (enabling it again makes it act as whoever enables it)`
    await disableForCreator(trx, rule, reason)
    return ends('failed', reason)
  }
  const creator = await findUser(trx, rule.tenant_id, rule.creator_id)
  return { ok: await asTheyAreNow(trx, subjectOf(rule, creator?.email ?? null)) }
}

/**
 * Step 3: the trigger's event and contact, never looked at (conditions, templates, webhooks) unless the subject may
 * see them now, and the domain event told of to them as they are now (they may have lost sight of it since the
 * dispatch). What they may not see skips the run and cuts the stored payload down: the history shows no more of it
 * than the subject may see.
 */
async function triggerInSight (
  trx: Tx,
  subject: AuthContext,
  rule: RuleRow,
  row: ExecutionRow
): Promise<Step<{ eventId: number | undefined, event: SeenEvent | undefined }>> {
  const payload = row.trigger_payload
  const eventId = eventIdOf(
    payload.event_id ?? (rule.scope === 'EVENT' && rule.scope_id !== null ? rule.scope_id : undefined)
  )
  const event = eventId === undefined ? undefined : await eventSeenBy(trx, subject, eventId)
  const untold = typeof payload.topic === 'string' && payload.manual !== true &&
    !(await mayLearnOf(trx, subject, payload.topic, payload))
  const hidden = event === null
    ? `event ${eventId}`
    : untold ? `what the ${payload.topic} names` : await hiddenContact(trx, subject, payload)
  if (hidden !== undefined || event === null) {
    await executions.replaceTriggerPayload(trx, row.tenant_id, row.id, withheldPayload(payload))
    return ends('skipped', `the rule's creator may not see ${hidden}; the rule did not run`)
  }
  return { ok: { eventId, event } }
}

/** The trigger's event as its subject sees it (`eventSeenBy`). */
type SeenEvent = NonNullable<Awaited<ReturnType<typeof eventSeenBy>>>

/** What templates (`{{title}}`) read: the trigger payload, falling back to the event's current fields. */
function templateFields (payload: Json, event: SeenEvent | undefined): Json {
  return event === undefined
    ? payload
    : {
        ...event,
        event_id: event.id,
        start_dt: event.start_dt?.toISOString() ?? null,
        end_dt: event.end_dt?.toISOString() ?? null,
        ...payload
      }
}

/** Step 4: the actions, in order; the first that fails ends the attempt (ActionFailed, with the results so far). */
async function applyActions (c: Ctx): Promise<Json[]> {
  const actionResults: Json[] = []
  for (const [index, action] of c.rule.actions.entries()) {
    const run = RUNNERS[action.type]
    try {
      if (run === undefined) throw new PermanentError(`unknown action type ${action.type}`)
      const out = await run(c, action)
      actionResults.push({ index, type: action.type, status: 'succeeded', ...out })
    } catch (err) {
      const permanent = err instanceof PermanentError || (err instanceof ApiError && err.status < 500)
      const message = err instanceof Error ? err.message : String(err)
      actionResults.push({ index, type: action.type, status: 'failed', error: message })
      throw new ActionFailed(actionResults, permanent, `action ${index} (${action.type}) failed: ${message}`)
    }
  }
  return actionResults
}

/**
 * Records a failed attempt, in a transaction of its own (the run's was rolled back): given up when the action said
 * so or no attempt is left, else due again; a rule failing too often is paused.
 */
async function recordFailure (
  engine: Engine,
  job: ExecutionJob,
  token: string,
  lastAttempt: boolean,
  err: unknown
): Promise<{ outcome: RunOutcome; error: string }> {
  const failed = err instanceof ActionFailed ? err : undefined
  const message = err instanceof Error ? err.message : String(err)
  const giveUp = (failed?.permanent ?? false) || lastAttempt
  await withTenant(engine.db, { tenantId: job.tenantId }, async trx => {
    const updated = await executions.failAttempt(trx, job.tenantId, job.executionId, token, {
      giveUp,
      finishedAt: engine.now(),
      error: message,
      actionResults: failed?.results
    })
    if (giveUp && updated !== undefined) {
      await pauseIfFailing(trx, engine, job.tenantId, updated.rule_id, job.executionId, message)
    }
  })
  automationExecutions.inc({ status: giveUp ? 'failed' : 'retry' })
  return { outcome: giveUp ? 'failed' : 'retry', error: message }
}

/**
 * Runs one execution (the job handler). Returns what happened; 'retry' means the attempt failed
 * and another is due (the job handler throws so that pg-boss retries with backoff). The steps: claim the execution,
 * then in one transaction the rule at its version (`ruleToRun`), whom it acts as (`actingSubject`), what of the
 * trigger they may see (`triggerInSight`), the conditions, the actions (`applyActions`), the result; a failure is
 * recorded apart (`recordFailure`).
 */
export async function runExecution (
  engine: Engine,
  job: ExecutionJob
): Promise<{ outcome: RunOutcome; error?: string }> {
  // every change of the run is the rule's: its run-as user through this execution (docs/audit.md)
  return await withAuditActor({ kind: 'automation', id: null, via: `execution:${job.executionId}` }, async () =>
    await runClaimed(engine, job))
}

async function runClaimed (engine: Engine, job: ExecutionJob): Promise<{ outcome: RunOutcome; error?: string }> {
  const { tenantId, executionId } = job
  const token = crypto.randomUUID()
  const claimed = await claimExecution(engine, job, token)
  if (typeof claimed === 'string') return { outcome: claimed }

  try {
    const outcome = await withTenant(engine.db, { tenantId }, async trx => {
      const row = await executions.lockExecution(trx, tenantId, executionId)
      if (row === undefined) return 'missing' as const // deleted with its rule after our claim
      if (row.claim_token !== token) return 'busy' as const // re-claimed by another worker after our lease
      const finish = async ({ status, values }: Finish): Promise<Finish['status']> => {
        await executions.finishExecution(trx, tenantId, executionId, {
          status,
          finishedAt: engine.now(),
          conditionsMet: values.conditions_met,
          conditionResults: values.condition_results,
          actionResults: values.action_results,
          error: values.error
        })
        if (status === 'failed') {
          await pauseIfFailing(trx, engine, tenantId, row.rule_id, executionId, values.error ?? 'failed')
        }
        return status
      }
      const found = await ruleToRun(trx, row)
      if ('finish' in found) return await finish(found.finish)
      const { rule } = found.ok
      const subject = await actingSubject(trx, rule, found.ok.current)
      if ('finish' in subject) return await finish(subject.finish)
      const sight = await triggerInSight(trx, subject.ok, rule, row)
      if ('finish' in sight) return await finish(sight.finish)
      const { eventId, event } = sight.ok

      const outOfScope = eventId === undefined ? undefined : await outsideScope(trx, rule, eventId)

      const payload = row.trigger_payload
      const data = { payload, event: event ?? null, trigger_type: row.trigger_type, rule_id: rule.id, depth: row.depth }
      const { met, results } = evaluateConditions(rule.conditions, data)
      if (!met) {
        return await finish({
          status: 'skipped',
          values: { conditions_met: false, condition_results: results, action_results: [] }
        })
      }
      const actionResults = await applyActions({
        trx,
        engine,
        tenantId,
        rule,
        execution: row,
        payload: templateFields(payload, event),
        eventId,
        subject: subject.ok,
        outOfScope
      })
      return await finish({
        status: 'succeeded',
        values: { conditions_met: true, condition_results: results, action_results: actionResults }
      })
    })
    if (outcome !== 'busy') automationExecutions.inc({ status: outcome })
    return { outcome }
  } catch (err) {
    return await recordFailure(engine, job, token, claimed.attempts >= claimed.max_attempts, err)
  }
}

/** The pg-boss job handler: throws when the execution should be retried. */
export async function handleJob (engine: Engine, job: ExecutionJob): Promise<RunOutcome> {
  const r = await runExecution(engine, job)
  if (r.outcome === 'retry' || r.outcome === 'busy') throw new Error(r.error ?? 'execution is running elsewhere')
  return r.outcome
}

/**
 * Fails executions whose last attempt's worker died (running, lease expired, no attempts left):
 * pg-boss does not offer their job again, so nothing else would finish them.
 */
export async function sweepExecutions (engine: Engine, now: Date = engine.now()): Promise<number> {
  return await withSystem(engine.db, async (trx) => {
    const error = 'the worker running the last attempt stopped before finishing'
    const rows = await executions.failAbandonedExecutions(trx, now, error)
    for (const r of rows) await pauseIfFailing(trx, engine, r.tenant_id, r.rule_id, r.id, error)
    automationExecutions.inc({ status: 'failed' }, rows.length)
    return rows.length
  })
}

// ---- background workers

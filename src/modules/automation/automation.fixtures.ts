/**
 * Test helpers of the automation module: an engine on a test clock, a loop that runs automation
 * until it settles, and rules and their history through the API.
 */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { insertAttendee } from '../attendees/attendees.fixtures.ts'
import type { Json } from '../events/events.fixtures.ts'
import { dispatchOutbox } from './automation.dispatcher.ts'
import { runExecution } from './automation.runner.ts'
import { type Engine } from './automation.engine.ts'

export { addContact } from '../attendees/attendees.fixtures.ts'

/** The app's engine with a clock the test moves. */
export function engineAt (t: TestApp, clock: { now: Date }): Engine {
  return { ...t.ctx.engines.automation, now: () => clock.now }
}

/**
 * Dispatches the outbox and runs every queued execution (of one tenant, when given), one at a time,
 * until nothing is left; with a clock, the clock moves a second further before each run.
 */
export async function drain (
  engine: Engine, options: { clock?: { now: Date }; tenantId?: string } = {}
): Promise<void> {
  const { clock, tenantId } = options
  for (let round = 0; round < 20; round++) {
    const d = await dispatchOutbox(engine)
    const queued = await engine.db
      .selectFrom('automation_executions')
      .select(['tenant_id', 'id'])
      .where('status', '=', 'queued')
      .$if(tenantId !== undefined, qb => qb.where('tenant_id', '=', tenantId ?? ''))
      .orderBy('created_at')
      .execute()
    for (const q of queued) {
      if (clock !== undefined) clock.now = new Date(clock.now.getTime() + 1000)
      await runExecution(engine, { tenantId: q.tenant_id, executionId: q.id })
    }
    if (d.events === 0 && queued.length === 0) return
  }
  throw new Error('automation did not settle')
}

/** Creates a rule (GLOBAL unless the body says otherwise) as `token`. */
export async function rule (t: TestApp, token: string, body: Json): Promise<Json> {
  const res = await t.as(token, {
    method: 'POST',
    url: '/api/v1/automation/rules',
    payload: { name: 'rule', scope: 'GLOBAL', ...body }
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** Creates a rule of one event (scope EVENT), fired by `event.updated` unless the body says otherwise. */
export async function eventRule (t: TestApp, token: string, eventId: number, body: Json): Promise<Json> {
  return await rule(t, token, {
    scope: 'EVENT',
    scope_id: String(eventId),
    schedule: { event_type: 'event.updated' },
    ...body
  })
}

/** Runs a rule by hand (`POST /automation/rules/{id}/execute`) as `token`: asserts the 202; the queued execution. */
export async function executeRule (t: TestApp, token: string, ruleId: string, payload: Json = {}): Promise<Json> {
  const res = await t.as(token, { method: 'POST', url: `/api/v1/automation/rules/${ruleId}/execute`, payload })
  assert.equal(res.statusCode, 202, res.body)
  return res.json()
}

/** Creates an automation of an event (`POST /events/{id}/automations`) as `token`: asserts the 201; the automation. */
export async function eventAutomation (t: TestApp, token: string, eventId: number, body: Json): Promise<Json> {
  const res = await t.as(token, { method: 'POST', url: `/api/v1/events/${eventId}/automations`, payload: body })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** A rule's execution history as `token` sees it (first 100, newest first; `query` adds filters). */
export async function executions (t: TestApp, token: string, ruleId: string, query = ''): Promise<Json[]> {
  const res = await t.as(token, {
    method: 'GET',
    url: `/api/v1/automation/rules/${ruleId}/executions?size=100${query}`
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().items
}

/** Puts a contact on an event with a status, directly (no domain event). */
export async function addAttendee (
  t: TestApp,
  tenantId: string,
  eventId: number,
  contactId: string,
  status: 'invited' | 'confirmed' | 'declined' | 'tentative' | 'checked_in'
): Promise<void> {
  await insertAttendee(t, tenantId, { event_id: eventId, contact_id: contactId, status })
}

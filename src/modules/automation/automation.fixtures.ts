/**
 * Test helpers of the automation module: an engine on a test clock, a loop that runs automation
 * until it settles, and rules and their history through the API.
 */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import type { Json } from '../events/events.fixtures.ts'
import { dispatchOutbox, runExecution, type Engine } from './automation.engine.ts'
import { automationEngineOf } from './automation.routes.ts'

/** The app's engine with a clock the test moves. */
export function engineAt (t: TestApp, clock: { now: Date }): Engine {
  return { ...automationEngineOf(t.ctx), now: () => clock.now }
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

/** A rule's execution history as `token` sees it (first 100, newest first; `query` adds filters). */
export async function executions (t: TestApp, token: string, ruleId: string, query = ''): Promise<Json[]> {
  const res = await t.as(token, {
    method: 'GET',
    url: `/api/v1/automation/rules/${ruleId}/executions?size=100${query}`
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().items
}

/** Creates a contact as `token`; its id. */
export async function addContact (t: TestApp, token: string, email: string): Promise<string> {
  const res = await t.as(token, { method: 'POST', url: '/api/v1/contacts', payload: { first_name: email, email } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}

/** Puts a contact on an event with a status, directly (no domain event). */
export async function addAttendee (
  t: TestApp,
  tenantId: string,
  eventId: number,
  contactId: string,
  status: string
): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx
      .insertInto('attendees')
      .values({ tenant_id: tenantId, event_id: eventId, contact_id: contactId, status } as never)
      .execute()
  })
}

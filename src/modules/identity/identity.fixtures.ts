/**
 * Test fixtures of the identity-provider webhook: events as ZITADEL sends them, signed with a
 * webhook secret and posted to `POST /integrations/idp/webhook`.
 */
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { signBody } from './identity.idp-signature.ts'

type Json = Record<string, any>

const now = (): number => Math.floor(Date.now() / 1000)

/** An event of the identity provider about one user of a tenant (its organization), with its payload if any. */
export function idpEvent (
  tenantId: string,
  userId: string,
  sequence: number,
  eventType: string,
  payload?: unknown
): Json {
  return {
    aggregateID: userId,
    aggregateType: 'user',
    resourceOwner: tenantId,
    instanceID: 'instance-1',
    version: 'v2',
    sequence,
    event_type: eventType,
    created_at: new Date().toISOString(),
    userID: 'actor-1',
    ...(payload !== undefined ? { event_payload: payload } : {})
  }
}

export interface SendOptions {
  /** the secret to sign with, instead of the webhook's */
  secret?: string
  /** the signature header's name (`idp-signature`) */
  header?: string
  /** the header's value, instead of a signature of the body */
  signature?: string
  /** the signature's time (now) */
  t?: number
  contentType?: string
}

/** Posts events to the webhook signed with `secret` (the app's `IDP_WEBHOOK_SECRET`). */
export function idpWebhook (secret: string) {
  /** Posts a body (an event, or raw text) signed as the options say; the answer. */
  async function send (t: TestApp, body: Json | string | Buffer, o: SendOptions = {}): Promise<LightMyRequestResponse> {
    const raw = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
    const signature = o.signature ?? signBody(o.secret ?? secret, raw, o.t ?? now())
    return await t.app.inject({
      method: 'POST',
      url: '/api/v1/integrations/idp/webhook',
      headers: { 'content-type': o.contentType ?? 'application/json', [o.header ?? 'idp-signature']: signature },
      payload: raw
    })
  }
  /** Posts an event: asserts the 200; what the webhook did with it ('applied', 'duplicate', 'stale' …). */
  async function deliver (t: TestApp, body: Json, o: SendOptions = {}): Promise<string> {
    const res = await send(t, body, o)
    assert.equal(res.statusCode, 200, res.body)
    return res.json().status
  }
  return { send, deliver }
}

/** A user's row in the tenant's `users` table (its profile and state), if any. */
export async function userRow (t: TestApp, tenantId: string, userId: string) {
  return await withTenant(t.ctx.db, { tenantId }, trx => trx.selectFrom('users').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', userId).executeTakeFirst())
}

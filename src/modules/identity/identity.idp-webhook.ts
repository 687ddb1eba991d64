/**
 * What a verified webhook delivery does: which event kinds have which effect, how the profile is
 * read from `event_payload` (object, base64 of JSON, or absent), and the one transaction that
 * records the delivery and applies it.
 */
import type { Kysely } from 'kysely'
import type { ValidateFunction } from 'ajv'
import type { Database } from '../../platform/db/database.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { idpWebhookDeliveries } from '../../platform/metrics.ts'
import { error400BadRequest, fieldError, invalidField } from '../../platform/http/errors.ts'
import { toErrorDetails, validatorCompiler } from '../../platform/http/validation.ts'
import * as repo from './identity.repository.ts'
import { IdpEvent, IdpProfilePayload } from './identity.schemas.ts'
import { applyUserChange } from './identity.service.ts'
import type { UserState } from './identity.table.ts'

export type Lifecycle = 'added' | 'changed' | 'deactivated' | 'reactivated' | 'removed'

/** Event kinds with an effect; every other kind is recorded and changes nothing. */
export const EVENT_KINDS: Readonly<Record<string, Lifecycle>> = {
  'user.human.added': 'added',
  'user.human.selfregistered': 'added',
  'user.machine.added': 'added',
  'user.added': 'added',
  'user.selfregistered': 'added',
  'user.human.email.changed': 'changed',
  'user.human.profile.changed': 'changed',
  'user.username.changed': 'changed',
  'user.domain.claimed': 'changed',
  'user.machine.changed': 'changed',
  'user.email.changed': 'changed',
  'user.profile.changed': 'changed',
  'user.deactivated': 'deactivated',
  'user.locked': 'deactivated',
  'user.reactivated': 'reactivated',
  'user.unlocked': 'reactivated',
  'user.removed': 'removed'
}

const STATE_OF: Record<Lifecycle, UserState | undefined> = {
  added: 'active',
  changed: undefined,
  deactivated: 'inactive',
  reactivated: 'active',
  removed: 'removed'
}

const compile = (schema: object): ValidateFunction =>
  validatorCompiler({
    schema,
    httpPart: 'body',
    method: 'POST',
    url: '/api/v1/integrations/idp/webhook'
  }) as ValidateFunction
const validateEvent = compile(IdpEvent)
const validateProfile = compile(IdpProfilePayload)

/** Parses and validates the (already authenticated) raw body: 400 naming the field otherwise. */
export function parseEvent (raw: Buffer): IdpEvent {
  let value: unknown
  try {
    value = JSON.parse(raw.toString('utf8'))
  } catch {
    throw invalidField('body', 'invalid JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidField('body', 'expected object')
  if (!validateEvent(value)) {
    throw error400BadRequest('validation failed', toErrorDetails(validateEvent.errors ?? [], 'body'))
  }
  return value as IdpEvent
}

const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/

/** The payload as an object: as sent, decoded from base64 JSON, or empty when absent. */
export function decodePayload (payload: IdpEvent['event_payload']): Record<string, unknown> {
  if (payload === undefined || payload === null) return {}
  if (typeof payload !== 'string') return payload
  const text = payload.trim()
  if (text === '') return {}
  if (!BASE64.test(text)) throw invalidField('body.event_payload', 'expected a JSON object or base64 of one')
  let value: unknown
  try {
    value = JSON.parse(
      Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64').toString('utf8')
    )
  } catch {
    throw invalidField('body.event_payload', 'base64 does not decode to JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidField('body.event_payload', 'expected a JSON object or base64 of one')
  }
  return value as Record<string, unknown>
}

const clean = (v: string | null | undefined): string | null =>
  v === undefined || v === null || v.trim() === '' ? null : v.trim()

/**
 * The profile columns an event sets. Only the fields the payload carries are returned (a
 * profile change names what changed), except for `added`, which describes the whole profile.
 */
export function profileFrom (kind: Lifecycle, payload: Record<string, unknown>): repo.ProfileValues {
  if (!validateProfile(payload)) {
    throw error400BadRequest('validation failed', toErrorDetails(validateProfile.errors ?? [], 'body.event_payload'))
  }
  const p = payload as IdpProfilePayload
  const out: repo.ProfileValues = kind === 'added'
    ? { email: null, display_name: null, first_name: null, last_name: null, username: null }
    : {}
  if ('email' in p) out.email = clean(p.email)
  if ('userName' in p) out.username = clean(p.userName)
  if ('firstName' in p) out.first_name = clean(p.firstName)
  if ('lastName' in p) out.last_name = clean(p.lastName)
  if ('displayName' in p) out.display_name = clean(p.displayName)
  else if ('name' in p) out.display_name = clean(p.name) // machine users have a name, not a display name
  if (out.email !== undefined && out.email !== null && out.email.length > 320) {
    throw error400BadRequest('validation failed', [fieldError('body.event_payload.email', 'expected length <= 320')])
  }
  return out
}

export type DeliveryStatus = 'applied' | 'duplicate' | 'stale' | 'ignored'

export interface Delivery {
  status: DeliveryStatus
  /** the user whose stored state may have changed (for the gate cache) */
  tenantId: string
  userId: string
}

/**
 * Records and applies one delivery in one transaction scoped to the event's tenant. Deliveries of
 * one aggregate are serialized, so concurrent repeats apply once.
 */
export async function applyDelivery (db: Kysely<Database>, event: IdpEvent): Promise<Delivery> {
  const tenantId = event.resourceOwner
  const userId = event.aggregateID
  const kind = event.aggregateType === 'user' ? EVENT_KINDS[event.event_type] : undefined
  // Read the payload before the transaction: a malformed one is a 400 that records nothing.
  const profile = kind === 'added' || kind === 'changed' ? profileFrom(kind, decodePayload(event.event_payload)) : {}
  const status = await withTenant(db, { tenantId }, async (trx): Promise<DeliveryStatus> => {
    await repo.lockUser(trx, tenantId, userId)
    if (await repo.deliverySeen(trx, tenantId, event.instanceID, userId, event.sequence)) return 'duplicate'
    let outcome: 'applied' | 'stale' | 'ignored' = 'ignored'
    if (kind !== undefined) {
      const result = await applyUserChange(trx, {
        tenantId,
        userId,
        profile,
        state: STATE_OF[kind],
        sequence: event.sequence,
        actorId: event.userID !== undefined && event.userID !== '' ? event.userID : null,
        source: event.event_type
      })
      outcome = result.outcome
    }
    await repo.recordDelivery(trx, {
      tenantId,
      instanceId: event.instanceID,
      aggregateId: userId,
      sequence: event.sequence,
      eventType: event.event_type,
      outcome
    })
    return outcome
  })
  idpWebhookDeliveries.inc({ outcome: status })
  return { status, tenantId, userId }
}

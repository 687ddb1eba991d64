/**
 * SQL of the webhooks module: subscriptions and their delivery log (in the caller's tenant), and the
 * dispatcher's and deliverer's statements (system transactions, one tenant at a time where they
 * write). Tables: migrations/0025_webhooks.sql, the attempts 0047_webhook_attempts.sql.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { bumpRevision } from '../../platform/db/revision.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { KeysetPageQuery } from '../../platform/http/schema.ts'
import type { AttemptErrorKind, DeliveryRow, SubscriptionRow, WebhooksTables } from './webhooks.table.ts'

/** The executor with the module's tables. */
const t = (trx: Tx) => trx.withTables<WebhooksTables>()

const KEYS: KeyColumn[] = [
  { ref: 'created_at', dir: 'desc', type: 'time' },
  { ref: 'id', dir: 'desc', type: 'uuid' }
]

export const SUBSCRIPTION_COLUMNS = [
  'id', 'url', 'event_types', 'description', 'enabled', 'disabled_reason', 'disabled_at', 'created_by',
  'previous_secret_expires_at', 'consecutive_failures', 'revision', 'created_at', 'updated_at'
] as const

export type SubscriptionView = Pick<SubscriptionRow, typeof SUBSCRIPTION_COLUMNS[number]>

export interface NewSubscription {
  url: string
  event_types: string[]
  description: string | null
  enabled: boolean
  secret: string
  created_by: string
  created_by_email: string | null
  created_by_roles: string[]
  created_by_org: string | null
}

export async function insertSubscription (trx: Tx, tenantId: string, s: NewSubscription): Promise<SubscriptionView> {
  return await t(trx).insertInto('webhook_subscriptions')
    .values({
      tenant_id: tenantId,
      ...s,
      event_types: sql`${s.event_types}::text[]` as never,
      created_by_roles: sql`${s.created_by_roles}::text[]` as never
    })
    .returning(SUBSCRIPTION_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function listSubscriptions (trx: Tx, tenantId: string, q: KeysetPageQuery) {
  const window = pageWindow(q, listScope('webhooks', {}), KEYS)
  const base = t(trx).selectFrom('webhook_subscriptions').where('tenant_id', '=', tenantId)
  return await listPage(trx, base, qb => qb.select(SUBSCRIPTION_COLUMNS), KEYS, window)
}

export async function findSubscription (trx: Tx, tenantId: string, id: string): Promise<SubscriptionView | undefined> {
  return await t(trx).selectFrom('webhook_subscriptions').select(SUBSCRIPTION_COLUMNS)
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .executeTakeFirst()
}

/**
 * What a subscription's answer tells of its deliveries: the pending ones (by the partial index of the backlog), those
 * of them with a failed attempt, and its last success (kept on the subscription).
 */
export async function deliveryFigures (trx: Tx, tenantId: string, id: string) {
  const { rows } = await sql<{ pending: number, failing: number, last_success_at: Date | null }>`
    select (select count(*) from webhook_deliveries d where d.tenant_id = s.tenant_id and d.subscription_id = s.id
              and d.status = 'pending')::int as pending,
           (select count(*) from webhook_deliveries d where d.tenant_id = s.tenant_id and d.subscription_id = s.id
              and d.status = 'pending' and d.last_error is not null)::int as failing,
           s.last_success_at
      from webhook_subscriptions s where s.tenant_id = ${tenantId} and s.id = ${id}`.execute(trx)
  return rows[0]
}

export async function lockSubscription (trx: Tx, tenantId: string, id: string): Promise<SubscriptionRow | undefined> {
  return await t(trx).selectFrom('webhook_subscriptions').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

export interface SubscriptionChange {
  url?: string
  event_types?: string[]
  description?: string | null
  enabled?: boolean
}

/** Changes a subscription; enabling it again clears the reason it was disabled and its run of failures. */
export async function updateSubscription (
  trx: Tx,
  tenantId: string,
  id: string,
  change: SubscriptionChange
): Promise<SubscriptionView> {
  const { event_types: types, ...rest } = change
  return await t(trx).updateTable('webhook_subscriptions')
    .set({
      ...rest,
      ...(types !== undefined ? { event_types: sql`${types}::text[]` as never } : {}),
      ...(change.enabled === true
        ? { disabled_reason: null, disabled_at: null, consecutive_failures: 0, failing_since: null }
        : {}),
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returning(SUBSCRIPTION_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function deleteSubscription (trx: Tx, tenantId: string, id: string): Promise<boolean> {
  const r = await t(trx).deleteFrom('webhook_subscriptions')
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

/** A new secret; the current one keeps signing for `overlapSeconds`. */
export async function rotateSecret (
  trx: Tx,
  tenantId: string,
  id: string,
  secret: string,
  overlapSeconds: number
): Promise<SubscriptionView> {
  return await t(trx).updateTable('webhook_subscriptions')
    .set({
      previous_secret: sql`secret`,
      previous_secret_expires_at: sql`now() + make_interval(secs => ${overlapSeconds})`,
      secret,
      ...bumpRevision()
    })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returning(SUBSCRIPTION_COLUMNS)
    .executeTakeFirstOrThrow()
}

// ---- deliveries

const DELIVERY_KEYS: KeyColumn[] = KEYS

export const DELIVERY_COLUMNS = [
  'id', 'subscription_id', 'outbox_id', 'msg_id', 'event_type', 'status', 'attempts', 'next_attempt_at',
  'last_status_code', 'last_duration_ms', 'last_error', 'last_attempt_at', 'delivered_at', 'created_at'
] as const

export async function listDeliveries (trx: Tx, tenantId: string, subscriptionId: string, q: KeysetPageQuery) {
  const window = pageWindow(q, listScope('webhook-deliveries', { subscriptionId }), DELIVERY_KEYS)
  const base = t(trx).selectFrom('webhook_deliveries')
    .where('tenant_id', '=', tenantId).where('subscription_id', '=', subscriptionId)
  return await listPage(trx, base, qb => qb.select(DELIVERY_COLUMNS), DELIVERY_KEYS, window)
}

const ATTEMPT_KEYS: KeyColumn[] = [
  { ref: 'started_at', dir: 'desc', type: 'time' },
  { ref: 'id', dir: 'desc', type: 'int' }
]

export const ATTEMPT_COLUMNS = [
  'id', 'attempt', 'started_at', 'duration_ms', 'status_code', 'error_kind', 'error', 'response_excerpt', 'succeeded'
] as const

/** The attempts kept of a delivery, newest first. */
export async function listAttempts (trx: Tx, tenantId: string, deliveryId: string, q: KeysetPageQuery) {
  const window = pageWindow(q, listScope('webhook-attempts', { deliveryId }), ATTEMPT_KEYS)
  const base = t(trx).selectFrom('webhook_delivery_attempts')
    .where('tenant_id', '=', tenantId).where('delivery_id', '=', deliveryId)
  return await listPage(trx, base, qb => qb.select(ATTEMPT_COLUMNS), ATTEMPT_KEYS, window)
}

export async function insertDelivery (
  trx: Tx,
  d: {
    tenantId: string, subscriptionId: string, outboxId: number | null, msgId: string, eventType: string, body: unknown
  }
) {
  return await t(trx).insertInto('webhook_deliveries')
    .values({
      tenant_id: d.tenantId,
      subscription_id: d.subscriptionId,
      outbox_id: d.outboxId,
      msg_id: d.msgId,
      event_type: d.eventType,
      body: sql`${JSON.stringify(d.body)}::jsonb`,
      next_attempt_at: sql`now()`
    })
    .onConflict(oc => oc.columns(['tenant_id', 'subscription_id', 'outbox_id']).where('outbox_id', 'is not', null)
      .doNothing())
    .returning(DELIVERY_COLUMNS)
    .executeTakeFirst()
}

/** Makes a delivery due again now, with a fresh run of attempts (the same webhook-id). */
export async function redeliver (trx: Tx, tenantId: string, subscriptionId: string, id: string) {
  return await t(trx).updateTable('webhook_deliveries')
    .set({ status: 'pending', attempts: 0, next_attempt_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('subscription_id', '=', subscriptionId).where('id', '=', id)
    .returning(DELIVERY_COLUMNS)
    .executeTakeFirst()
}

export async function findDelivery (trx: Tx, tenantId: string, subscriptionId: string, id: string) {
  return await t(trx).selectFrom('webhook_deliveries').select(DELIVERY_COLUMNS)
    .where('tenant_id', '=', tenantId).where('subscription_id', '=', subscriptionId).where('id', '=', id)
    .executeTakeFirst()
}

// ---- the dispatcher (outbox → deliveries)

/** Tenants with an enabled subscription (system transaction, no locks). */
export async function tenantsWithSubscriptions (trx: Tx, limit: number): Promise<string[]> {
  const rows = await t(trx).selectFrom('webhook_subscriptions').select('tenant_id')
    .where('enabled', '=', true).groupBy('tenant_id').orderBy('tenant_id').limit(limit)
    .execute()
  return rows.map(r => r.tenant_id)
}

/**
 * The tenant's dispatcher cursor, locked: one dispatcher per tenant at a time. A new cursor starts above the outbox
 * rows written `settleSeconds` before the tenant's first enabled subscription: a subscription takes the events from
 * its creation on, so the rows before are never delivered, and walking them (a week of history, RETENTION_OUTBOX)
 * would hold the tenant's first deliveries back for minutes. `settleSeconds` is the floor's own bound on how long a
 * transaction that wrote an outbox row stays open (advanceFloor).
 */
export async function lockCursor (trx: Tx, tenantId: string, settleSeconds: number): Promise<number> {
  const exists = await t(trx).selectFrom('webhook_cursors').select('floor_id')
    .where('tenant_id', '=', tenantId).executeTakeFirst()
  if (exists === undefined) {
    // read, then written as VALUES: an INSERT … SELECT is a COPY into the shards on Citus, which RLS refuses
    const { rows } = await sql<{ floor: string }>`select coalesce((select max(o.id) from outbox o
      where o.tenant_id = ${tenantId} and o.created_at < (select min(s.created_at) from webhook_subscriptions s
        where s.tenant_id = ${tenantId} and s.enabled) - make_interval(secs => ${settleSeconds})), 0)::text as floor`
      .execute(trx)
    await t(trx).insertInto('webhook_cursors').values({ tenant_id: tenantId, floor_id: Number(rows[0]?.floor ?? 0) })
      .onConflict(oc => oc.column('tenant_id').doNothing()).execute()
  }
  const row = await t(trx).selectFrom('webhook_cursors').select('floor_id')
    .where('tenant_id', '=', tenantId).forUpdate().executeTakeFirstOrThrow()
  return Number(row.floor_id)
}

/** Outbox rows of the tenant above the floor that the dispatcher has not seen, in id order. */
export async function unseenOutboxRows (trx: Tx, tenantId: string, floor: number, limit: number) {
  return await t(trx).selectFrom('outbox as o')
    .select(['o.id', 'o.topic', 'o.payload', 'o.created_at'])
    .where('o.tenant_id', '=', tenantId)
    .where('o.id', '>', floor)
    .where(eb => eb.not(eb.exists(
      eb.selectFrom('webhook_outbox_seen as s').select(sql`1`.as('one'))
        .whereRef('s.tenant_id', '=', 'o.tenant_id').whereRef('s.outbox_id', '=', 'o.id')
    )))
    .orderBy('o.id')
    .limit(limit)
    .execute()
}

export async function enabledSubscriptions (trx: Tx, tenantId: string) {
  return await t(trx).selectFrom('webhook_subscriptions')
    .select(['id', 'event_types', 'created_at', 'created_by', 'created_by_roles', 'created_by_org'])
    .where('tenant_id', '=', tenantId).where('enabled', '=', true)
    .execute()
}

export async function markSeen (trx: Tx, tenantId: string, ids: number[]): Promise<void> {
  if (ids.length === 0) return
  await t(trx).insertInto('webhook_outbox_seen')
    .values(ids.map(id => ({ tenant_id: tenantId, outbox_id: id })))
    .onConflict(oc => oc.columns(['tenant_id', 'outbox_id']).doNothing())
    .execute()
}

/**
 * Raises the floor to the highest outbox id seen more than `settleSeconds` ago, and forgets the
 * seen rows below it. An outbox row below that id that is not yet visible would belong to a
 * transaction open for longer than `settleSeconds` since its insert: none is.
 */
export async function advanceFloor (trx: Tx, tenantId: string, settleSeconds: number): Promise<void> {
  const row = await t(trx).selectFrom('webhook_outbox_seen')
    .select(eb => eb.fn.max('outbox_id').as('floor'))
    .where('tenant_id', '=', tenantId)
    .where('seen_at', '<', sql<Date>`now() - make_interval(secs => ${settleSeconds})`)
    .executeTakeFirst()
  const floor = row?.floor === null || row?.floor === undefined ? undefined : Number(row.floor)
  if (floor === undefined) return
  await t(trx).updateTable('webhook_cursors').set({ floor_id: floor, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('floor_id', '<', floor).execute()
  await t(trx).deleteFrom('webhook_outbox_seen')
    .where('tenant_id', '=', tenantId).where('outbox_id', '<=', floor).execute()
}

// ---- the deliverer

/** Tenants with due deliveries (system transaction, no locks), the longest waiting first. */
export async function tenantsWithDueDeliveries (trx: Tx, limit: number): Promise<string[]> {
  const rows = await t(trx).selectFrom('webhook_deliveries').select('tenant_id')
    .where('status', '=', 'pending').where('next_attempt_at', '<=', sql<Date>`now()`)
    .groupBy('tenant_id').orderBy(sql`min(next_attempt_at)`).limit(limit)
    .execute()
  return rows.map(r => r.tenant_id)
}

/**
 * Claims up to `limit` due deliveries of a tenant whose subscription is enabled (skip locked): counts
 * the attempt and leases it until `leaseSeconds` from now (a worker that dies leaves it due again then).
 */
export async function claimDue (trx: Tx, tenantId: string, limit: number, leaseSeconds: number) {
  const due = await t(trx).selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_subscriptions as s', join =>
      join.onRef('s.tenant_id', '=', 'd.tenant_id').onRef('s.id', '=', 'd.subscription_id'))
    .select('d.id')
    .where('d.tenant_id', '=', tenantId)
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', sql<Date>`now()`)
    .where('s.enabled', '=', true)
    .orderBy('d.next_attempt_at')
    .limit(limit)
    .forUpdate('d')
    .skipLocked()
    .execute()
  if (due.length === 0) return []
  const claimed = await t(trx).updateTable('webhook_deliveries')
    .set({
      attempts: sql`attempts + 1`,
      next_attempt_at: sql`now() + make_interval(secs => ${leaseSeconds})`,
      last_attempt_at: sql`now()`
    })
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${due.map(d => d.id)}::uuid[])`)
    .returning(['id', 'subscription_id', 'msg_id', 'event_type', 'body', 'attempts'])
    .execute()
  const subs = await t(trx).selectFrom('webhook_subscriptions')
    .select(['id', 'url', 'secret', 'previous_secret', 'previous_secret_expires_at'])
    .select(sql<boolean>`previous_secret_expires_at > now()`.as('previous_valid'))
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`id = any(${[...new Set(claimed.map(c => c.subscription_id))]}::uuid[])`)
    .execute()
  const byId = new Map(subs.map(s => [s.id, s]))
  return claimed.map(c => ({ ...c, subscription: byId.get(c.subscription_id) as typeof subs[number] }))
}

export interface AttemptResult {
  ok: boolean
  /** the attempt's number in its run (the delivery's `attempts` when it was claimed) */
  attempt: number
  startedAt: Date
  statusCode: number | null
  durationMs: number
  error: string | null
  /** why no answer was taken (null: the receiver answered) */
  errorKind: AttemptErrorKind | null
  /** the start of the answer's body, when it was text */
  excerpt: string | null
  /** when to try again; undefined: no further attempt (succeeded, or attempts used up) */
  retryInSeconds: number | undefined
}

/**
 * Records the outcome of an attempt on the delivery, in its history of attempts, and on its subscription's run of
 * failures and last success. A delivery deleted meanwhile (with its subscription) records nothing.
 */
export async function recordAttempt (
  trx: Tx,
  tenantId: string,
  delivery: { id: string, subscription_id: string },
  r: AttemptResult
): Promise<SubscriptionRow | undefined> {
  const error = r.error === null ? null : r.error.slice(0, 1000)
  const recorded = await t(trx).updateTable('webhook_deliveries')
    .set({
      status: r.ok ? 'succeeded' : r.retryInSeconds === undefined ? 'failed' : 'pending',
      next_attempt_at: r.retryInSeconds === undefined
        ? null
        : sql`now() + make_interval(secs => ${r.retryInSeconds})`,
      last_status_code: r.statusCode,
      last_duration_ms: r.durationMs,
      last_error: error,
      ...(r.ok ? { delivered_at: sql`now()` } : {})
    })
    .where('tenant_id', '=', tenantId).where('id', '=', delivery.id)
    .returning('id')
    .executeTakeFirst()
  if (recorded === undefined) return undefined
  await t(trx).insertInto('webhook_delivery_attempts')
    .values({
      tenant_id: tenantId,
      delivery_id: delivery.id,
      attempt: r.attempt,
      started_at: r.startedAt,
      duration_ms: r.durationMs,
      status_code: r.statusCode,
      error_kind: r.errorKind,
      error,
      response_excerpt: r.excerpt,
      succeeded: r.ok
    })
    .execute()
  return await t(trx).updateTable('webhook_subscriptions')
    .set(r.ok
      ? { consecutive_failures: 0, failing_since: null, last_success_at: sql`now()` }
      // the service's clock, as a parameter: Citus refuses now() inside a COALESCE of a write (docs/architecture.md)
      : {
          consecutive_failures: sql`consecutive_failures + 1`,
          failing_since: sql`coalesce(failing_since, ${new Date()})`
        })
    .where('tenant_id', '=', tenantId).where('id', '=', delivery.subscription_id)
    .returningAll()
    .executeTakeFirst()
}

/** Whether a subscription's run of failures has lasted `minSeconds` (by the service's clock, which set it). */
export async function failingFor (trx: Tx, tenantId: string, id: string, minSeconds: number): Promise<boolean> {
  const since = new Date(Date.now() - minSeconds * 1000)
  const row = await t(trx).selectFrom('webhook_subscriptions')
    .select(sql<boolean>`failing_since <= ${since}`.as('long'))
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .executeTakeFirst()
  return row?.long === true
}

export async function disableSubscription (trx: Tx, tenantId: string, id: string, reason: string): Promise<void> {
  await t(trx).updateTable('webhook_subscriptions')
    .set({ enabled: false, disabled_reason: reason, disabled_at: sql`now()`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .execute()
}

export type { DeliveryRow }

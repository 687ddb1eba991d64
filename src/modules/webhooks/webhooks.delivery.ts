/**
 * The webhook workers (docs/integrations.md, "Outbound webhooks"). The dispatcher fans the outbox out:
 * every domain event of a tenant becomes one delivery row per enabled subscription that takes its
 * topic (its own record of what it has seen: the outbox's processed_at belongs to the automation
 * dispatcher). The deliverer claims due deliveries, signs them per the Standard Webhooks
 * specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`) and POSTs them through the
 * platform's outbound client (src/platform/http/outbound.ts: SSRF checks, no redirects, timeout, capped response), then
 * records the outcome: succeeded, due again after a back-off, or failed once the attempts are used up, and keeps the
 * attempt in the delivery's history (time, latency, status or error kind, the start of a text answer). Each attempt is
 * counted by outcome (`webhook_deliveries_total`) and timed. A subscription whose deliveries keep failing is
 * disabled and its creator notified.
 */
import crypto from 'node:crypto'
import type { Kysely } from 'kysely'
import { Webhook } from 'standardwebhooks'
import type { Database } from '../../platform/db/database.ts'
import { withSystem, type Tx } from '../../platform/db/tenant.ts'
import { queueNotification, recipientFor } from '../../platform/notifications/notifications.ts'
import { shareAmongTenants, TenantWorkError } from '../../platform/tenant-batches.ts'
import {
  allowListOf, postWebhook, WebhookError, WEBHOOK_TIMEOUT_MS, type AllowList
} from '../../platform/http/outbound.ts'
import { subscriptionAttemptSeconds, subscriptionDeliveries } from '../../platform/metrics.ts'
import { subjectOf } from '../automation/index.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { actorRefused, asTheyAreNow, mayLearnOf } from '../disclosure/index.ts'
import * as repo from './webhooks.repository.ts'
import { errorKindOf, EXCERPT_BYTES, excerptOf } from './webhooks.attempts.ts'

/** Seconds to wait after the 1st, 2nd… failed attempt: about 17 hours in all. */
export const RETRY_SCHEDULE_SECONDS = [30, 120, 600, 3600, 4 * 3600, 12 * 3600] as const
/** Attempts of one delivery before it is failed for good. */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_SECONDS.length + 1
/** A subscription is disabled after this many consecutive failed attempts… */
export const DISABLE_AFTER_FAILURES = 10
/** …spanning at least this long without a success. */
export const DISABLE_AFTER_SECONDS = 24 * 3600
/** How long a claimed attempt holds its delivery (beyond the 10 s timeout); then it is due again. */
const LEASE_SECONDS = 120
/** An outbox row is taken as settled (no lower id still to appear) this long after the dispatcher saw a higher one. */
const SETTLE_SECONDS = 3600
/** Outbox rows one dispatch round fans out, and deliveries one round attempts (shared among tenants). */
const DISPATCH_BATCH = 200
const DELIVER_BATCH = 50
/** How long the secret before a rotation still signs. */
export const ROTATION_OVERLAP_SECONDS = 24 * 3600
export const PING_TYPE = 'webhook.ping'

export interface WebhookEngine {
  readonly db: Kysely<Database>
  readonly allow: AllowList
  readonly timeoutMs?: number
}

declare module '../../platform/app-context.ts' {
  interface Engines {
    /** the deliveries of webhook subscriptions (`ctx.engines.webhooks`) */
    webhooks: WebhookEngine
  }
}

/** The engine of an app: the request login for its tenants' rows, and the outbound allow list. */
export function createWebhookEngine (db: Kysely<Database>, allowEntries: readonly string[]): WebhookEngine {
  return { db, allow: allowListOf(allowEntries) }
}

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret (): string {
  return `whsec_${crypto.randomBytes(32).toString('base64')}`
}

/** A webhook-id: the same on every attempt of a delivery. */
export function newMessageId (): string {
  return `msg_${crypto.randomUUID().replaceAll('-', '')}`
}

/** Whether a subscription's event types take a topic. */
export function takes (eventTypes: readonly string[], topic: string): boolean {
  return eventTypes.includes('*') || eventTypes.includes(topic)
}

export interface DispatchResult { events: number, deliveries: number }

/**
 * Fans up to `limit` unseen outbox rows (shared among the tenants with enabled subscriptions) out
 * into deliveries. Each tenant in a system transaction of its own, holding its cursor row.
 */
export async function dispatchWebhooks (engine: WebhookEngine, limit = DISPATCH_BATCH): Promise<DispatchResult> {
  const result: DispatchResult = { events: 0, deliveries: 0 }
  const tenants = await withSystem(engine.db, async trx => await repo.tenantsWithSubscriptions(trx, limit))
  const failures = await shareAmongTenants(tenants, limit, async (tenantId, n) => {
    const done = await withSystem(engine.db, async trx => await dispatchTenant(trx, tenantId, n))
    result.events += done.events
    result.deliveries += done.deliveries
    return done.events
  })
  if (failures.length > 0) throw new TenantWorkError(failures, result, 'webhook dispatch')
  return result
}

/**
 * The subscriptions whose creator still acts: one removed or deactivated by the identity provider, or a service
 * account disabled or deleted (a subscription made with a key), is told nothing (disclosure's `actorRefused`, the
 * check feeds and automation rules share).
 */
async function acting<S extends { created_by: string }> (trx: Tx, tenantId: string, subs: S[]): Promise<S[]> {
  const out: S[] = []
  for (const sub of subs) {
    if ((await actorRefused(trx, tenantId, sub.created_by)) === undefined) out.push(sub)
  }
  return out
}

async function dispatchTenant (trx: Tx, tenantId: string, limit: number): Promise<DispatchResult> {
  const floor = await repo.lockCursor(trx, tenantId, SETTLE_SECONDS)
  const rows = await repo.unseenOutboxRows(trx, tenantId, floor, limit)
  const result: DispatchResult = { events: rows.length, deliveries: 0 }
  if (rows.length > 0) {
    const subs = await acting(trx, tenantId, await repo.enabledSubscriptions(trx, tenantId))
    const told = new Map<string, boolean>()
    const readers = new Map<string, AuthContext>()
    for (const row of rows) {
      const createdAt = new Date(row.created_at)
      for (const sub of subs) {
        // a subscription takes the events from its creation on
        if (!takes(sub.event_types, row.topic) || new Date(sub.created_at) > createdAt) continue
        // and only what its creator may be told of, as they are now (the outbound rule, disclosure/disclosure.ts)
        const reader = await asTheyAreNow(trx, subjectOf({
          tenant_id: tenantId,
          creator_id: sub.created_by,
          creator_roles: sub.created_by_roles,
          org_id: sub.created_by_org
        }, null), readers)
        if (!(await mayLearnOf(trx, reader, row.topic, row.payload as Record<string, unknown>, told))) continue
        const created = await repo.insertDelivery(trx, {
          tenantId,
          subscriptionId: sub.id,
          outboxId: Number(row.id),
          msgId: newMessageId(),
          eventType: row.topic,
          body: { type: row.topic, timestamp: createdAt.toISOString(), data: row.payload }
        })
        if (created !== undefined) result.deliveries++
      }
    }
    await repo.markSeen(trx, tenantId, rows.map(r => Number(r.id)))
  }
  await repo.advanceFloor(trx, tenantId, SETTLE_SECONDS)
  return result
}

/** The Standard Webhooks headers of one attempt: every secret that still signs gives one `v1,` entry. */
export function signedHeaders (
  msgId: string,
  at: Date,
  body: string,
  secrets: readonly string[]
): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map(s => new Webhook(s).sign(msgId, at, body)).join(' ')
  }
}

export interface DeliverResult { attempted: number, succeeded: number, failed: number, disabled: number }

/** Attempts up to `limit` due deliveries (shared among tenants), all of a tenant's at once. */
export async function deliverDue (engine: WebhookEngine, limit = DELIVER_BATCH): Promise<DeliverResult> {
  const result: DeliverResult = { attempted: 0, succeeded: 0, failed: 0, disabled: 0 }
  const tenants = await withSystem(engine.db, async trx => await repo.tenantsWithDueDeliveries(trx, limit))
  const failures = await shareAmongTenants(tenants, limit, async (tenantId, n) => {
    const claimed = await withSystem(engine.db, async trx => await repo.claimDue(trx, tenantId, n, LEASE_SECONDS))
    await Promise.all(claimed.map(async c => { await attempt(engine, tenantId, c, result) }))
    return claimed.length
  })
  if (failures.length > 0) throw new TenantWorkError(failures, result, 'webhook delivery')
  return result
}

type Claimed = Awaited<ReturnType<typeof repo.claimDue>>[number]

async function attempt (engine: WebhookEngine, tenantId: string, c: Claimed, result: DeliverResult): Promise<void> {
  result.attempted++
  const body = JSON.stringify(c.body)
  const secrets = [c.subscription.secret]
  if (c.subscription.previous_valid && c.subscription.previous_secret !== null) {
    secrets.push(c.subscription.previous_secret)
  }
  // every secret the row holds, the expired one too: none is kept in an excerpt of the answer
  const redacted = [c.subscription.secret, c.subscription.previous_secret].filter(s => s !== null)
  const startedAt = new Date()
  const started = performance.now()
  let outcome: repo.AttemptResult
  let refused = false
  try {
    const answer = await postWebhook(
      c.subscription.url,
      body,
      { ...signedHeaders(c.msg_id, startedAt, body, secrets), 'user-agent': 'collaboration-service-webhooks' },
      engine.allow,
      engine.timeoutMs ?? WEBHOOK_TIMEOUT_MS,
      // counted below, by this module's outcomes; not as calls of the automation action
      { count: outcome => { refused = outcome === 'refused' }, keepBytes: EXCERPT_BYTES }
    )
    outcome = {
      ok: true,
      attempt: c.attempts,
      startedAt,
      statusCode: answer.status,
      durationMs: elapsed(started),
      error: null,
      errorKind: null,
      excerpt: excerptOf(answer.excerpt, answer.contentType, redacted),
      retryInSeconds: undefined
    }
  } catch (err) {
    const retry = c.attempts < MAX_ATTEMPTS ? RETRY_SCHEDULE_SECONDS[c.attempts - 1] : undefined
    const answered = err instanceof WebhookError ? err : undefined
    outcome = {
      ok: false,
      attempt: c.attempts,
      startedAt,
      statusCode: answered?.status ?? null,
      durationMs: elapsed(started),
      error: err instanceof Error ? err.message : String(err),
      errorKind: errorKindOf(err),
      excerpt: excerptOf(answered?.excerpt, answered?.contentType, redacted),
      retryInSeconds: retry
    }
  }
  countAttempt(outcome, refused)
  if (outcome.ok) result.succeeded++
  else result.failed++
  await withSystem(engine.db, async trx => {
    const sub = await repo.recordAttempt(trx, tenantId, c, outcome)
    if (outcome.ok || sub === undefined || !sub.enabled || sub.consecutive_failures < DISABLE_AFTER_FAILURES) return
    if (!(await repo.failingFor(trx, tenantId, sub.id, DISABLE_AFTER_SECONDS))) return
    const reason = `${sub.consecutive_failures} consecutive failed deliveries over more than a day; ` +
      `last: ${outcome.error ?? 'failed'}`
    await repo.disableSubscription(trx, tenantId, sub.id, reason.slice(0, 1000))
    await notifyDisabled(trx, tenantId, sub, reason)
    result.disabled++
  })
}

const elapsed = (started: number): number => Math.round(performance.now() - started)

function countAttempt (outcome: repo.AttemptResult, refused: boolean): void {
  subscriptionAttemptSeconds.observe(outcome.durationMs / 1000)
  subscriptionDeliveries.inc({
    outcome: outcome.ok ? 'delivered' : refused ? 'refused' : outcome.retryInSeconds === undefined ? 'failed' : 'retry'
  })
}

async function notifyDisabled (
  trx: Tx,
  tenantId: string,
  sub: { id: string, url: string, created_by: string, created_by_email: string | null },
  reason: string
): Promise<void> {
  const to = await recipientFor(trx, tenantId, 'email', sub.created_by, {
    userId: sub.created_by,
    email: sub.created_by_email
  })
  await queueNotification(trx, {
    tenantId,
    channel: 'email',
    ...to,
    subject: 'A webhook subscription was disabled',
    body: `The webhook subscription ${sub.id} to ${new URL(sub.url).origin} was disabled: ${reason}. ` +
      'Fix the receiver, then enable it again (PATCH /api/v1/webhooks/{id} with enabled: true).',
    priority: 'high',
    payload: { kind: 'webhook.disabled', subscription_id: sub.id }
  })
}

/**
 * The background loop when workers run: dispatch, then deliver; the next round at once while a round found a full
 * batch (a backlog: one round every `intervalMs` capped a process at 50 deliveries per round), else after
 * `intervalMs`. A failed round is logged and the next one tries again. Answers a stop function.
 */
export function startWebhookWorker (
  engine: WebhookEngine,
  log: { error: (obj: unknown, msg: string) => void },
  intervalMs = 2000
): () => Promise<void> {
  let stopped = false
  let running: Promise<void> = Promise.resolve()
  let timer: NodeJS.Timeout | undefined
  /** whether the round found full batches: more is waiting */
  const round = async (): Promise<boolean> => {
    let more = false
    try {
      more = (await dispatchWebhooks(engine, DISPATCH_BATCH)).events >= DISPATCH_BATCH
    } catch (err) {
      log.error({ err }, 'webhook dispatch failed')
    }
    try {
      more = (await deliverDue(engine, DELIVER_BATCH)).attempted >= DELIVER_BATCH || more
    } catch (err) {
      log.error({ err }, 'webhook delivery failed')
    }
    return more
  }
  const schedule = (delayMs: number): void => {
    if (stopped) return
    timer = setTimeout(() => {
      running = round().then(more => { schedule(more ? 0 : intervalMs) }, () => { schedule(intervalMs) })
    }, delayMs)
  }
  schedule(intervalMs)
  return async () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
    await running
  }
}

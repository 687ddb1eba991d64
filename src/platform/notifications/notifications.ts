/**
 * Notifications to people (invitations, publish notices, automation messages). A request only
 * ever inserts a row into `notification_outbox` (`queueNotification`, in the request's
 * transaction, so a rolled-back change notifies nobody); a delivery loop picks pending rows, one
 * tenant at a time, with `for update skip locked`, hands them to a `NotificationSender` and marks
 * them sent, or retries them with backoff until MAX_ATTEMPTS and then marks them failed. An e-mail
 * without an address to send to is `undeliverable` (never retried; the reason in `last_error`).
 * Texts and links: `templates.ts`. Decisions: docs/notifications.md.
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../db/database.ts'
import { withSystem, type Tx } from '../db/tenant.ts'
import { shareAmongTenants, TenantWorkError } from '../tenant-batches.ts'
import { calendarProblem, type NotificationCalendar, type NotificationLink, type Template } from './templates.ts'

export const NOTIFICATION_CHANNELS = ['email', 'push', 'sms'] as const
export type NotificationChannel = typeof NOTIFICATION_CHANNELS[number]

/**
 * Row statuses: waiting (or waiting for a retry), delivered, given up after retries or refused for good, no address.
 */
export const NOTIFICATION_STATUSES = ['pending', 'sent', 'failed', 'undeliverable'] as const
export type NotificationStatus = typeof NOTIFICATION_STATUSES[number]

/** One notification handed to a sender. */
export interface Notification {
  id: number
  tenantId: string
  channel: string
  recipient: string
  subject: string
  body: string
  priority: string
  /** what the notification is about (`kind`, ids), its `link`, `unsubscribe` link and `calendar` (templates.ts) */
  payload: Record<string, unknown>
  attempts: number
}

/** Delivers one notification; a thrown error marks the attempt failed (retried with backoff). */
export interface NotificationSender {
  readonly name: string
  send (notification: Notification): Promise<void>
  close? (): Promise<void>
}

export interface QueuedNotification {
  tenantId: string
  channel: string
  recipient: string
  subject: string
  body: string
  priority?: 'normal' | 'high' | undefined
  payload?: Record<string, unknown>
  /** a link into the web app (kept in `payload.link`, joined to APP_URL when sent) */
  link?: NotificationLink | undefined
  /** an iCalendar invitation (kept in `payload.calendar`; over CALENDAR_MAX_BYTES it is refused) */
  calendar?: NotificationCalendar | undefined
  /** where the recipient stops these mails (kept in `payload.unsubscribe`, joined to APP_URL when sent) */
  unsubscribe?: NotificationLink | undefined
  /** why the row can never be delivered: it is stored `undeliverable` with this reason, never sent */
  undeliverable?: string | undefined
}

/** Whether a recipient can be handed to a mail server as an address. */
export function isEmailAddress (recipient: string): boolean {
  return /^[^\s@<>",;:()[\]\\]+@[^\s@<>",;:()[\]\\]+$/.test(recipient) && recipient.length <= 320
}

/**
 * Queues a notification in the caller's transaction. An e-mail whose recipient is not an address
 * (or one the caller found no address for: `undeliverable`) is stored `undeliverable` with the
 * reason in `last_error`: an administrator sees it (`GET /api/v1/notifications`), nothing retries it.
 * A calendar (`n.calendar`, or one the payload brings) that `calendarOf` would not read back, e.g. one over
 * CALENDAR_MAX_BYTES, throws: the caller's transaction queues nothing unbounded or unsendable.
 *
 * @example
 *   await queueNotification(trx, { tenantId, channel: 'email', recipient: 'ann@example.com', subject: 'Invitation',
 * body: '…' })
 */
export async function queueNotification (trx: Tx, n: QueuedNotification): Promise<number> {
  const reason =
    n.undeliverable ??
    (n.channel === 'email' && !isEmailAddress(n.recipient)
      ? `the recipient "${n.recipient.slice(0, 200)}" is not an e-mail address`
      : undefined)
  const payload = {
    ...n.payload,
    ...(n.link !== undefined ? { link: n.link } : {}),
    ...(n.unsubscribe !== undefined ? { unsubscribe: n.unsubscribe } : {}),
    ...(n.calendar !== undefined ? { calendar: { method: n.calendar.method, ics: n.calendar.ics } } : {})
  }
  if (payload.calendar !== undefined) {
    const problem = calendarProblem(payload.calendar)
    if (problem !== undefined) throw new Error(`notification not queued: ${problem}`)
  }
  const row = await trx.insertInto('notification_outbox').values({
    tenant_id: n.tenantId,
    channel: n.channel,
    recipient: n.recipient,
    subject: n.subject,
    body: n.body,
    priority: n.priority ?? 'normal',
    payload: sql`${JSON.stringify(payload)}::jsonb`,
    ...(reason !== undefined ? { status: 'undeliverable', last_error: reason.slice(0, 1000) } : {})
  }).returning('id').executeTakeFirstOrThrow()
  return row.id
}

/** Who acted: the caller of a request (its token's e-mail claim), or the creator a rule runs as. */
export interface Actor { readonly userId: string, readonly email: string | null }

export interface ResolvedRecipient {
  recipient: string
  /** set when no address is known: the row is stored undeliverable with this reason */
  undeliverable?: string
}

/**
 * The recipient of a notification to a user of the tenant on a channel. E-mail: the address of
 * the stored profile (`users`, kept by the identity-provider webhook), else the e-mail claim of the
 * acting caller's token when the user is that caller; none of both (or a removed user) gives
 * `user:<id>` with the reason it is undeliverable. Other channels address the user id.
 */
export async function recipientFor (
  trx: Tx,
  tenantId: string,
  channel: string,
  userId: string,
  actor?: Actor
): Promise<ResolvedRecipient> {
  if (channel !== 'email') return { recipient: userId }
  const user = await trx
    .selectFrom('users')
    .select(['email', 'state'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst()
  if (user?.state === 'removed') {
    return { recipient: `user:${userId}`, undeliverable: `user ${userId} was removed by the identity provider` }
  }
  const stored = user?.email?.trim()
  if (stored !== undefined && stored !== '' && isEmailAddress(stored)) return { recipient: stored }
  const claimed = actor?.userId === userId ? actor.email?.trim() : undefined
  if (claimed !== undefined && claimed !== '' && isEmailAddress(claimed)) return { recipient: claimed }
  return {
    recipient: `user:${userId}`,
    undeliverable:
      `no e-mail address known for user ${userId}: no profile with an e-mail from the identity ` +
      `provider${actor?.userId === userId ? ', and the token had no e-mail claim' : ''}`
  }
}

/**
 * Queues a template to a user of the tenant on each channel, the recipient resolved per channel
 * (`recipientFor`).
 *
 * @example
 *   await notifyUser(trx, { tenantId, userId: row.creator_id, actor: auth, channels: ['email'], template:
 * spacePublished({ … }) })
 */
export async function notifyUser (trx: Tx, n: {
  tenantId: string
  userId: string
  actor?: Actor
  channels: readonly string[]
  template: Template
  priority?: 'normal' | 'high' | undefined
  payload?: Record<string, unknown>
}): Promise<void> {
  for (const channel of n.channels) {
    const to = await recipientFor(trx, n.tenantId, channel, n.userId, n.actor)
    await queueNotification(trx, {
      tenantId: n.tenantId,
      channel,
      recipient: to.recipient,
      subject: n.template.subject,
      body: n.template.body,
      link: n.template.link,
      calendar: n.template.calendar,
      unsubscribe: n.template.unsubscribe,
      priority: n.priority,
      payload: { ...n.template.payload, ...n.payload },
      undeliverable: to.undeliverable
    })
  }
}

/** What a publish request may ask of notifications (`PublishBody` of events, series and spaces). */
export interface PublishNotice {
  notify?: boolean | undefined
  channels?: readonly string[] | null | undefined
  priority?: 'normal' | 'high' | undefined
}

/**
 * After a publish that asked for it (`notify: true`): queues `template` to the resource's creator on the channels
 * the request named (e-mail when it named none), at the priority it asked.
 */
export async function notifyOnPublish (trx: Tx, n: {
  tenantId: string
  actor: Actor
  creatorId: string
  request: PublishNotice
  template: Template
  payload?: Record<string, unknown>
}): Promise<void> {
  if (n.request.notify !== true) return
  await notifyUser(trx, {
    tenantId: n.tenantId,
    userId: n.creatorId,
    actor: n.actor,
    channels: n.request.channels ?? ['email'],
    template: n.template,
    priority: n.request.priority ?? 'normal',
    ...(n.payload !== undefined ? { payload: n.payload } : {})
  })
}

/** Attempts before a row is marked `failed` for good. */
export const MAX_ATTEMPTS = 5
/** Wait before retry n (n = attempts so far): 30 s, 2 min, 8 min, 32 min. */
export const backoffSeconds = (attempts: number): number => 30 * 4 ** Math.max(0, attempts - 1)

export interface DeliveryResult { sent: number, retried: number, failed: number, undeliverable: number }

/** Where failed deliveries are reported (pino's logger has this shape). */
export interface DeliveryLog { warn (obj: object, msg: string): void }

interface SendError { message: string, code?: string, responseCode?: number }

function sendError (err: unknown): SendError {
  const e = err as { message?: unknown, code?: unknown, responseCode?: unknown } | null
  return {
    message: (err instanceof Error ? err.message : typeof e?.message === 'string' ? e.message : String(err)).slice(
      0,
      1000
    ),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(typeof e?.responseCode === 'number' ? { responseCode: e.responseCode } : {})
  }
}

/**
 * What a failed attempt makes of the row: no usable recipient (nodemailer's EENVELOPE: no or a
 * malformed address, or every recipient refused by the mail server with a 5xx reply) is
 * undeliverable; another permanent refusal (a 5xx reply, e.g. to the message) fails at once;
 * anything else (network, 4xx) is retried with backoff until MAX_ATTEMPTS.
 */
function outcomeOf (e: SendError, attempts: number): 'undeliverable' | 'failed' | 'retry' {
  if (e.code === 'EENVELOPE' && (e.responseCode === undefined || e.responseCode >= 500)) return 'undeliverable'
  if (e.responseCode !== undefined && e.responseCode >= 500 && e.responseCode < 600) return 'failed'
  return attempts >= MAX_ATTEMPTS ? 'failed' : 'retry'
}

/** A pending row whose due time has come (a retry waits for `payload.next_attempt_at`). */
const due = sql<boolean>`coalesce((payload->>'next_attempt_at')::timestamptz, '-infinity') <= now()`

/**
 * Delivers up to `batchSize` due pending notifications, in id order per tenant. It claims per
 * tenant so that the lock is routed to one shard on Citus: first it finds, without locks, the
 * tenants with due rows (oldest row first, at most `batchSize`), then claims each tenant's rows
 * with `tenant_id = $1 … for update skip locked` (so several processes may deliver at once without
 * sending a row twice) in a transaction of that tenant's own, the rows locked while they are sent.
 * The batch is shared among the tenants (`shareAmongTenants`); a tenant whose transaction fails
 * holds up no other, and is reported after the others with a `TenantWorkError` (its `result`: what
 * the others did). A row whose attempt failed waits `backoffSeconds(attempts)`: the due time is
 * kept in `payload.next_attempt_at` (the 0001 table has no column for it) and is not passed to the
 * sender. An e-mail row whose recipient is no address (queued before addresses were resolved) is
 * marked undeliverable, never sent. Every failed attempt is logged (`log`) with its error, never
 * with the message's content.
 */
export async function deliverPendingNotifications (
  db: Kysely<Database>,
  sender: NotificationSender,
  options: { batchSize?: number; log?: DeliveryLog } = {}
): Promise<DeliveryResult> {
  const batchSize = options.batchSize ?? 50
  const result: DeliveryResult = { sent: 0, retried: 0, failed: 0, undeliverable: 0 }
  const tenants = await withSystem(
    db,
    async trx =>
      await trx
        .selectFrom('notification_outbox')
        .select('tenant_id')
        .where('status', '=', 'pending')
        .where(due)
        .groupBy('tenant_id')
        .orderBy(sql`min(id)`)
        .limit(batchSize)
        .execute()
  )
  const failures = await shareAmongTenants(
    tenants.map(r => r.tenant_id),
    batchSize,
    async (tenantId, limit) => {
      const done = await withSystem(db, async trx => await deliverTenant(trx, tenantId, limit, sender, options.log))
      result.sent += done.sent
      result.retried += done.retried
      result.failed += done.failed
      result.undeliverable += done.undeliverable
      return done.sent + done.retried + done.failed + done.undeliverable
    }
  )
  if (failures.length > 0) throw new TenantWorkError(failures, result, 'notification delivery')
  return result
}

/** Claims up to `limit` due pending notifications of one tenant (skip locked) and delivers them. */
async function deliverTenant (
  trx: Tx,
  tenantId: string,
  limit: number,
  sender: NotificationSender,
  log: DeliveryLog | undefined
): Promise<DeliveryResult> {
  const result: DeliveryResult = { sent: 0, retried: 0, failed: 0, undeliverable: 0 }
  const rows = await trx
    .selectFrom('notification_outbox')
    .select(['id', 'tenant_id', 'channel', 'recipient', 'subject', 'body', 'priority', 'payload', 'attempts'])
    .where('tenant_id', '=', tenantId)
    .where('status', '=', 'pending')
    .where(due)
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute()
  for (const row of rows) {
    const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as Record<string, unknown>
    const { next_attempt_at: _next, ...content } = payload
    const where = { tenant: row.tenant_id, id: row.id }
    const about = {
      notification_id: row.id,
      tenant_id: row.tenant_id,
      channel: row.channel,
      kind: typeof payload.kind === 'string' ? payload.kind : undefined
    }
    if (row.channel === 'email' && !isEmailAddress(row.recipient)) {
      const reason = `the recipient "${row.recipient.slice(0, 200)}" is not an e-mail address`
      await trx
        .updateTable('notification_outbox')
        .set({ status: 'undeliverable', last_error: reason })
        .where('tenant_id', '=', where.tenant)
        .where('id', '=', where.id)
        .execute()
      log?.warn({ ...about, status: 'undeliverable', reason }, 'notification undeliverable')
      result.undeliverable++
      continue
    }
    try {
      await sender.send({
        id: row.id,
        tenantId: row.tenant_id,
        channel: row.channel,
        recipient: row.recipient,
        subject: row.subject,
        body: row.body,
        priority: row.priority,
        payload: content,
        attempts: row.attempts
      })
      await trx
        .updateTable('notification_outbox')
        .set({ status: 'sent', sent_at: sql`now()`, attempts: row.attempts + 1, last_error: null })
        .where('tenant_id', '=', where.tenant)
        .where('id', '=', where.id)
        .execute()
      result.sent++
    } catch (err) {
      const attempts = row.attempts + 1
      const e = sendError(err)
      const outcome = outcomeOf(e, attempts)
      const status = outcome === 'retry' ? 'pending' : outcome
      await trx
        .updateTable('notification_outbox')
        .set({
          status,
          attempts,
          last_error: e.message,
          payload:
            outcome === 'retry'
              ? sql`${JSON.stringify(payload)}::jsonb || jsonb_build_object('next_attempt_at',
                now() + make_interval(secs => ${backoffSeconds(attempts)}))`
              : sql`${JSON.stringify(content)}::jsonb`
        })
        .where('tenant_id', '=', where.tenant)
        .where('id', '=', where.id)
        .execute()
      log?.warn(
        {
          ...about,
          sender: sender.name,
          attempts,
          status,
          ...(outcome === 'retry' ? { retry_in_seconds: backoffSeconds(attempts) } : {}),
          err: e
        },
        'notification delivery failed'
      )
      if (outcome === 'retry') result.retried++
      else if (outcome === 'failed') result.failed++
      else result.undeliverable++
    }
  }
  return result
}

/**
 * Retention: deletes the rows nobody needs any more, per kind, after the period RETENTION_* gives
 * (src/config.ts; decisions in docs/retention.md):
 *
 * - outbox: processed before now − RETENTION_OUTBOX; unprocessed rows never.
 * - notifications: sent, failed or undeliverable, created before now − RETENTION_NOTIFICATIONS; pending rows
 *   (retries included) never.
 * - idempotencyKeys: created before now − RETENTION_IDEMPOTENCY_KEYS and expired; a key inside its replay window never.
 * - idpDeliveries: received before now − RETENTION_IDP_DELIVERIES.
 * - executions: succeeded, failed or skipped, created before now − RETENTION_EXECUTIONS; never queued and running
 *   ones, the newest RETENTION_EXECUTIONS_KEEP_PER_RULE of each rule, nor a relative-time trigger's until the
 *   scheduler can no longer fire it.
 * - webhookDeliveries: succeeded or failed (given up), last attempted before now − RETENTION_WEBHOOK_DELIVERIES;
 *   pending deliveries (due, waiting for a retry, in flight) never.
 * - webhookAttempts: the history of a delivery's attempts (migration 0047), started before now −
 *   RETENTION_WEBHOOK_ATTEMPTS, whatever the delivery's status; the delivery keeps its last attempt's columns.
 * - feedTokens: revoked before now − RETENTION_FEED_TOKENS; live tokens never. A revoked token and an unknown one
 *   both answer 404, so pruning one changes nothing a calendar app sees.
 * - guestTokens: guests' links revoked or expired before now − RETENTION_GUEST_TOKENS; live links never (a dead link
 *   and an unknown one both answer 404).
 * - changes (the log of incremental sync, migration 0026): written before now − RETENTION_CHANGES (the sync window
 *   and a day, `syncWindowMs` of config.ts); a token older than the window answers 410.
 *
 * Every statement deletes at most `batchSize` rows of one tenant, each in its own short
 * transaction on the worker login (`withSystem`); rows are claimed with `for update skip locked`,
 * so several instances (or two passes of one) share the work, never wait for each other, and
 * delete each row once. It claims per tenant so that the lock is routed to one shard on Citus: a
 * pass first finds, without locks, the tenants that have rows to delete (TENANTS_PER_LOOKUP at a
 * time, in tenant order), then deletes each tenant's rows batch by batch. `pruneRetention` takes
 * its clock (`now`), so tests drive it; `startRetention` runs it in the background when `WORKERS`
 * is true.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { RetentionConfig } from '../config.ts'
import type { Database } from './db/database.ts'
import { withSystem, type Tx } from './db/tenant.ts'
import { recordAudit } from './audit.ts'
import { compactRowCounts } from './db/kept-counts.ts'

/**
 * How long after its moment a relative-time automation trigger (`event.starts_in`, `event.ends_in`) may still
 * fire: the automation scheduler fires it within this grace, and retention keeps its executions until it is over
 * (their unique trigger key is what keeps it from firing twice).
 */
export const RELATIVE_GRACE_MINUTES = 60

/**
 * A step of upkeep a module registers with the retention pass (src/workers.ts): it runs after each pass, in
 * batches, until done or `signal` aborts, and answers how many `unit`s it handled (logged when more than none).
 */
export interface UpkeepStep {
  /** what the log line says it did */
  readonly done: string
  readonly unit: string
  run (db: Kysely<Database>, signal: AbortSignal): Promise<number>
}

export const RETENTION_KINDS = [
  'outbox', 'notifications', 'idempotencyKeys', 'idpDeliveries', 'executions', 'webhookDeliveries', 'webhookAttempts',
  'feedTokens', 'guestTokens', 'changes'
] as const
export type RetentionKind = typeof RETENTION_KINDS[number]

export interface KindResult {
  /** rows deleted */
  deleted: number
  /** delete statements run */
  statements: number
  /** the most rows one statement deleted (at most the batch size) */
  largest: number
}

export interface PruneResult {
  kinds: Record<RetentionKind, KindResult>
  deleted: number
  /** false when a limit (maxStatements, the signal) stopped a kind with rows left to look at */
  complete: boolean
}

export interface PruneOptions {
  retention: RetentionConfig
  /** the clock: periods count back from it */
  now: Date
  /** delete statements per kind at most in this call; default: until nothing is left */
  maxStatements?: number
  /** stops between statements (the app closing) */
  signal?: AbortSignal
}

/** One batch: how many rows it deleted, and whether it looked at a full batch (more may follow). */
interface Batch { deleted: number, full: boolean }

/** Tenants one look-up answers at most; a pass walks the tenants in order (`tenant_id > the last`), each once. */
export const TENANTS_PER_LOOKUP = 500

type PrunedTable =
  | 'outbox' | 'notification_outbox' | 'idempotency_keys' | 'idp_deliveries' | 'webhook_deliveries' | 'feed_tokens'
  | 'guest_tokens' | 'changes' | 'webhook_delivery_attempts'

/** What may go of each kind but executions: its table and the rows that may go (old and done). */
const EXPIRED: Record<
  Exclude<RetentionKind, 'executions'>,
  { table: PrunedTable; where: (cutoff: Date, now: Date) => RawBuilder<unknown> }
> = {
  outbox: { table: 'outbox', where: cutoff => sql`processed_at < ${cutoff}` },
  notifications: { table: 'notification_outbox', where: cutoff => sql`status <> 'pending' and created_at < ${cutoff}` },
  // a key is replayed until expires_at: kept until then whatever the period
  idempotencyKeys: {
    table: 'idempotency_keys',
    where: (cutoff, now) => sql`expires_at < ${now} and created_at < ${cutoff}`
  },
  // a provider's late repeat of a delivery forgotten here changes nothing: users.idp_sequence makes it stale
  idpDeliveries: { table: 'idp_deliveries', where: cutoff => sql`received_at < ${cutoff}` },
  // finished deliveries (succeeded, or failed: retries used up), from their last attempt, which every finished one
  // had (a redelivery starts the period again); a pending one is due, waits for a retry or is in flight (its lease),
  // and a row the deliverer holds is skipped (skip locked). The dispatcher never adds a pruned delivery again: its
  // outbox row is marked seen, then below the tenant's floor.
  webhookDeliveries: {
    table: 'webhook_deliveries',
    where: cutoff => sql`status <> 'pending' and last_attempt_at < ${cutoff}`
  },
  // a delivery's history of attempts, by when each started (a pending delivery's old attempts too: its own columns
  // keep the last one's outcome); by the index webhook_delivery_attempts_started (migration 0047)
  webhookAttempts: { table: 'webhook_delivery_attempts', where: cutoff => sql`started_at < ${cutoff}` },
  // a revoked token answers 404 like an unknown one (feeds.routes.ts): its row only keeps its hash
  feedTokens: { table: 'feed_tokens', where: cutoff => sql`revoked_at < ${cutoff}` },
  // a guest's link revoked or expired answers 404 like an unknown one (docs/guests.md): its row only keeps its hash
  guestTokens: { table: 'guest_tokens', where: cutoff => sql`(revoked_at < ${cutoff} or expires_at < ${cutoff})` },
  // the log of changes of incremental sync: a token older than the window (RETENTION_CHANGES less a day) answers 410,
  // so nothing reads these
  changes: { table: 'changes', where: cutoff => sql`at < ${cutoff}` }
}

/** Finished executions older than the cutoff: the candidates of executionsBatch. */
const oldExecutions = (cutoff: Date): RawBuilder<unknown> =>
  sql`created_at < ${cutoff} and status in ('succeeded', 'failed', 'skipped')`

/**
 * Up to TENANTS_PER_LOOKUP tenants that have rows matching `where`, in tenant order from `from`
 * (inclusive) or after `after`, read without locks: the pass then claims each tenant's rows by itself.
 */
async function tenantsWith (
  db: Kysely<Database>,
  table: PrunedTable | 'automation_executions',
  where: RawBuilder<unknown>,
  from: string | undefined,
  after: string | undefined
): Promise<string[]> {
  const start =
    after !== undefined ? sql` and tenant_id > ${after}` : from !== undefined ? sql` and tenant_id >= ${from}` : sql``
  const { rows } = await withSystem(
    db,
    async trx =>
      await sql<{ tenant_id: string }>`
    select distinct tenant_id from ${sql.table(table)} where ${where}${start}
    order by tenant_id limit ${TENANTS_PER_LOOKUP}`.execute(trx)
  )
  return rows.map(r => r.tenant_id)
}

/**
 * Where the last call stopped (maxStatements, the signal), per database and kind, with the cutoff
 * and clock it ran with: a call with the same ones goes on from there, so that calls with a small
 * `maxStatements` get past tenants whose old rows are all kept (executions a rule keeps) instead
 * of spending their statements on them again each time.
 */
const resumePoints = new WeakMap<
  Kysely<Database>,
  Map<RetentionKind, { tenantId: string; cutoff: number; now: number }>
>()

/**
 * One batch of a kind whose every row matching its condition may go: one statement claims up to a
 * batch of the tenant's rows by ctid (skip locked) and deletes them; both name the tenant, so on
 * Citus the statement runs on that tenant's shard. The conditions match the indexes of migration
 * 0016 (or 0001, 0003).
 */
async function pruneBatch (
  db: Kysely<Database>,
  kind: Exclude<RetentionKind, 'executions'>,
  tenantId: string,
  cutoff: Date,
  now: Date,
  o: PruneOptions
): Promise<Batch> {
  const { table, where } = EXPIRED[kind]
  const deleted = await withSystem(db, async trx => {
    const r = await sql`
    delete from ${sql.table(table)} where tenant_id = ${tenantId} and ctid = any(array(
      select ctid from ${sql.table(table)} where tenant_id = ${tenantId} and ${where(cutoff, now)}
      limit ${o.retention.batchSize} for update skip locked))`.execute(trx)
    const n = Number(r.numAffectedRows ?? 0)
    await auditPruned(trx, tenantId, table, n, cutoff)
    return n
  })
  return { deleted, full: deleted >= o.retention.batchSize }
}

/** Retention's deletions in the tenant's audit log: one entry per batch, the table and the rows (docs/audit.md). */
async function auditPruned (trx: Tx, tenantId: string, table: string, rows: number, cutoff: Date): Promise<void> {
  if (rows === 0) return
  await recordAudit(trx, {
    tenantId,
    action: 'retention.deleted',
    resourceType: table,
    resourceId: null,
    fields: { rows, before_at: cutoff },
    actor: { kind: 'system', id: 'retention' }
  })
}

interface Cursor { at: string, id: string }

const START: Cursor = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' }

/**
 * One batch of a tenant's executions, walked in (created_at, id) order from `cursor`: of up to a
 * batch of finished executions older than the cutoff, deletes those that are neither among the
 * newest `executionsKeepPerRule` of their rule nor a relative-time trigger the scheduler could
 * still fire (its unique trigger key is what keeps it from firing twice:
 * `starts_in:<event>:<moment>:<offset>`, due until RELATIVE_GRACE_MINUTES after the moment). The
 * cursor moves past what was kept, so a pass never reads a kept row twice. Every reference to the
 * table names the tenant, so on Citus the statement runs on that tenant's shard.
 */
async function executionsBatch (
  db: Kysely<Database>,
  tenantId: string,
  cutoff: Date,
  now: Date,
  o: PruneOptions,
  cursor: Cursor
): Promise<Batch & { cursor: Cursor | undefined }> {
  const keep = o.retention.executionsKeepPerRule
  const relativeBefore = new Date(now.getTime() - RELATIVE_GRACE_MINUTES * 60_000)
  const { rows } = await withSystem(db, async trx => {
    const r = await sql<{ deleted: number; scanned: number; at: string | null; id: string | null }>`
    with candidates as (
      select ctid as tid, rule_id, id, created_at, trigger_key from automation_executions
      where tenant_id = ${tenantId} and ${oldExecutions(cutoff)}
        and (created_at, id) > (${cursor.at}::timestamptz, ${cursor.id}::uuid)
      order by created_at, id
      limit ${o.retention.batchSize}
      for update skip locked
    ), rules as (
      -- per rule of the batch: the creation time of its keep-th newest execution (null: it has fewer)
      select r.rule_id, ${
        keep > 0
          ? sql`(select k.created_at from automation_executions k where k.tenant_id = ${tenantId}
            and k.rule_id = r.rule_id
            order by k.created_at desc offset ${keep - 1} limit 1)`
          : sql`'infinity'::timestamptz`
      } as kept_from
      from (select distinct rule_id from candidates) r
    ), gone as (
      delete from automation_executions where tenant_id = ${tenantId} and ctid = any(array(
        select c.tid from candidates c join rules r on r.rule_id = c.rule_id
        where c.created_at < r.kept_from
          and case
            when c.trigger_key ~ '^(starts_in|ends_in):[0-9]+:.+:[0-9]+$'
              then substring(c.trigger_key from '^[a-z_]+:[0-9]+:(.+):[0-9]+$')::timestamptz <= ${relativeBefore}
            when c.trigger_key ~ '^(starts_in|ends_in):' then false
            else true
          end))
      returning 1
    ), last as (
      select created_at::text as at, id::text as id from candidates order by created_at desc, id desc limit 1
    )
    select (select count(*)::int from gone) as deleted, (select count(*)::int from candidates) as scanned,
      (select at from last) as at, (select id from last) as id`.execute(trx)
    await auditPruned(trx, tenantId, 'automation_executions', Number(r.rows[0]?.deleted ?? 0), cutoff)
    return r
  })
  const row = rows[0]
  const scanned = Number(row?.scanned ?? 0)
  return {
    deleted: Number(row?.deleted ?? 0),
    full: scanned >= o.retention.batchSize,
    cursor: row?.at !== null && row?.at !== undefined && row.id !== null ? { at: row.at, id: row.id } : undefined
  }
}

/**
 * Deletes, kind after kind, what retention allows at `now`: tenant after tenant (those with rows
 * to delete, found TENANTS_PER_LOOKUP at a time, in tenant order), a batch per statement, until a
 * batch of the tenant comes back short (or `maxStatements`, or the signal). A call stopped that
 * way answers `complete: false`; the next call with the same clock and periods goes on from the
 * tenant it stopped at (the tenants before it were looked at), any other starts from the first.
 *
 * @example
 *   const r = await pruneRetention(ctx.db, { retention: ctx.config.retention, now: new Date() })
 */
export async function pruneRetention (db: Kysely<Database>, options: PruneOptions): Promise<PruneResult> {
  const kinds = Object.fromEntries(RETENTION_KINDS.map(k => [k, { deleted: 0, statements: 0, largest: 0 }])) as Record<
    RetentionKind,
    KindResult
  >
  let complete = true
  const max = options.maxStatements ?? Number.POSITIVE_INFINITY
  for (const kind of RETENTION_KINDS) {
    const period = options.retention[kind]
    if (period === null) continue // off: kept forever
    const cutoff = new Date(options.now.getTime() - period)
    const r = kinds[kind]
    const where = kind === 'executions' ? oldExecutions(cutoff) : EXPIRED[kind].where(cutoff, options.now)
    const table = kind === 'executions' ? 'automation_executions' : EXPIRED[kind].table
    let resume = resumePoints.get(db)
    if (resume === undefined) resumePoints.set(db, resume = new Map())
    const last = resume.get(kind)
    const from =
      last !== undefined && last.cutoff === cutoff.getTime() && last.now === options.now.getTime()
        ? last.tenantId
        : undefined
    let after: string | undefined
    let stoppedAt: string | undefined
    for (;;) {
      const tenants = await tenantsWith(db, table, where, from, after)
      for (const tenantId of tenants) {
        let cursor: Cursor = START
        for (;;) {
          if (r.statements >= max || options.signal?.aborted === true) {
            stoppedAt = tenantId
            break
          }
          let batch: Batch
          if (kind === 'executions') {
            const b = await executionsBatch(db, tenantId, cutoff, options.now, options, cursor)
            cursor = b.cursor ?? cursor
            batch = b
          } else {
            batch = await pruneBatch(db, kind, tenantId, cutoff, options.now, options)
          }
          r.statements++
          r.deleted += batch.deleted
          r.largest = Math.max(r.largest, batch.deleted)
          if (!batch.full) break
        }
        if (stoppedAt !== undefined) break
        after = tenantId
      }
      if (stoppedAt !== undefined || tenants.length < TENANTS_PER_LOOKUP) break
    }
    if (stoppedAt !== undefined) {
      resume.set(kind, { tenantId: stoppedAt, cutoff: cutoff.getTime(), now: options.now.getTime() })
      complete = false
    } else {
      resume.delete(kind)
    }
  }
  return { kinds, deleted: RETENTION_KINDS.reduce((n, k) => n + kinds[k].deleted, 0), complete }
}

/** The first pass runs this long after the start, then one every INTERVAL_MS. */
export const FIRST_PASS_MS = 60_000
export const INTERVAL_MS = 10 * 60_000

export interface RetentionLoop {
  /** one pass now (also what the timer runs); resolves when it is over */
  tick (): Promise<PruneResult | undefined>
  stop (): Promise<void>
}

/**
 * Runs `pruneRetention` shortly after the start and then every INTERVAL_MS, each pass until
 * nothing is left, then the upkeep beside it: the platform's kept counts folded, then the modules' steps
 * (`upkeep`, registered by src/workers.ts: the event list's kept counts, the phone numbers of contacts written
 * before they were read); a pass still running when the next is due is not doubled. Stopped (between two
 * statements) when the app closes.
 */
export function startRetention (
  db: Kysely<Database>,
  retention: RetentionConfig,
  log: FastifyBaseLogger,
  now: () => Date = () => new Date(),
  upkeep: readonly UpkeepStep[] = []
): RetentionLoop {
  const abort = new AbortController()
  let running: Promise<PruneResult | undefined> | undefined
  const tick = async (): Promise<PruneResult | undefined> => {
    if (abort.signal.aborted) return undefined
    if (running !== undefined) return await running
    running = (async () => {
      try {
        const r = await pruneRetention(db, { retention, now: now(), signal: abort.signal })
        if (r.deleted > 0) {
          log.info(
            { deleted: Object.fromEntries(RETENTION_KINDS.map(k => [k, r.kinds[k].deleted])) },
            'retention: pruned old rows'
          )
        }
        const folded = await compactRowCounts(db, abort.signal)
        if (folded > 0) log.info({ tenants: folded }, 'retention: contact and execution counts folded')
        for (const step of upkeep) {
          const n = await step.run(db, abort.signal)
          if (n > 0) log.info({ [step.unit]: n }, step.done)
        }
        return r
      } catch (err) {
        log.error({ err }, 'retention pass failed')
        return undefined
      } finally {
        running = undefined
      }
    })()
    return await running
  }
  const first = setTimeout(() => {
    void tick()
  }, FIRST_PASS_MS)
  const timer = setInterval(() => {
    void tick()
  }, INTERVAL_MS)
  first.unref()
  timer.unref()
  return {
    tick,
    async stop () {
      abort.abort()
      clearTimeout(first)
      clearInterval(timer)
      await running
    }
  }
}

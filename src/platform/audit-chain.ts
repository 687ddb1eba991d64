/**
 * The tenant audit log's hash chain (docs/audit.md, "The chain"). Entries are written unsealed in the transactions
 * of their changes (audit.ts); the sealer then gives each tenant's committed entries, in the order it finds them,
 * the next positions of the tenant's chain: `seq`, the previous entry's hash (`prev_hash`) and its own
 * (`hash` = SHA-256 of the previous hash and the entry's canonical JSON, RFC 8785). Sealing after commit keeps the
 * change's transaction free of a lock on the tenant's chain; an entry committed late is sealed later, at a later
 * position. The head row (`audit_heads`) holds the last position and hash, and where retention cut the chain's start.
 *
 * Only the system login seals and prunes (the application role may not update or delete these rows, migrate.ts).
 * `verifyAudit` walks the chain: an entry changed, removed, inserted or moved, or a head that does not match its
 * chain's end, is found and named.
 */
import crypto from 'node:crypto'
import canonicalize from 'canonicalize'
import { sql, type Kysely, type Selectable } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { Database } from './db/database.ts'
import type { AuditLogTable } from './db/platform.table.ts'
import { withSystem, type Tx } from './db/tenant.ts'
import { invalidField } from './http/errors.ts'

export type AuditRow = Selectable<AuditLogTable>

/** Entries sealed per statement, and per transaction of the sealer. */
const SEAL_BATCH = 2_000
/** Entries a verification reads per statement. */
const VERIFY_PAGE = 5_000

/** What an entry's hash covers: every column but the chain's own hash. */
export function hashedContent (row: AuditRow): Record<string, unknown> {
  return {
    tenant_id: row.tenant_id,
    id: row.id,
    seq: row.seq,
    at: row.at.toISOString(),
    actor_type: row.actor_type,
    actor_id: row.actor_id,
    via: row.via,
    request_id: row.request_id,
    address: row.address,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    contact_id: row.contact_id,
    fields: row.fields
  }
}

/** An entry's hash: SHA-256 (hex) of the previous entry's hash, a newline and the entry's canonical JSON. */
export function entryHash (prevHash: string, row: AuditRow): string {
  return crypto.createHash('sha256').update(`${prevHash}\n${canonicalize(hashedContent(row)) ?? ''}`).digest('hex')
}

async function lockHead (trx: Tx, tenantId: string) {
  await trx.insertInto('audit_heads').values({ tenant_id: tenantId })
    .onConflict(oc => oc.column('tenant_id').doNothing()).execute()
  return await trx.selectFrom('audit_heads').selectAll().where('tenant_id', '=', tenantId).forUpdate()
    .executeTakeFirstOrThrow()
}

/**
 * Seals the tenant's committed unsealed entries, at most `SEAL_BATCH` a transaction, until none is left or
 * `maxBatches` transactions ran (a request's read seals what it can in bounded time: `SEAL_BEFORE_READ`; the
 * background sealer has no bound). Answers how many it sealed. Two sealers of one tenant take turns on its head row.
 */
export async function sealAudit (db: Kysely<Database>, tenantId: string, maxBatches = Infinity): Promise<number> {
  let total = 0
  for (let batch = 0; batch < maxBatches; batch++) {
    const sealed = await withSystem(db, async trx => {
      const head = await lockHead(trx, tenantId)
      const rows = await trx.selectFrom('audit_log').selectAll()
        .where('tenant_id', '=', tenantId).where('seq', 'is', null)
        .orderBy('id').limit(SEAL_BATCH).execute()
      if (rows.length === 0) return 0
      let seq = head.seq
      let prev = head.hash
      const values = rows.map(row => {
        seq += 1
        const hash = entryHash(prev, { ...row, seq })
        const value = sql`(${row.id}::bigint, ${seq}::bigint, ${prev}::text, ${hash}::text)`
        prev = hash
        return value
      })
      await sql`update audit_log as a set seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
        from (values ${sql.join(values)}) as v (id, seq, prev_hash, hash)
        where a.tenant_id = ${tenantId} and a.id = v.id and a.seq is null`.execute(trx)
      await trx.updateTable('audit_heads').set({ seq, hash: prev }).where('tenant_id', '=', tenantId).execute()
      return rows.length
    })
    total += sealed
    if (sealed < SEAL_BATCH) return total
  }
  return total
}

/**
 * The transactions a request's read of the log seals before it reads (10 000 entries): what a burst left beyond that
 * is sealed by the background sealer within seconds, and shows in the next read (docs/audit.md).
 */
export const SEAL_BEFORE_READ = 5

/** Seals every tenant's pending entries (the background sealer's pass). Answers how many it sealed. */
export async function sealPending (db: Kysely<Database>, signal?: AbortSignal): Promise<number> {
  const tenants = await withSystem(db, async trx =>
    await trx.selectFrom('audit_log').select('tenant_id').distinct().where('seq', 'is', null).limit(1_000).execute())
  let total = 0
  for (const { tenant_id: tenantId } of tenants) {
    if (signal?.aborted === true) break
    total += await sealAudit(db, tenantId)
  }
  return total
}

/** Every tenant that has an audit chain (the verification command's `--all`). */
export async function auditTenants (db: Kysely<Database>): Promise<string[]> {
  const rows = await withSystem(db, async trx =>
    await trx.selectFrom('audit_heads').select('tenant_id').orderBy('tenant_id').execute())
  const unsealed = await withSystem(db, async trx =>
    await trx.selectFrom('audit_log').select('tenant_id').distinct().where('seq', 'is', null).execute())
  return [...new Set([...rows, ...unsealed].map(r => r.tenant_id))].sort()
}

export type VerifyProblem =
  | 'hash' // the entry's content does not give its hash: changed
  | 'link' // the entry does not name the hash before it: an entry removed, inserted or moved
  | 'gap' // a position is missing
  | 'head' // the chain ends elsewhere than its head says: its last entries removed

export interface AuditVerification {
  readonly valid: boolean
  /** false when the walk stopped at its bound before the head: `next` continues it */
  readonly complete: boolean
  /** the position a next walk starts at (`from`), when not complete */
  readonly next?: number
  /** entries checked (the chain from where retention cut it to its head) */
  readonly checked: number
  /** the head: the last position and its hash (keep it elsewhere to notice a rewritten chain) */
  readonly head: { readonly seq: number, readonly hash: string }
  /** where the chain starts after retention, and the hash it starts from */
  readonly start: { readonly seq: number, readonly hash: string }
  /** the first problem found */
  readonly problem?: { readonly seq: number, readonly id: number | null, readonly kind: VerifyProblem }
}

/** Where a walk of the chain is to start and how far it may go (`verifyAudit`). */
export interface VerifyWindow {
  /** the first position to check (default: the chain's start); the entry before it gives the hash it must name */
  from?: number
  /** the most entries to check (default: all, as the command does; a request passes `VERIFY_PER_REQUEST`) */
  max?: number
}

/** The entries one request verifies (about a second of hashing): a longer chain is walked in windows (`next`). */
export const VERIFY_PER_REQUEST = 100_000

/** The position and hash a walk from `from` starts after: the entry before it, or the chain's start. */
async function walkStart (db: Kysely<Database>, tenantId: string, start: { seq: number, hash: string }, from: number) {
  if (from <= start.seq + 1) return start
  const before = await withSystem(db, async trx =>
    await trx.selectFrom('audit_log').select(['seq', 'hash'])
      .where('tenant_id', '=', tenantId).where('seq', '=', from - 1).executeTakeFirst())
  return { seq: from - 1, hash: before?.hash ?? '' }
}

/**
 * Walks the tenant's chain (entries sealed up to now) from `window.from` (its start by default) to its head, or for
 * `window.max` entries: then `complete` is false and `next` is where the next walk starts. A window that does not
 * reach the head vouches for its entries and their links only; the head is checked by the walk that reaches it.
 */
export async function verifyAudit (
  db: Kysely<Database>, tenantId: string, window: VerifyWindow = {}
): Promise<AuditVerification> {
  const head = await withSystem(db, async trx =>
    await trx.selectFrom('audit_heads').selectAll().where('tenant_id', '=', tenantId).executeTakeFirst())
  const start = { seq: head?.pruned_seq ?? 0, hash: head?.pruned_hash ?? '' }
  const end = { seq: head?.seq ?? 0, hash: head?.hash ?? '' }
  if (window.from !== undefined && (window.from <= start.seq || window.from > end.seq + 1)) {
    throw invalidField('query.from', `the chain holds positions ${start.seq + 1} to ${end.seq} now`, window.from)
  }
  const from = await walkStart(db, tenantId, start, window.from ?? 0)
  const max = window.max ?? Infinity
  let expected = from.seq + 1
  let prev = from.hash
  let checked = 0
  const fail = (kind: VerifyProblem, seq: number, id: number | null): AuditVerification =>
    ({ valid: false, complete: true, checked, head: end, start, problem: { seq, id, kind } })
  for (;;) {
    const page = Math.min(VERIFY_PAGE, max - checked)
    if (page <= 0) {
      if (expected > end.seq) break
      return { valid: true, complete: false, next: expected, checked, head: end, start }
    }
    const rows = await withSystem(db, async trx =>
      await trx.selectFrom('audit_log').selectAll()
        .where('tenant_id', '=', tenantId).where('seq', '>=', expected)
        .orderBy('seq').limit(page).execute())
    for (const row of rows) {
      const seq = row.seq as number
      if (seq !== expected) return fail('gap', expected, null)
      if (row.prev_hash !== prev) return fail('link', seq, row.id)
      if (entryHash(prev, row) !== row.hash) return fail('hash', seq, row.id)
      prev = row.hash
      expected += 1
      checked += 1
    }
    if (rows.length < page) break
  }
  if (expected - 1 !== end.seq || prev !== end.hash) {
    return fail('head', expected - 1 === end.seq ? end.seq : expected, null)
  }
  return { valid: true, complete: true, checked, head: end, start }
}

/**
 * Deletes the sealed entries older than `before`, tenant by tenant, from the start of each chain: the entries before
 * the first one that is to be kept (so the chain stays whole from its new start). The head keeps the last deleted
 * entry's position and hash, from which verification starts. Answers how many it deleted.
 */
export async function pruneAudit (db: Kysely<Database>, before: Date, signal?: AbortSignal): Promise<number> {
  const tenants = await withSystem(db, async trx =>
    await trx.selectFrom('audit_log').select('tenant_id').distinct()
      .where('at', '<', before).where('seq', 'is not', null).limit(1_000).execute())
  let total = 0
  for (const { tenant_id: tenantId } of tenants) {
    if (signal?.aborted === true) break
    total += await withSystem(db, async trx => {
      const head = await lockHead(trx, tenantId)
      const kept = await trx.selectFrom('audit_log').select(eb => eb.fn.min('seq').as('seq'))
        .where('tenant_id', '=', tenantId).where('seq', 'is not', null).where('at', '>=', before).executeTakeFirst()
      const through = kept?.seq === null || kept?.seq === undefined ? head.seq : Number(kept.seq) - 1
      if (through <= head.pruned_seq) return 0
      const last = await trx.selectFrom('audit_log').select('hash')
        .where('tenant_id', '=', tenantId).where('seq', '=', through).executeTakeFirst()
      if (last?.hash === null || last?.hash === undefined) return 0
      const deleted = await trx.deleteFrom('audit_log')
        .where('tenant_id', '=', tenantId).where('seq', '<=', through).executeTakeFirst()
      await trx.updateTable('audit_heads').set({ pruned_seq: through, pruned_hash: last.hash })
        .where('tenant_id', '=', tenantId).execute()
      return Number(deleted.numDeletedRows)
    })
  }
  return total
}

const SEAL_EVERY_MS = 5_000

/** Seals every tenant's new entries every few seconds until the function returned is called. */
export function startAuditSealer (db: Kysely<Database>, log: FastifyBaseLogger): () => Promise<void> {
  const controller = new AbortController()
  let running: Promise<unknown> | undefined
  const timer = setInterval(() => {
    // one pass at a time: a pass that takes longer than the interval is not joined by another
    if (running !== undefined) return
    running = sealPending(db, controller.signal).catch((err: unknown) => {
      if (!controller.signal.aborted) log.warn({ err }, 'audit log: sealing failed; trying again')
    }).finally(() => { running = undefined })
  }, SEAL_EVERY_MS)
  timer.unref()
  return async () => {
    controller.abort()
    clearInterval(timer)
    await running
  }
}

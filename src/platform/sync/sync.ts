/**
 * Incremental sync of a list (docs/integrations.md, "Incremental sync"): a list read with `sync=true` answers, on
 * its last page, a `sync_token`; the same list read with that token answers only what changed since, the changed
 * rows the caller sees now in `items` and the others as tombstones `{id, deleted: true}` in `deleted`.
 *
 * Changes are logged by triggers in `changes` (migration 0026) with the id of the transaction that wrote them. A
 * token holds the xmin of a snapshot taken before the read it closes: every change that read may have missed was
 * written by a transaction of that id or later, so a delta reads `xid >= x` (some changes come twice; a client
 * applies them idempotently). A token also holds when it was issued (older than the window, `config.syncWindowMs`:
 * 410, the log may have been pruned) and the digest of its list (`listScope` of the list, its filters, the tenant,
 * the caller and what the caller sees by: organization, admin, for events their reach), so it answers only the same
 * list and caller: otherwise 410. `syncedRead` is the whole flow of a list read with `sync=true` or `sync_token`.
 *
 * The token's digest is an integrity check, not a secret: the service has no signing key, and, like a cursor, a
 * token grants nothing (the delta is read with the caller's own visibility; a forged position only re-reads or
 * skips the caller's own changes).
 *
 * @example
 *   const scope = syncScope('contacts', auth, { search, favorite })
 *   return await syncedRead(trx, { query: q, scope, logged, now, windowMs: config.syncWindowMs, full, changes })
 */
import crypto from 'node:crypto'
import { Type, type TSchema } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { AuthContext } from '../auth/verify.ts'
import type { Tx } from '../db/tenant.ts'
import { ApiError, invalidField } from '../http/errors.ts'
import { listScope } from '../http/cursor.ts'

/** 410 Gone (problem+json): the token cannot answer this list any more; read the full list again. */
export const error410Gone = (detail: string): ApiError => new ApiError(410, detail)

export const SyncParam = Type.Optional(Type.String({
  minLength: 1,
  maxLength: 512,
  description: 'A `sync_token` of this list: answers what changed since (docs/integrations.md); 410: read it again with `sync=true`'
}))

export const SyncStartParam = Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], {
  description: 'true: the last page carries a `sync_token`'
}))

export const SyncTokenField = Type.Optional(Type.String({
  description: 'On the last page of a sync: send it as `sync_token`'
}))

/** The tombstones of a list whose rows have ids of the schema `id` (a uuid string, an integer). */
export const deletedField = (id: TSchema) => Type.Optional(Type.Array(
  Type.Object({ id, deleted: Type.Literal(true) }, { additionalProperties: false }),
  { description: 'With `sync_token`: rows gone from the list (or out of the caller\'s sight): drop them by `id`' }
))

export const DeletedField = deletedField(Type.String())

/** The digest a token of one list, filters and caller carries. */
export function syncScope (list: string, auth: AuthContext, filters: Record<string, unknown>): string {
  return listScope(`sync:${list}`, {
    ...filters,
    '@tenant': auth.tenantId,
    '@user': auth.userId,
    '@org': auth.orgId,
    '@admin': auth.permissions.has('tenant:admin')
  })
}

/** What a token holds: the snapshot xmin (an xid8 as text) and when it was issued (ms). */
export interface SyncPoint { x: string, t: number }

// a constant key: an integrity digest (see above), so a truncated or edited token is told from a valid one
const KEY = 'collab-sync-token-v1'
const mac = (payload: string) => crypto.createHmac('sha256', KEY).update(payload).digest('base64url').slice(0, 22)
const XID = /^\d{1,20}$/

function seal (body: Record<string, unknown>): string {
  const payload = Buffer.from(JSON.stringify(body)).toString('base64url')
  return `${payload}.${mac(payload)}`
}

function unseal (token: string): Record<string, unknown> | undefined {
  const [payload, digest, extra] = token.split('.')
  if (payload === undefined || digest === undefined || extra !== undefined) return undefined
  const expected = mac(payload)
  if (digest.length !== expected.length || !crypto.timingSafeEqual(Buffer.from(digest), Buffer.from(expected))) {
    return undefined
  }
  try {
    const body: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    return typeof body === 'object' && body !== null ? body as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

export function issueSyncToken (point: SyncPoint, scope: string): string {
  return seal({ v: 1, x: point.x, t: point.t, s: scope })
}

/**
 * The point a token names; 410 when it is not this service's, of another list or caller, or older at `now` than
 * `windowMs` (RETENTION_CHANGES less a day, `config.syncWindowMs`; null: the log is kept forever).
 */
export function readSyncToken (token: string, scope: string, now: Date, windowMs: number | null): SyncPoint {
  const body = unseal(token)
  const { v, x, t, s } = body ?? {}
  if (v !== 1 || typeof x !== 'string' || !XID.test(x) || typeof t !== 'number' || !Number.isSafeInteger(t)) {
    throw error410Gone('not a sync token of this service: read the full list again with sync=true')
  }
  if (s !== scope) {
    throw error410Gone('the sync token belongs to another list, other filters or another caller: read the full list again with sync=true')
  }
  if (windowMs !== null && now.getTime() - t > windowMs) {
    const days = Math.floor(windowMs / 86_400_000)
    throw error410Gone(`the sync token is older than the sync window (${days} days): read the full list again with sync=true`)
  }
  return { x, t }
}

/**
 * The position of a page of changes: the token's point, the point of the new token, the last seq read, the last seq
 * the delta reads (the highest at its first page: changes written while the client pages come with the next token,
 * so a delta ends however fast writes go on), the page.
 */
export interface DeltaPosition { from: SyncPoint, to: SyncPoint, after: string, upto: string, page: number }

export function deltaCursor (p: DeltaPosition, scope: string): string {
  return seal({ v: 1, f: p.from, n: p.to, a: p.after, u: p.upto, p: p.page, s: scope })
}

const point = (v: unknown): SyncPoint | undefined => {
  if (typeof v !== 'object' || v === null) return undefined
  const { x, t } = v as Record<string, unknown>
  return typeof x === 'string' && XID.test(x) && typeof t === 'number' && Number.isSafeInteger(t) ? { x, t } : undefined
}

/** The position a cursor of changes names, read with the token it follows; 400 (field `cursor`) otherwise. */
export function readDeltaCursor (cursor: string, scope: string, since: SyncPoint): DeltaPosition {
  const body = unseal(cursor)
  const from = point(body?.f)
  const to = point(body?.n)
  const after = body?.a
  const upto = body?.u
  const page = body?.p
  if (body === undefined || from === undefined || to === undefined || typeof after !== 'string' || !XID.test(after) ||
    typeof upto !== 'string' || !XID.test(upto) ||
    typeof page !== 'number' || !Number.isSafeInteger(page) || page < 2) {
    throw invalidField('query.cursor', 'not a cursor of changes of this service')
  }
  if (body.s !== scope || from.x !== since.x || from.t !== since.t) {
    throw invalidField('query.cursor', 'the cursor belongs to another sync_token, list or caller')
  }
  return { from, to, after, upto, page }
}

/**
 * A full list read with `sync=true`: its `next_cursor` carries the token of its first page (`<list cursor>~<token>`),
 * so the token its last page answers was taken before the first page was read.
 */
export const carryToken = (listCursor: string, token: string): string => `${listCursor}~${token}`

/** The list cursor and the token a cursor of a `sync=true` read carries (no token: a cursor of a plain read). */
export function splitCarried (cursor: string): { cursor: string, token?: string } {
  const at = cursor.indexOf('~')
  return at < 0 ? { cursor } : { cursor: cursor.slice(0, at), token: cursor.slice(at + 1) }
}

/** The sync point now: the xmin of a snapshot (every transaction that may write later is at or after it). */
export async function syncPoint (trx: Tx, now: Date): Promise<SyncPoint> {
  const { rows } = await sql<{ x: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as x`.execute(trx)
  const x = rows[0]?.x
  if (x === undefined) throw new Error('no snapshot xmin')
  return { x, t: now.getTime() }
}

/** The trigger that logs contact changes (absent on Citus: no sync there). */
export const CONTACT_CHANGES_TRIGGER = 'contacts_changes_insert'

/** A tombstone: a row gone from the list since the token. */
export interface Tombstone<K> { id: K, deleted: true }

/** A page of changes a list's repository reads: rows in the list now, tombstones for the others. */
export interface ChangesPage<T, K> {
  items: T[]
  deleted: Array<Tombstone<K>>
  /** the changes from this page on */
  remaining: number
  /** the seq of the page's last change */
  last: string | undefined
  /** the highest seq the delta reads (ChangesWindow) */
  upto: string
  more: boolean
}

/** What a list's read answers: a page of the full list. */
export interface FullPage<T> { items: T[], total: number, page: number, next_cursor: string | null }

/** The query fields of a list that syncs. */
export interface SyncQuery {
  sync?: 'true' | 'false' | undefined
  sync_token?: string | undefined
  cursor?: string | undefined
  page: number
  size: number
}

/** Whether a list read is a sync (a full read with `sync=true`, or a delta with `sync_token`). */
export const isSyncRead = (q: SyncQuery): boolean => q.sync_token !== undefined || q.sync === 'true'

/**
 * Which changes a page of a delta reads: of transactions from `since` (an xid8, the token's), after the change
 * `after` and up to `upto` (seqs; both undefined on the first page, which takes `upto` as the highest now).
 */
export interface ChangesWindow {
  since: string
  after: string | undefined
  upto: string | undefined
  size: number
}

export interface SyncedRead<T, K> {
  query: SyncQuery
  /** syncScope of the list, its filters and the caller */
  scope: string
  /** whether the list's changes are logged here (no triggers on Citus: no token is issued, none answers) */
  logged: boolean
  now: Date
  /** how long a token answers (`config.syncWindowMs`) */
  windowMs: number | null
  /** a page of the full list from its cursor (undefined: the first page) */
  full: (cursor: string | undefined) => Promise<FullPage<T>>
  /** a page of the changes of the window */
  changes: (window: ChangesWindow) => Promise<ChangesPage<T, K>>
}

export type SyncedPage<T, K> = FullPage<T> & { deleted?: Array<Tombstone<K>>, sync_token?: string }

/**
 * A list read with `sync=true` or `sync_token`, in the caller's transaction: 410 for a token that cannot answer, 400
 * for a page number or a cursor that is not of this sync; the full list with its token on its last page, or a page
 * of the changes since the token, the last with the next token (taken before the first page was read).
 */
export async function syncedRead<T, K> (trx: Tx, o: SyncedRead<T, K>): Promise<SyncedPage<T, K>> {
  const q = o.query
  if (q.sync_token !== undefined) {
    if (!o.logged) throw error410Gone('this database keeps no log of changes: read the full list again')
    const since = readSyncToken(q.sync_token, o.scope, o.now, o.windowMs)
    const position = q.cursor === undefined
      ? { from: since, to: await syncPoint(trx, o.now), after: undefined, upto: undefined, page: 1 }
      : readDeltaCursor(q.cursor, o.scope, since)
    const found = await o.changes({ since: since.x, after: position.after, upto: position.upto, size: q.size })
    const more = found.more && found.last !== undefined
    return {
      items: found.items,
      deleted: found.deleted,
      page: position.page,
      // the total counts from this page on; the pages before it are added by the page number
      total: (position.page - 1) * q.size + found.remaining,
      next_cursor: more && found.last !== undefined
        ? deltaCursor({ ...position, after: found.last, upto: found.upto, page: position.page + 1 }, o.scope)
        : null,
      ...(more ? {} : { sync_token: issueSyncToken(position.to, o.scope) })
    }
  }
  if (q.cursor === undefined && q.page > 1) {
    throw invalidField('query.page', 'a read with sync=true pages by next_cursor from its first page')
  }
  const carried = q.cursor === undefined ? undefined : splitCarried(q.cursor)
  if (o.logged && carried !== undefined && carried.token === undefined) {
    throw invalidField('query.cursor', 'a read with sync=true goes on with the next_cursor of its own pages')
  }
  // the token is taken before the first page is read, and carried by the cursors to the last page
  if (carried?.token !== undefined) readSyncToken(carried.token, o.scope, o.now, o.windowMs)
  const token = !o.logged ? undefined : carried?.token ?? issueSyncToken(await syncPoint(trx, o.now), o.scope)
  const page = await o.full(carried?.cursor)
  if (token === undefined) return page
  return page.next_cursor !== null
    ? { ...page, next_cursor: carryToken(page.next_cursor, token) }
    : { ...page, sync_token: token }
}

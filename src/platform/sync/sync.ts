/**
 * Incremental sync of a list (docs/integrations.md, "Incremental sync"): a list read with `sync=true` answers, on
 * its last page, a `sync_token`; the same list read with that token answers only what changed since, the changed
 * rows the caller sees now in `items` and the others as tombstones `{id, deleted: true}` in `deleted`.
 *
 * Changes are logged by row triggers in `changes` (migrations 0026, 0027, 0032), each with its tenant's position:
 * one number per writing transaction, given in commit order at commit, so whoever reads the tenant's position n
 * has every change at or below n committed, on PostgreSQL, PGlite and a Citus cluster alike. A token holds the
 * position read before the read it closes, and a delta reads the changes above it (a change committed between that
 * position and the read comes twice at most: in the read, and in the next delta; a client applies them
 * idempotently). A token also holds when it was issued (older than the window, `config.syncWindowMs`: 410, the log
 * may have been pruned; issued in the future: 410 too) and the digest of its list (`listScope` of the list, its
 * filters, the tenant, the caller and what the caller sees by: organization, admin, for events their reach), so it
 * answers only the same list and caller: otherwise 410. `syncedRead` is the whole flow of a list read with
 * `sync=true` or `sync_token`.
 *
 * A token and a delta cursor are sealed: `<base64url JSON>.<MAC>`, the MAC an HMAC-SHA-256 keyed with the
 * deployment's secret (`SealKeys`: TOKEN_SECRET, or the secret kept under DATA_DIR, src/platform/secrets.ts),
 * truncated to 22 base64url characters (132 bits: a forger has only online guesses, one request each, and tokens
 * keep their length under the 512 characters of `sync_token`). Only the service can issue one: a token not sealed
 * with the current key or the previous one (TOKEN_SECRET_PREVIOUS, during a rotation) answers 410, a cursor 400. So
 * the issue time a token holds is the service's own, and the window applies: a token older than the window, or
 * issued later than now (more than SYNC_CLOCK_SKEW_MS, for instances whose clocks differ), answers 410. A token
 * grants nothing beyond that either: a delta is read with the caller's own visibility. Problem details never say
 * which key was tried or what digest was expected.
 *
 * @example
 *   const scope = syncScope('contacts', auth, { search, favorite })
 *   return await syncedRead(trx, {
 *     query: q, tenantId, scope, now, windowMs: config.syncWindowMs, keys: sealKeys(config), full, changes
 *   })
 */
import crypto from 'node:crypto'
import { Type, type TSchema } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Config } from '../../config.ts'
import type { AuthContext } from '../auth/verify.ts'
import type { Tx } from '../db/tenant.ts'
import { ApiError, fieldError, invalidField } from '../http/errors.ts'
import { listScope } from '../http/cursor.ts'
import type { ProblemCode } from '../http/problem-types.ts'
import { QueryFlag } from '../http/schema.ts'

/** 410 Gone (problem+json, naming `query.sync_token`): the token cannot answer this list any more; read it again. */
export const error410Gone = (detail: string, code?: ProblemCode): ApiError =>
  new ApiError(410, detail, [fieldError('query.sync_token', detail)], {}, code)

export const SyncParam = Type.Optional(Type.String({
  minLength: 1,
  maxLength: 512,
  description: 'A `sync_token` of this list: answers what changed since (docs/integrations.md); 410: ' +
    'read it again with `sync=true`'
}))

export const SyncStartParam = Type.Optional(QueryFlag('`true`: the last page carries a `sync_token`'))

export const SyncTokenField = Type.Optional(Type.String({
  description: 'On the last page of a sync: send it as `sync_token`'
}))

/** The tombstones of a list whose rows have ids of the schema `id` (a uuid string, an integer). */
export const deletedField = (id: TSchema) => Type.Optional(Type.Array(
  Type.Object({ id, deleted: Type.Literal(true) }, { additionalProperties: false }),
  { description: 'With `sync_token`: rows gone from the list (or out of the caller\'s sight): drop them by `id`' }
))

export const DeletedField = deletedField(Type.String())

/**
 * The digest a token of one list, filters and caller carries, in two parts: `<list>.<access>`. The list part names
 * the list, its filters, the tenant and the user; the access part what the caller sees by (organization, admin, and
 * `access`: for events their reach), so a token that fails on the second part answers why: the caller's access
 * changed (`sync_access_changed`), not "another list" (both digests are base64url, without a dot).
 */
export function syncScope (
  list: string, auth: AuthContext, filters: Record<string, unknown>, access: Record<string, unknown> = {}
): string {
  const ofList = listScope(`sync:${list}`, { ...filters, '@tenant': auth.tenantId, '@user': auth.userId })
  const ofAccess = listScope(`sync-access:${list}`, {
    ...access, '@org': auth.orgId, '@admin': auth.permissions.has('tenant:admin')
  })
  return `${ofList}.${ofAccess}`
}

/** What a token holds: the tenant's position in its log of changes (a bigint as text) and when it was issued (ms). */
export interface SyncPoint { x: string, t: number }

/**
 * The keys that seal tokens and cursors: `current` seals; unsealing tries it, then `previous` (TOKEN_SECRET_PREVIOUS,
 * so a rotation does not answer 410 to every client at once).
 */
export interface SealKeys { readonly current: string, readonly previous?: string | undefined }

/**
 * The sealing keys of an app's configuration (`ctx.config`: buildApp resolves TOKEN_SECRET there, from the
 * environment or from DATA_DIR).
 */
export function sealKeys (config: Pick<Config, 'tokenSecret' | 'tokenSecretPrevious'>): SealKeys {
  if (config.tokenSecret === undefined) {
    throw new Error('no token secret: read the keys from the app context\'s config, ' +
      'where buildApp resolves TOKEN_SECRET')
  }
  return { current: config.tokenSecret, previous: config.tokenSecretPrevious }
}

/** How far ahead of this process's clock a token's issue time may be (another instance's clock): 5 minutes. */
export const SYNC_CLOCK_SKEW_MS = 5 * 60_000

/** 132 bits of the HMAC (see above); the label keeps these MACs apart from any other use of the secret. */
const MAC_LENGTH = 22
const MAC_LABEL = 'collab-sync-seal-v1\n'
const mac = (key: string, payload: string): Buffer => Buffer.from(
  crypto.createHmac('sha256', key).update(MAC_LABEL).update(payload).digest('base64url').slice(0, MAC_LENGTH)
)
const POSITION = /^\d{1,19}$/
const KEY = /^[0-9a-f-]{1,64}$/

function seal (body: Record<string, unknown>, keys: SealKeys): string {
  const payload = Buffer.from(JSON.stringify(body)).toString('base64url')
  return `${payload}.${mac(keys.current, payload).toString()}`
}

/** The body of a token or cursor sealed with the current or the previous key; undefined otherwise. */
function unseal (token: string, keys: SealKeys): Record<string, unknown> | undefined {
  const [payload, digest, extra] = token.split('.')
  if (payload === undefined || digest === undefined || extra !== undefined) return undefined
  const given = Buffer.from(digest)
  const sealedWith = (key: string | undefined): boolean => {
    if (key === undefined) return false
    const expected = mac(key, payload)
    // lengths in bytes: a digest of as many characters, some of them not ASCII, is longer
    return given.length === expected.length && crypto.timingSafeEqual(given, expected)
  }
  if (!sealedWith(keys.current) && !sealedWith(keys.previous)) return undefined
  try {
    const body: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    return typeof body === 'object' && body !== null ? body as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/** The version of a token's body: 3 since its scope has a list and an access part (2 before). */
const TOKEN_VERSION = 3

export function issueSyncToken (point: SyncPoint, scope: string, keys: SealKeys): string {
  return seal({ v: TOKEN_VERSION, x: point.x, t: point.t, s: scope }, keys)
}

/** The one 410 of a token outside the window: older than it, or issued in the future. */
function outsideWindow (windowMs: number | null): ApiError {
  const days = windowMs === null ? '' : ` (${Math.floor(windowMs / 86_400_000)} days)`
  return error410Gone(
    `the sync token is outside the sync window${days}: read the full list again with sync=true`, 'sync_token_expired'
  )
}

/** Why a token's scope is not the list's: another list, filters or caller, or the same with other access. */
function scopeRefusal (tokenScope: string, scope: string): ApiError {
  const [tokenList] = tokenScope.split('.')
  const [list] = scope.split('.')
  if (tokenList === list) {
    return error410Gone('what you may see of this list changed since the sync token (your role, organization, ' +
      'memberships or grants): read the full list again with sync=true', 'sync_access_changed')
  }
  return error410Gone('the sync token belongs to another list, other filters or another caller: ' +
    'read the full list again with sync=true', 'sync_token_mismatch')
}

/**
 * The point a token names; 410 when it is not sealed with `keys` (not this service's), of another list or caller,
 * older at `now` than `windowMs` (RETENTION_CHANGES less a day, `config.syncWindowMs`; null: the log is kept
 * forever), or issued more than SYNC_CLOCK_SKEW_MS after `now`.
 */
export function readSyncToken (
  token: string, scope: string, now: Date, windowMs: number | null, keys: SealKeys
): SyncPoint {
  const body = unseal(token, keys)
  const { v, x, t, s } = body ?? {}
  if (v === 2) {
    throw error410Gone('the sync token was issued by an earlier version of the service: read the full list again ' +
      'with sync=true', 'sync_token_expired')
  }
  if (v !== TOKEN_VERSION || typeof x !== 'string' || !POSITION.test(x) || typeof t !== 'number' ||
    !Number.isSafeInteger(t) || typeof s !== 'string') {
    const detail = 'not a sync token of this service: read the full list again with sync=true'
    throw error410Gone(detail, 'sync_token_invalid')
  }
  if (s !== scope) throw scopeRefusal(s, scope)
  if (t - now.getTime() > SYNC_CLOCK_SKEW_MS) throw outsideWindow(windowMs)
  if (windowMs !== null && now.getTime() - t > windowMs) throw outsideWindow(windowMs)
  return { x, t }
}

/** Where a page of changes goes on: after the last (position, key) read. */
export interface ChangeMark { pos: string, key: string }

/**
 * The position of a page of changes: the token's point, the point of the new token (the tenant's position when the
 * delta began, and the highest the delta reads: changes written while the client pages come with the next token, so
 * a delta ends however fast writes go on), the last change read, the page.
 */
export interface DeltaPosition { from: SyncPoint, to: SyncPoint, after: ChangeMark | undefined, page: number }

export function deltaCursor (p: DeltaPosition, scope: string, keys: SealKeys): string {
  const after = p.after === undefined ? null : [p.after.pos, p.after.key]
  return seal({ v: 2, f: p.from, n: p.to, a: after, p: p.page, s: scope }, keys)
}

const point = (v: unknown): SyncPoint | undefined => {
  if (typeof v !== 'object' || v === null) return undefined
  const { x, t } = v as Record<string, unknown>
  return typeof x === 'string' && POSITION.test(x) && typeof t === 'number' && Number.isSafeInteger(t)
    ? { x, t }
    : undefined
}

const mark = (v: unknown): ChangeMark | undefined => {
  if (!Array.isArray(v) || v.length !== 2) return undefined
  const [pos, key] = v as unknown[]
  return typeof pos === 'string' && POSITION.test(pos) && typeof key === 'string' && KEY.test(key)
    ? { pos, key }
    : undefined
}

/**
 * The position a cursor of changes names, read with the token it follows; 400 (field `cursor`) otherwise, and for a
 * cursor not sealed with `keys`.
 */
export function readDeltaCursor (cursor: string, scope: string, since: SyncPoint, keys: SealKeys): DeltaPosition {
  const body = unseal(cursor, keys)
  const from = point(body?.f)
  const to = point(body?.n)
  const after = mark(body?.a)
  const page = body?.p
  if (body === undefined || body.v !== 2 || from === undefined || to === undefined || after === undefined ||
    typeof page !== 'number' || !Number.isSafeInteger(page) || page < 2) {
    throw invalidField('query.cursor', 'not a cursor of changes of this service')
  }
  if (body.s !== scope || from.x !== since.x || from.t !== since.t) {
    throw invalidField('query.cursor', 'the cursor belongs to another sync_token, list or caller')
  }
  return { from, to, after, page }
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

/**
 * The sync point now: the tenant's position in its log of changes (migration 0032). Positions are given at commit in
 * commit order, so every change at or below it is committed and seen by a read that follows.
 */
export async function syncPoint (trx: Tx, tenantId: string, now: Date): Promise<SyncPoint> {
  const { rows } = await sql<{ x: string }>`select coalesce((select pos from change_positions
    where tenant_id = ${tenantId}), 0)::text as x`.execute(trx)
  return { x: rows[0]?.x ?? '0', t: now.getTime() }
}

/** A tombstone: a row gone from the list since the token. */
export interface Tombstone<K> { id: K, deleted: true }

/** A page of changes a list's repository reads: rows in the list now, tombstones for the others. */
export interface ChangesPage<T, K> {
  items: T[]
  deleted: Array<Tombstone<K>>
  /** the changes from this page on */
  remaining: number
  /** the page's last change */
  last: ChangeMark | undefined
  more: boolean
}

/** What a list's read answers: a page of the full list. */
export interface FullPage<T> { items: T[], total: number, page: number, next_cursor: string | null }

/** The query fields of a list that syncs. */
export interface SyncQuery {
  sync?: boolean | undefined
  sync_token?: string | undefined
  cursor?: string | undefined
  page: number
  size: number
}

/** Whether a list read is a sync (a full read with `sync=true`, or a delta with `sync_token`). */
export const isSyncRead = (q: SyncQuery): boolean => q.sync_token !== undefined || q.sync === true

/**
 * Which changes a page of a delta reads: above the position `since` (the token's) and up to `upto` (the tenant's
 * position when the delta began), after the change `after` (undefined on the first page).
 */
export interface ChangesWindow {
  since: string
  after: ChangeMark | undefined
  upto: string
  size: number
}

export interface SyncedRead<T, K> {
  query: SyncQuery
  tenantId: string
  /** syncScope of the list, its filters and the caller */
  scope: string
  now: Date
  /** how long a token answers (`config.syncWindowMs`) */
  windowMs: number | null
  /** the keys that seal its tokens and cursors (`sealKeys(config)`) */
  keys: SealKeys
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
    const since = readSyncToken(q.sync_token, o.scope, o.now, o.windowMs, o.keys)
    const position = q.cursor === undefined
      ? { from: since, to: await syncPoint(trx, o.tenantId, o.now), after: undefined, page: 1 }
      : readDeltaCursor(q.cursor, o.scope, since, o.keys)
    const found = await o.changes({ since: since.x, after: position.after, upto: position.to.x, size: q.size })
    const more = found.more && found.last !== undefined
    return {
      items: found.items,
      deleted: found.deleted,
      page: position.page,
      // the total counts from this page on; the pages before it are added by the page number
      total: (position.page - 1) * q.size + found.remaining,
      next_cursor: more && found.last !== undefined
        ? deltaCursor({ ...position, after: found.last, page: position.page + 1 }, o.scope, o.keys)
        : null,
      ...(more ? {} : { sync_token: issueSyncToken(position.to, o.scope, o.keys) })
    }
  }
  if (q.cursor === undefined && q.page > 1) {
    throw invalidField('query.page', 'a read with sync=true pages by next_cursor from its first page')
  }
  const carried = q.cursor === undefined ? undefined : splitCarried(q.cursor)
  if (carried !== undefined && carried.token === undefined) {
    throw invalidField('query.cursor', 'a read with sync=true goes on with the next_cursor of its own pages')
  }
  // the token is taken before the first page is read, and carried by the cursors to the last page
  if (carried?.token !== undefined) readSyncToken(carried.token, o.scope, o.now, o.windowMs, o.keys)
  const token = carried?.token ?? issueSyncToken(await syncPoint(trx, o.tenantId, o.now), o.scope, o.keys)
  const page = await o.full(carried?.cursor)
  return page.next_cursor !== null
    ? { ...page, next_cursor: carryToken(page.next_cursor, token) }
    : { ...page, sync_token: token }
}

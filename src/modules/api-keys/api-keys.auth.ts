/**
 * The bearer side of API keys (docs/api-keys.md): `Authorization: Bearer cbk_…` checked by hash lookup, the caller it
 * makes, the record of its uses. `ctx.engines.apiKeys`, made in app.ts and given to the authentication plugin
 * (src/platform/auth/plugin.ts, `ApiKeyAuthenticator`).
 *
 * - A key is found by its lookup id on the system login (its tenant is the row's), its SHA-256 compared in constant
 *   time; then the key, its account and its expiry decide. A refusal is a TokenRefused with its reason
 *   (`API key expired`, `API key revoked`, …) and, for the log, the key's lookup id and account, never the key.
 * - An accepted key's caller is kept for at most CACHE_MS (and never past the key's expiry): a revocation, a rotation's
 *   end, a disabled account or a changed role reach every process within that time, this process at once (`forget…`).
 * - `last_used_at` / `last_used_address` are written at most once a minute per key.
 * - Every request made with a key is an `api_key.used` entry of the audit log (method, route pattern, status), written
 *   after the response in batches, at most a second later, in a transaction of their own.
 */
import { AsyncResource } from 'node:async_hooks'
import crypto from 'node:crypto'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { recordAudit, type AuditChange } from '../../platform/audit.ts'
import type { ApiKeyAuthenticator } from '../../platform/auth/plugin.ts'
import { permissionsOf, type Permission } from '../../platform/auth/permissions.ts'
import { TokenRefused, type AuthContext, type TokenFacts } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { hashKey, KEY_PREFIX, lookupIdOf, malformation } from './api-keys.format.ts'
import * as repo from './api-keys.repository.ts'
import type { ServiceAccountRole } from './api-keys.table.ts'

/** How long this process trusts a key it checked (docs/api-keys.md, "Revocation"). */
export const CACHE_MS = 5_000
/** A key's use is written at most this often. */
export const TOUCH_EVERY_MS = 60_000
/** Uses wait at most this long before they are written to the audit log… */
export const USES_FLUSH_MS = 1_000
/** …or until this many are waiting. */
const USES_BATCH_MAX = 500
const CACHE_MAX = 10_000
const REFUSED_TTL_MS = 30_000

declare module '../../platform/app-context.ts' {
  interface Engines {
    /** API keys: the bearer check, its cache and the record of uses (`ctx.engines.apiKeys`) */
    apiKeys: ApiKeyEngine
  }
}

export interface ApiKeyEngine extends ApiKeyAuthenticator {
  /** drops this process's trust in a key (revoked, rotated) */
  forgetKey (tenantId: string, keyId: number): void
  /** drops this process's trust in every key of an account (disabled, deleted, role or scopes changed) */
  forgetAccount (tenantId: string, accountId: number): void
  /** writes the uses waiting now */
  flushUses (): Promise<void>
  /** writes what waits and stops the timer */
  close (): Promise<void>
}

/** The user id a service account acts as. */
export const accountUserId = (accountId: number | string): string => `sa_${String(accountId)}`

const ACCOUNT_USER_ID = /^sa_([0-9]{1,16})$/

/** What a service account may do now, for what acts as it after the request that made it (`accountNow`). */
export interface AccountNow {
  /** what it made acts for no one unless `active` */
  state: 'active' | 'disabled' | 'deleted'
  role: ServiceAccountRole
  /** null: every permission of the role */
  scopes: readonly string[] | null
}

/**
 * The service account `userId` names (`sa_<id>`), as it is now, or undefined when `userId` is no service account's. A
 * feed token, a webhook subscription or an automation rule made with a key acts as its account later, when no key is
 * at hand: this is the account's state those channels read (docs/api-keys.md, "What a key makes"). An account that is
 * gone is not live.
 *
 * @example
 *   const account = await accountNow(trx, tenantId, 'sa_3') // { state: 'disabled', … } once sa_3 is disabled
 */
export async function accountNow (trx: Tx, tenantId: string, userId: string): Promise<AccountNow | undefined> {
  const id = ACCOUNT_USER_ID.exec(userId)?.[1]
  if (id === undefined) return undefined
  const row = await repo.accountState(trx, tenantId, Number(id))
  if (row === undefined) return { state: 'deleted', role: 'viewer', scopes: [] }
  const state = row.deleted_at !== null ? 'deleted' : row.disabled_at !== null ? 'disabled' : 'active'
  return { state, role: row.role, scopes: row.scopes }
}

/** The permissions of `role` within `scopes` (null: all of them); `scim` is no permission and never one. */
export const scopedPermissions = (role: string, scopes: readonly string[] | null): Permission[] =>
  permissionsOf([role]).filter(p => scopes === null || scopes.includes(p))

/** A key's caller: the account's role, its permissions within the scopes (null: all of the role; never `scim`). */
export function keyCaller (key: repo.KeyForAuth): AuthContext {
  const scopes = key.scopes === null ? null : new Set(key.scopes)
  const permissions = scopedPermissions(key.role, key.scopes)
  return {
    userId: accountUserId(key.service_account_id),
    tenantId: key.tenant_id,
    email: null,
    orgId: null,
    roles: [key.role],
    effectiveRole: key.role,
    permissions: new Set(permissions),
    exp: Math.floor(key.expires_at.getTime() / 1000),
    apiKey: { keyId: String(key.id), serviceAccountId: String(key.service_account_id), scopes }
  }
}

/** Why a key found by its hash is refused now, or undefined when it is accepted. */
function refusalOf (key: repo.KeyForAuth, now: number): { detail: string, reason: string } | undefined {
  if (key.revoked_at !== null) return { detail: 'API key revoked', reason: 'API key revoked' }
  if (key.deleted_at !== null) return { detail: 'API key revoked', reason: 'service account deleted' }
  if (key.disabled_at !== null) return { detail: 'service account disabled', reason: 'service account disabled' }
  if (key.expires_at.getTime() <= now) {
    return key.replaced_by === null
      ? { detail: 'API key expired', reason: 'API key expired' }
      : { detail: 'API key expired (replaced by a rotation)', reason: 'API key expired after rotation' }
  }
  return undefined
}

interface Use {
  log: FastifyBaseLogger
  change: AuditChange
}

/** Deletes the oldest entry of a bounded map before a new one goes in. */
function makeRoom<K, V> (map: Map<K, V>, key: K): void {
  if (map.size >= CACHE_MAX && !map.has(key)) {
    const oldest = map.keys().next().value
    if (oldest !== undefined) map.delete(oldest)
  }
}

export function createApiKeyEngine (db: Kysely<Database>): ApiKeyEngine {
  /** accepted keys by hash: the caller, until when it is trusted */
  const accepted = new Map<string, { auth: AuthContext, until: number }>()
  /** recent refusals by hash, so that a repeat is logged at debug */
  const refused = new Map<string, { reason: string, until: number }>()
  /** when this process last wrote a key's use, by tenant and key */
  const touched = new Map<string, number>()
  let uses: Use[] = []
  let timer: NodeJS.Timeout | undefined
  let flushing: Promise<void> = Promise.resolve()

  const refuse = (hash: string, detail: string, reason: string, facts: TokenFacts): TokenRefused => {
    const now = Date.now()
    const last = refused.get(hash)
    const repeat = last !== undefined && last.until > now && last.reason === reason
    if (!repeat) {
      refused.delete(hash)
      makeRoom(refused, hash)
      refused.set(hash, { reason, until: now + REFUSED_TTL_MS })
    }
    return new TokenRefused(detail, reason, facts, repeat)
  }

  /** Writes the key's use when this process has not in the last minute (nor, says the row, any process). */
  const touch = async (auth: AuthContext, request: FastifyRequest, now: number): Promise<void> => {
    const keyId = Number(auth.apiKey?.keyId)
    const id = `${auth.tenantId}\u0000${String(keyId)}`
    const last = touched.get(id)
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return
    touched.delete(id)
    makeRoom(touched, id)
    touched.set(id, now)
    try {
      // the system login: bookkeeping of the credential, not a change the request makes (no audit entry of its own)
      await withSystem(db, trx => repo.touchKey(trx, auth.tenantId, keyId, request.ip, new Date(now)))
    } catch (err) {
      touched.delete(id)
      request.log.warn({ err }, 'API key: its last use could not be recorded')
    }
  }

  const flush = async (): Promise<void> => {
    timer = undefined
    const batch = uses
    uses = []
    if (batch.length === 0) return
    const byTenant = new Map<string, Use[]>()
    for (const u of batch) {
      const list = byTenant.get(u.change.tenantId) ?? []
      list.push(u)
      byTenant.set(u.change.tenantId, list)
    }
    for (const [tenantId, list] of byTenant) {
      try {
        await withTenant(db, { tenantId }, trx => recordAudit(trx, list.map(u => u.change)))
      } catch (err) {
        list[0]?.log.error({ err, uses: list.length }, 'API key: uses could not be written to the audit log')
      }
    }
  }

  const flushNow = async (): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer)
    flushing = flushing.then(flush)
    await flushing
  }

  // timers made outside any request, so that the batch's transaction is no request's (audit.ts reads the request)
  const schedule = AsyncResource.bind((): void => {
    timer ??= setTimeout(() => { void flushNow() }, USES_FLUSH_MS).unref()
  })

  const forget = (matches: (auth: AuthContext) => boolean): void => {
    for (const [hash, entry] of accepted) if (matches(entry.auth)) accepted.delete(hash)
  }

  return {
    claims: token => token.startsWith(KEY_PREFIX),

    async verify (token, request) {
      const now = Date.now()
      const hash = hashKey(token)
      const bad = malformation(token)
      if (bad !== undefined) throw refuse(hash, bad, bad, {})
      const hit = accepted.get(hash)
      if (hit !== undefined && hit.until > now) {
        await touch(hit.auth, request, now)
        return hit.auth
      }
      accepted.delete(hash)
      const prefix = lookupIdOf(token)
      const rows = await withSystem(db, trx => repo.findKeysByPrefix(trx, prefix))
      const wanted = Buffer.from(hash, 'hex')
      let key: repo.KeyForAuth | undefined
      // every candidate compared in full, in constant time
      for (const row of rows) {
        const stored = Buffer.from(row.secret_hash, 'hex')
        if (stored.length === wanted.length && crypto.timingSafeEqual(stored, wanted)) key = row
      }
      if (key === undefined) throw refuse(hash, 'unknown API key', 'unknown API key', { kid: prefix })
      const facts: TokenFacts = {
        kid: key.prefix, sub: accountUserId(key.service_account_id), exp: Math.floor(key.expires_at.getTime() / 1000)
      }
      const refusal = refusalOf(key, now)
      if (refusal !== undefined) throw refuse(hash, refusal.detail, refusal.reason, facts)
      refused.delete(hash)
      const auth = keyCaller(key)
      makeRoom(accepted, hash)
      accepted.set(hash, { auth, until: Math.min(now + CACHE_MS, key.expires_at.getTime()) })
      await touch(auth, request, now)
      return auth
    },

    used (request: FastifyRequest, reply: FastifyReply) {
      const auth = request.optionalAuth
      const key = auth?.apiKey
      if (auth === null || key === undefined) return
      const route = request.routeOptions.url ?? null
      uses.push({
        log: request.log,
        change: {
          tenantId: auth.tenantId,
          action: 'api_key.used',
          resourceType: 'api_key',
          resourceId: key.keyId,
          fields: { method: request.method, route, status: reply.statusCode },
          // as audit.ts names a request made with a key: the account, through the key
          actor: {
            kind: 'api_key', id: auth.userId, via: `key:${key.keyId}`, requestId: request.id, address: request.ip
          }
        }
      })
      if (uses.length >= USES_BATCH_MAX) void flushNow()
      else schedule()
    },

    forgetKey (tenantId, keyId) {
      forget(a => a.tenantId === tenantId && a.apiKey?.keyId === String(keyId))
    },

    forgetAccount (tenantId, accountId) {
      forget(a => a.tenantId === tenantId && a.apiKey?.serviceAccountId === String(accountId))
    },

    flushUses: flushNow,

    async close () {
      await flushNow()
    }
  }
}

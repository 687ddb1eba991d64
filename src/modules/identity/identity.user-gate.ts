/**
 * The `UserGate` (src/platform/auth/plugin.ts): a token of a user the provider removed or
 * deactivated is refused even before it expires. A user the users table does not know is allowed
 * (dev tokens, users from before the webhook existed).
 *
 * Each (tenant, user) answer is cached for `ttlMs` (USER_GATE_CACHE_MS, 5 s by default), so a busy user costs one
 * small query every few seconds. The gate also records the organization and roles an active user's token carries
 * (`user_claims`, written only when they change): what reads as the user without a request reads as they are now
 * (docs/security.md). A lifecycle change applied by this process invalidates its entry at once; another instance
 * sees the change within `ttlMs`.
 */
import type { Kysely } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { recordClaims, userState } from './identity.repository.ts'

export const CACHE_TTL_MS = 5_000
const CACHE_MAX = 10_000

export interface UserGateCache {
  /** the gate itself, for `ctx.userGate.current` */
  check (auth: AuthContext): Promise<boolean>
  /** forgets the cached answer for a user (after this process changed them) */
  invalidate (tenantId: string, userId: string): void
}

const keyOf = (tenantId: string, userId: string): string => `${tenantId}\u0000${userId}`

export function createUserGate (db: Kysely<Database>, ttlMs: number = CACHE_TTL_MS): UserGateCache {
  const cache = new Map<string, { allowed: boolean, until: number }>()
  // the claims this process recorded per user (written again only when a token carries others)
  const seen = new Map<string, string>()
  // A lookup that started before an invalidation must not store its (older) answer afterwards.
  let generation = 0

  return {
    async check (auth) {
      const key = keyOf(auth.tenantId, auth.userId)
      const now = Date.now()
      const hit = cache.get(key)
      const verifiedEmail = auth.emailVerified === true ? auth.email : null
      const claims = `${auth.orgId ?? ''}\u0000${[...auth.roles].sort().join(',')}\u0000${verifiedEmail ?? ''}`
      // a token with other claims than the ones recorded (a move to another organization) is looked at again now
      if (hit !== undefined && hit.until > now && (!hit.allowed || seen.get(key) === claims)) return hit.allowed
      const started = generation
      const state = await withTenant(db, { tenantId: auth.tenantId, userId: auth.userId }, async trx => {
        const found = await userState(trx, auth.tenantId, auth.userId)
        // the organization and roles this token carries, for what reads as the user without a request (feeds)
        if (seen.get(key) !== claims && (found === undefined || found === 'active')) {
          const c = {
            tenantId: auth.tenantId,
            userId: auth.userId,
            orgId: auth.orgId,
            roles: auth.roles,
            tokenTime: auth.iat ?? auth.exp,
            verifiedEmail
          }
          await recordClaims(trx, c)
        }
        return found
      })
      const allowed = state === undefined || state === 'active'
      if (allowed) {
        if (seen.size >= CACHE_MAX && !seen.has(key)) {
          const oldest = seen.keys().next().value
          if (oldest !== undefined) seen.delete(oldest)
        }
        seen.set(key, claims)
      }
      if (started === generation) {
        if (cache.size >= CACHE_MAX && !cache.has(key)) {
          const oldest = cache.keys().next().value
          if (oldest !== undefined) cache.delete(oldest)
        }
        cache.set(key, { allowed, until: now + ttlMs })
      }
      return allowed
    },
    invalidate (tenantId, userId) {
      generation++
      cache.delete(keyOf(tenantId, userId))
    }
  }
}

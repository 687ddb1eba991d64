/**
 * The `UserGate` (src/platform/auth/plugin.ts): a token of a user the provider removed or
 * deactivated is refused even before it expires. A user the users table does not know is allowed
 * (dev tokens, users from before the webhook existed).
 *
 * Each (tenant, user) answer is cached for CACHE_TTL_MS, so a busy user costs one small query every
 * few seconds. A lifecycle change applied by this process invalidates its entry at once; another
 * instance sees the change within CACHE_TTL_MS.
 */
import type { Kysely } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { userState } from './identity.repository.ts'

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
  // A lookup that started before an invalidation must not store its (older) answer afterwards.
  let generation = 0

  return {
    async check (auth) {
      const key = keyOf(auth.tenantId, auth.userId)
      const now = Date.now()
      const hit = cache.get(key)
      if (hit !== undefined && hit.until > now) return hit.allowed
      const started = generation
      const state = await withTenant(db, { tenantId: auth.tenantId, userId: auth.userId }, trx =>
        userState(trx, auth.tenantId, auth.userId)
      )
      const allowed = state === undefined || state === 'active'
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

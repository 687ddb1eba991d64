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
 *
 * Directory roles (docs/scim.md, "Groups and roles"): a user's tenant role is the strongest of their token's roles and
 * the roles of their SCIM groups. The SCIM module gives the gate the lookup (`useDirectoryRoles`), read with the state
 * in the same transaction and cached with it; the gate then answers the caller's context with those roles added
 * (`withRoles`). The recorded claims stay the token's own.
 */
import type { Kysely } from 'kysely'
import type { AppContext } from '../../platform/app-context.ts'
import type { Database } from '../../platform/db/database.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { effectiveRole, permissionsOf } from '../../platform/auth/permissions.ts'
import { recordClaims, userState } from './identity.repository.ts'

export const CACHE_TTL_MS = 5_000
const CACHE_MAX = 10_000

/** The roles a user holds besides their token's (their SCIM groups'), read in the gate's transaction. */
export type DirectoryRoles = (trx: Tx, tenantId: string, userId: string) => Promise<readonly string[]>

export interface UserGateCache {
  /** the gate itself, for `ctx.userGate.current`: false refuses; a context carries the directory roles added */
  check (auth: AuthContext): Promise<boolean | AuthContext>
  /** forgets the cached answer for a user (after this process changed them) */
  invalidate (tenantId: string, userId: string): void
  /** sets the lookup of the roles a user holds through the directory (the SCIM module) */
  useDirectoryRoles (lookup: DirectoryRoles): void
}

/** The caller's context with `extra` roles added, or the context itself when they add nothing. */
export function withRoles (auth: AuthContext, extra: readonly string[]): AuthContext {
  const added = extra.filter(r => !auth.roles.includes(r))
  if (added.length === 0) return auth
  const roles = [...auth.roles, ...added]
  return { ...auth, roles, effectiveRole: effectiveRole(roles), permissions: new Set(permissionsOf(roles)) }
}

const keyOf = (tenantId: string, userId: string): string => `${tenantId}\u0000${userId}`

export function createUserGate (db: Kysely<Database>, ttlMs: number = CACHE_TTL_MS): UserGateCache {
  const cache = new Map<string, { allowed: boolean, roles: readonly string[], until: number }>()
  let directoryRoles: DirectoryRoles | undefined
  // the context answered for a token with the roles added, kept while the roles stay the same
  const contexts = new WeakMap<AuthContext, { roles: readonly string[], context: AuthContext }>()
  const answer = (auth: AuthContext, allowed: boolean, roles: readonly string[]): boolean | AuthContext => {
    if (!allowed) return false
    if (roles.length === 0) return true
    const kept = contexts.get(auth)
    if (kept !== undefined && kept.roles === roles) return kept.context
    const context = withRoles(auth, roles)
    contexts.set(auth, { roles, context })
    return context
  }
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
      if (hit !== undefined && hit.until > now && (!hit.allowed || seen.get(key) === claims)) {
        return answer(auth, hit.allowed, hit.roles)
      }
      const started = generation
      // the claims recorded are the service's bookkeeping, no change of the caller's (no audit entry)
      const scope = { tenantId: auth.tenantId, userId: auth.userId, bookkeeping: true }
      const [state, roles] = await withTenant(db, scope, async trx => {
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
        const live = found === undefined || found === 'active'
        const extra = live && directoryRoles !== undefined ? await directoryRoles(trx, auth.tenantId, auth.userId) : []
        return [found, extra] as const
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
        cache.set(key, { allowed, roles, until: now + ttlMs })
      }
      return answer(auth, allowed, roles)
    },
    invalidate (tenantId, userId) {
      generation++
      cache.delete(keyOf(tenantId, userId))
    },
    useDirectoryRoles (lookup) {
      directoryRoles = lookup
    }
  }
}

const gates = new WeakMap<AppContext, UserGateCache>()

/**
 * The app's one user gate (made on first use): the identity module sets it as `ctx.userGate.current` and invalidates
 * it after the webhook's changes; the SCIM module invalidates it after its own and gives it the directory roles.
 */
export function userGateOf (ctx: AppContext): UserGateCache {
  let gate = gates.get(ctx)
  if (gate === undefined) {
    gate = createUserGate(ctx.db, ctx.config.userGateCacheMs)
    gates.set(ctx, gate)
  }
  return gate
}

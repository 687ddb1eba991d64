/**
 * The user lifecycle (docs/identity.md): one function applies a change the identity provider
 * reported, whether it came through the webhook or the resync script, so both follow the same
 * rules:
 *
 * - a user the table does not know is created (a tenant exists from its first user);
 * - a change carrying a provider sequence not above the last one applied changes nothing (stale);
 * - removed is final: later changes of a removed user change nothing (ignored);
 * - removing revokes the user's manager roles and pending invites and ends their space
 *   memberships at once, and keeps what they created (their contacts stay, owned by a user
 *   recorded as removed); deactivating changes none of these (the token gate refuses the user);
 * - a change that alters the stored user writes one domain event (`user.added`, `user.changed`,
 *   `user.deactivated`, `user.reactivated`, `user.removed`) in the same transaction.
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { emit } from '../../platform/outbox.ts'
import * as repo from './identity.repository.ts'
import type { UserRow, UserState } from './identity.table.ts'

export type UserTopic = 'user.added' | 'user.changed' | 'user.deactivated' | 'user.reactivated' | 'user.removed'

export interface UserChange {
  tenantId: string
  userId: string
  /** profile columns to set; an absent key keeps the stored value */
  profile: repo.ProfileValues
  /** the state to set; undefined keeps the stored one (a new user is active) */
  state: UserState | undefined
  /** the provider's sequence for this user, when known */
  sequence: number | undefined
  /** who made the change at the provider (the event's userID) */
  actorId: string | null
  /** where the change came from: the provider's event type, or `resync` */
  source: string
}

export type ChangeOutcome =
  | { outcome: 'applied', user: UserRow, topic: UserTopic | undefined, revoked?: repo.RevokedAccess }
  | { outcome: 'stale' | 'ignored', user: UserRow | undefined }

function topicOf (before: UserRow | undefined, after: UserRow, changedFields: string[]): UserTopic | undefined {
  if (before === undefined) {
    return after.state === 'active' ? 'user.added' : after.state === 'inactive' ? 'user.deactivated' : 'user.removed'
  }
  if (before.state !== after.state) {
    if (after.state === 'removed') return 'user.removed'
    return after.state === 'inactive' ? 'user.deactivated' : 'user.reactivated'
  }
  return changedFields.length > 0 ? 'user.changed' : undefined
}

/**
 * Applies one lifecycle change in the caller's transaction (scoped to `change.tenantId`).
 *
 * @example
 *   await withTenant(db, { tenantId }, trx => applyUserChange(trx, { tenantId, userId, profile: { email }, state:
 * 'active', sequence: 4, actorId: null, source: 'user.human.added' }))
 */
export async function applyUserChange (trx: Tx, change: UserChange): Promise<ChangeOutcome> {
  await repo.lockUser(trx, change.tenantId, change.userId)
  const before = await repo.findUser(trx, change.tenantId, change.userId)
  if (
    before !== undefined &&
    change.sequence !== undefined &&
    before.idp_sequence !== null &&
    change.sequence <= before.idp_sequence
  ) {
    return { outcome: 'stale', user: before }
  }
  if (before?.state === 'removed') return { outcome: 'ignored', user: before }

  const changedFields: string[] = []
  const profile: repo.ProfileValues = {}
  for (const field of repo.PROFILE_FIELDS) {
    if (!(field in change.profile)) continue
    const value = change.profile[field] ?? null
    profile[field] = value
    if (before === undefined ? value !== null : before[field] !== value) changedFields.push(field)
  }
  const state = change.state ?? before?.state ?? 'active'
  const sequence =
    change.sequence === undefined
      ? (before?.idp_sequence ?? null)
      : Math.max(change.sequence, before?.idp_sequence ?? 0)

  const after = await repo.saveUser(trx, change.tenantId, change.userId, { ...profile, state, idp_sequence: sequence })
  const topic = topicOf(before, after, changedFields)
  let revoked: repo.RevokedAccess | undefined
  if (after.state === 'removed') {
    revoked = await repo.revokeUserAccess(trx, change.tenantId, change.userId, after.email)
  }
  if (topic !== undefined) {
    await emit(trx, {
      tenantId: change.tenantId,
      topic,
      aggregateType: 'user',
      aggregateId: change.userId,
      actorId: change.actorId,
      payload: {
        user_id: change.userId,
        state: after.state,
        fields: changedFields,
        source: change.source,
        ...(change.sequence !== undefined ? { sequence: change.sequence } : {}),
        ...(topic === 'user.added' ? { email: after.email, display_name: repo.displayNameOf(after) } : {}),
        ...(revoked !== undefined ? { revoked } : {})
      }
    })
  }
  return { outcome: 'applied', user: after, topic, ...(revoked !== undefined ? { revoked } : {}) }
}

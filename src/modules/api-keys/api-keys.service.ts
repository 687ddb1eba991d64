/**
 * The use cases of service accounts and their keys, each in the caller's tenant transaction with its audit entries
 * (the audit log's `service_account.*` and `api_key.*` actions; never a key, only its id and lookup id). They write no
 * domain event: no other module reacts to them (docs/api-keys.md, "What is audited").
 */
import { recordAudit } from '../../platform/audit.ts'
import { permissionsOf } from '../../platform/auth/permissions.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { error404NotFound, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { newApiKey } from './api-keys.format.ts'
import * as repo from './api-keys.repository.ts'
import type { CreateServiceAccountBody, PatchServiceAccountBody } from './api-keys.schemas.ts'
import type { ServiceAccountRole } from './api-keys.table.ts'

/** Keys of one account accepted at once (rotation overlaps included). */
export const LIVE_KEYS_MAX = 10

const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000

/**
 * Refuses scopes the role does not grant (400 at the offending `body.scopes[i]`, or at `body.role` when the role
 * changed under scopes kept): a scope only narrows a role. `scim` needs role admin.
 */
export function checkScopes (
  role: ServiceAccountRole, scopes: readonly string[] | null | undefined, blame: 'scopes' | 'role'
): void {
  if (scopes === null || scopes === undefined) return
  const granted = new Set<string>(permissionsOf([role]))
  for (const [i, scope] of scopes.entries()) {
    const allowed = scope === 'scim' ? role === 'admin' : granted.has(scope)
    if (allowed) continue
    const why = scope === 'scim' ? 'scope scim needs role admin' : `role ${role} does not grant ${scope}`
    if (blame === 'role') throw invalidField('body.role', `${why}: change the scopes as well`, role)
    throw invalidField(`body.scopes[${i}]`, why, scope)
  }
}

export async function createAccount (
  trx: Tx, auth: AuthContext, body: CreateServiceAccountBody, at: Date
): Promise<repo.AccountView> {
  checkScopes(body.role, body.scopes, 'scopes')
  const account = await repo.insertAccount(trx, auth.tenantId, {
    name: body.name, role: body.role, scopes: body.scopes ?? null, created_by: auth.userId
  }, at)
  await recordAudit(trx, {
    tenantId: auth.tenantId,
    action: 'service_account.created',
    resourceType: 'service_account',
    resourceId: account.id,
    fields: { name: account.name, role: account.role, scopes: account.scopes }
  })
  return account
}

/** A service account of the tenant, locked, or 404. */
async function lockedAccount (trx: Tx, auth: AuthContext, id: number): Promise<repo.AccountView> {
  const account = await repo.lockAccount(trx, auth.tenantId, id)
  if (account === undefined) throw error404NotFound('service account not found')
  return account
}

export async function patchAccount (
  trx: Tx, auth: AuthContext, id: number, body: PatchServiceAccountBody, at: Date
): Promise<repo.AccountView> {
  const current = await lockedAccount(trx, auth, id)
  const role = body.role ?? current.role
  if (body.scopes !== undefined) checkScopes(role, body.scopes, 'scopes')
  else if (body.role !== undefined) checkScopes(role, current.scopes, 'role')
  const change: repo.AccountChange = {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.role !== undefined ? { role: body.role } : {}),
    ...(body.scopes !== undefined ? { scopes: body.scopes } : {}),
    ...(body.disabled !== undefined && body.disabled !== (current.disabled_at !== null)
      ? { disabled_at: body.disabled ? at : null }
      : {})
  }
  const updated = await repo.updateAccount(trx, auth.tenantId, id, change, at)
  await recordAudit(trx, {
    tenantId: auth.tenantId,
    action: 'service_account.updated',
    resourceType: 'service_account',
    resourceId: id,
    fields: {
      fields: Object.keys(change).map(k => k === 'disabled_at' ? 'disabled' : k),
      ...(change.role !== undefined ? { role: change.role } : {}),
      ...(change.scopes !== undefined ? { scopes: change.scopes } : {}),
      ...(change.disabled_at !== undefined ? { disabled: change.disabled_at !== null } : {})
    }
  })
  return updated
}

/** Deletes a service account: its keys are revoked (each audited), the account is gone from the API. */
export async function deleteAccount (trx: Tx, auth: AuthContext, id: number, at: Date): Promise<void> {
  await lockedAccount(trx, auth, id)
  const revoked = await repo.revokeAccountKeys(trx, auth.tenantId, id, at)
  await repo.deleteAccount(trx, auth.tenantId, id, at)
  await recordAudit(trx, [
    ...revoked.map(k => ({
      tenantId: auth.tenantId,
      action: 'api_key.revoked',
      resourceType: 'api_key',
      resourceId: k.id,
      fields: { service_account_id: id, lookup_id: k.prefix, reason: 'service account deleted' }
    })),
    {
      tenantId: auth.tenantId,
      action: 'service_account.deleted',
      resourceType: 'service_account',
      resourceId: id,
      fields: { revoked_key_ids: revoked.map(k => k.id) }
    }
  ])
}

/** 409 when the account holds LIVE_KEYS_MAX keys accepted now. */
async function roomForKey (trx: Tx, auth: AuthContext, accountId: number, at: Date): Promise<void> {
  if (await repo.countLiveKeys(trx, auth.tenantId, accountId, at) >= LIVE_KEYS_MAX) {
    throw error409Conflict(`a service account holds at most ${LIVE_KEYS_MAX} live keys: revoke one first`, [
      fieldError('path.id', 'too many live keys', accountId)
    ], 'credential_limit')
  }
}

export interface IssuedKey { view: repo.KeyView, secret: string }

async function issueKey (
  trx: Tx, auth: AuthContext, accountId: number, days: number, rotatedFrom: number | null, at: Date
): Promise<IssuedKey> {
  const { key, prefix, hash } = newApiKey()
  const view = await repo.insertKey(trx, auth.tenantId, {
    service_account_id: accountId,
    prefix,
    secret_hash: hash,
    created_by: auth.userId,
    expires_at: new Date(at.getTime() + days * DAY_MS),
    rotated_from: rotatedFrom
  }, at)
  await recordAudit(trx, {
    tenantId: auth.tenantId,
    action: 'api_key.created',
    resourceType: 'api_key',
    resourceId: view.id,
    fields: {
      service_account_id: accountId, lookup_id: prefix, expires_at: view.expires_at, rotated_from_id: rotatedFrom
    }
  })
  return { view, secret: key }
}

export async function createKey (
  trx: Tx, auth: AuthContext, accountId: number, days: number, at: Date
): Promise<IssuedKey> {
  await lockedAccount(trx, auth, accountId)
  await roomForKey(trx, auth, accountId, at)
  return await issueKey(trx, auth, accountId, days, null, at)
}

/** A key of the account, locked, or 404. */
async function lockedKey (trx: Tx, auth: AuthContext, accountId: number, keyId: number): Promise<repo.KeyView> {
  await lockedAccount(trx, auth, accountId)
  const key = await repo.lockKey(trx, auth.tenantId, accountId, keyId)
  if (key === undefined) throw error404NotFound('API key not found')
  return key
}

/**
 * Rotates a key: a new key of the same account, and the old one accepted until the overlap ends (or its own expiry,
 * when sooner). 409 for a key revoked, expired or already rotated.
 */
export async function rotateKey (
  trx: Tx, auth: AuthContext, accountId: number, keyId: number, overlapHours: number, days: number, at: Date
): Promise<IssuedKey> {
  const old = await lockedKey(trx, auth, accountId, keyId)
  const state = old.revoked_at !== null
    ? 'revoked'
    : old.replaced_by !== null ? 'already rotated' : old.expires_at.getTime() <= at.getTime() ? 'expired' : undefined
  if (state !== undefined) {
    throw error409Conflict(
      `the API key is ${state}: make a new key instead`, [fieldError('path.key_id', state, keyId)], 'api_key_not_live'
    )
  }
  const issued = await issueKey(trx, auth, accountId, days, old.id, at)
  const until = new Date(Math.min(old.expires_at.getTime(), at.getTime() + overlapHours * HOUR_MS))
  await repo.markRotated(trx, auth.tenantId, old.id, issued.view.id, until)
  await recordAudit(trx, {
    tenantId: auth.tenantId,
    action: 'api_key.rotated',
    resourceType: 'api_key',
    resourceId: old.id,
    fields: {
      service_account_id: accountId, lookup_id: old.prefix, replaced_by_id: issued.view.id, expires_at: until
    }
  })
  return issued
}

/** Revokes a key (refused from now on); a key revoked already stays as it is. */
export async function revokeKey (trx: Tx, auth: AuthContext, accountId: number, keyId: number, at: Date) {
  const key = await lockedKey(trx, auth, accountId, keyId)
  if (key.revoked_at !== null) return
  await repo.revokeKey(trx, auth.tenantId, keyId, at)
  await recordAudit(trx, {
    tenantId: auth.tenantId,
    action: 'api_key.revoked',
    resourceType: 'api_key',
    resourceId: keyId,
    fields: { service_account_id: accountId, lookup_id: key.prefix }
  })
}

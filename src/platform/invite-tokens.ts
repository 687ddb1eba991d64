/**
 * Invitation tokens (event, series and space managers). The plain token leaves once, in the invite
 * response and its e-mail; only its SHA-256 (hex) is stored, so a database read cannot accept an
 * invite. Every module hashes the same way, which lets one accept flow find any invite, and checks
 * the accepting caller the same way (`assertInviteRecipient`).
 */
import crypto from 'node:crypto'
import type { AuthContext } from './auth/verify.ts'
import type { Tx } from './db/tenant.ts'
import { error403Forbidden } from './http/errors.ts'

/** Days a pending invite stays valid (upstream: 7). */
export const INVITE_TTL_DAYS = 7

/** The stored form of an invite token. */
export const hashInviteToken = (token: string): string =>
  crypto.createHash('sha256').update(token, 'utf8').digest('hex')

/**
 * A fresh unguessable token (256 bits, base64url) and the hash to store.
 *
 * @example
 *   const { token, hash } = newInviteToken()
 */
export function newInviteToken (): { token: string, hash: string } {
  const token = crypto.randomBytes(32).toString('base64url')
  return { token, hash: hashInviteToken(token) }
}

/** The comparable form of an e-mail address: trimmed, lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase()

/**
 * Only the addressee accepts an invite: 403 unless the invite names an e-mail and the caller's
 * token carries an e-mail, and that token e-mail or the caller's stored profile e-mail (`users`,
 * not removed) matches it, compared trimmed and case-insensitively. A token without an e-mail is
 * refused with a detail saying so (the profile alone does not prove who holds the token).
 *
 * @example
 *   await assertInviteRecipient(trx, request.auth, invite.invited_email)
 */
export async function assertInviteRecipient (trx: Tx, auth: AuthContext, invitedEmail: string | null): Promise<void> {
  if (invitedEmail === null || normalizeEmail(invitedEmail) === '') {
    throw error403Forbidden('the invite names no e-mail address and cannot be accepted', 'invite_for_another_address')
  }
  if (auth.email === null || normalizeEmail(auth.email) === '') {
    throw error403Forbidden(
      'your token carries no e-mail address; sign in with the invited e-mail address to accept the invite',
      'invite_for_another_address'
    )
  }
  const wanted = normalizeEmail(invitedEmail)
  if (normalizeEmail(auth.email) === wanted) return
  const profile = await trx.selectFrom('users').select('email')
    .where('tenant_id', '=', auth.tenantId).where('id', '=', auth.userId).where('state', '<>', 'removed')
    .executeTakeFirst()
  if (profile?.email !== null && profile?.email !== undefined && normalizeEmail(profile.email) === wanted) return
  throw error403Forbidden('the invite was sent to another e-mail address', 'invite_for_another_address')
}

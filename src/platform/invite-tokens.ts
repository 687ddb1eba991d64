/**
 * Invitation tokens (event, series and space managers). The plain token leaves once, in the invite
 * response and its e-mail; only its SHA-256 (hex) is stored, so a database read cannot accept an
 * invite. Every module hashes the same way, which lets one accept flow find any invite.
 */
import crypto from 'node:crypto'

/** Days a pending invite stays valid (upstream: 7). */
export const INVITE_TTL_DAYS = 7

/** The stored form of an invite token. */
export const hashInviteToken = (token: string): string => crypto.createHash('sha256').update(token, 'utf8').digest('hex')

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

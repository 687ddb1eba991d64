/**
 * A guest's links (docs/guests.md, "Links"): random tokens mailed to the guest, only their SHA-256 kept
 * (migration 0035, `guest_tokens`). `manage` opens the guest's own registration (answer, cancel, calendar file,
 * updates); `confirm` is the double opt-in of a public registration. Every mail carries a link of its own, so a
 * guest may hold several live links; a rotation revokes all of them at once and mails one new link.
 *
 * A link is live while it is not revoked, before its `expires_at`, and (for `manage`) until a week after its event
 * ends, read at each use, so a link follows the event when it moves. A link names no tenant: it is found by hash on
 * the system login (`findGuestToken`, as calendar feed tokens are), then everything runs in the link's tenant.
 */
import crypto from 'node:crypto'
import { sql } from 'kysely'
import { rowChunks } from '../../platform/db/chunks.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { EventRow } from '../events/index.ts'
import { endOf } from './attendees.transitions.ts'

export const GUEST_TOKEN_PURPOSES = ['manage', 'confirm'] as const
export type GuestTokenPurpose = typeof GUEST_TOKEN_PURPOSES[number]

const DAY_MS = 86_400_000
/** A manage link lives until this long after its event ends (the guest may still fetch the calendar file). */
export const MANAGE_AFTER_EVENT_MS = 7 * DAY_MS
/** …and at most this long after it was mailed (an event without dates never ends). */
export const MANAGE_MAX_MS = 400 * DAY_MS
/** The double opt-in link of a public registration: this long to follow it. */
export const CONFIRM_HOURS = 48

/** The stored form of a guest token. */
export const hashGuestToken = (token: string): string => crypto.createHash('sha256').update(token).digest('hex')

/** Whether a string can be a guest token at all (43 base64url characters): anything else is refused unread. */
export const isGuestTokenShape = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(token)

/** When a new link of `purpose` for an attendee of `event` stops working. */
export function guestTokenExpiry (purpose: GuestTokenPurpose, event: Pick<EventRow, 'end_dt' | 'start_dt'>,
  now = new Date()): Date {
  if (purpose === 'confirm') return new Date(now.getTime() + CONFIRM_HOURS * 3_600_000)
  const end = endOf(event)
  const cap = now.getTime() + MANAGE_MAX_MS
  return new Date(end === null ? cap : Math.min(cap, Math.max(now.getTime(), end.getTime()) + MANAGE_AFTER_EVENT_MS))
}

/**
 * Issues one new link of `purpose` per attendee of the tenant, all expiring at `expiresAt`: the plain tokens by
 * attendee id (they leave in mails, never in an answer). Multi-row VALUES per chunk (Citus: no INSERT … SELECT).
 */
export async function issueGuestTokens (
  trx: Tx,
  tenantId: string,
  attendeeIds: readonly number[],
  purpose: GuestTokenPurpose,
  expiresAt: Date
): Promise<Map<number, string>> {
  const tokens = new Map<number, string>()
  const rows = [...new Set(attendeeIds)].map(id => {
    const token = crypto.randomBytes(32).toString('base64url')
    tokens.set(id, token)
    return { tenant_id: tenantId, attendee_id: id, purpose, token_hash: hashGuestToken(token), expires_at: expiresAt }
  })
  for (const chunk of rowChunks(rows, 5)) await trx.insertInto('guest_tokens').values(chunk).execute()
  return tokens
}

/** A live-looking link by its hash, in any tenant (run on the system login): its tenant, attendee and purpose. */
export async function findGuestToken (trx: Tx, token: string) {
  if (!isGuestTokenShape(token)) return undefined
  return await trx.selectFrom('guest_tokens')
    .select(['tenant_id', 'id', 'attendee_id', 'purpose', 'expires_at'])
    .where('token_hash', '=', hashGuestToken(token))
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst()
}

/** Revokes every live link of the attendees (of one purpose, or all): a rotation, or a confirmation used up. */
export async function revokeGuestTokens (
  trx: Tx,
  tenantId: string,
  attendeeIds: readonly number[],
  purpose?: GuestTokenPurpose
): Promise<number> {
  if (attendeeIds.length === 0) return 0
  const rows = await trx.updateTable('guest_tokens').set({ revoked_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`attendee_id = any(${[...attendeeIds]}::bigint[])`)
    .where('revoked_at', 'is', null)
    .$if(purpose !== undefined, qb => qb.where('purpose', '=', purpose ?? 'manage'))
    .returning('id')
    .execute()
  return rows.length
}

/** Records a use of a link, at most once an hour. */
export async function touchGuestToken (trx: Tx, tenantId: string, id: number): Promise<void> {
  await trx.updateTable('guest_tokens').set({ last_used_at: sql<Date>`date_trunc('hour', now())` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .where(eb => eb.or([
      eb('last_used_at', 'is', null),
      eb('last_used_at', '<', sql<Date>`date_trunc('hour', now())`)
    ]))
    .execute()
}

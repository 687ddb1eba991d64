/**
 * The SQL of check-in, check-out and check-in tokens. Every write addresses an attendee row already locked by
 * `lockAttendee` or `lockByTokenHash` (its `id`), in the transaction that locked its event.
 */
import crypto from 'node:crypto'
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { ATTENDEE_COLUMNS } from './attendees.repository.ts'
import type { AttendeeStatus, CheckInMethod } from './attendees.table.ts'

/** What a check-in write reads of the locked row: the API's columns and the two it keeps to itself. */
const LOCKED_COLUMNS = [...ATTENDEE_COLUMNS, 'status_before_check_in', 'check_in_token_hash'] as const

/** The stored form of a check-in token: SHA-256, hex. */
export const hashCheckInToken = (token: string): string =>
  crypto.createHash('sha256').update(token, 'utf8').digest('hex')

/** A fresh check-in token (256 bits, base64url) and its hash. */
export function newCheckInToken (): { token: string, hash: string } {
  const token = crypto.randomBytes(32).toString('base64url')
  return { token, hash: hashCheckInToken(token) }
}

/** The attendee of an event, locked (`for update`); undefined when the contact does not attend. */
export async function lockAttendee (trx: Tx, tenantId: string, eventId: number, contactId: string) {
  return await trx.selectFrom('attendees').select(LOCKED_COLUMNS)
    .where('tenant_id', '=', tenantId).where('event_id', '=', eventId).where('contact_id', '=', contactId)
    .forUpdate().executeTakeFirst()
}

/**
 * The attendee of an event holding the token of `hash` (revoked or not), locked; undefined when no attendee of this
 * event holds it (another event's token is not told apart from an unknown one). Index attendees_check_in_token.
 */
export async function lockByTokenHash (trx: Tx, tenantId: string, eventId: number, hash: string) {
  return await trx.selectFrom('attendees').select(LOCKED_COLUMNS)
    .where('tenant_id', '=', tenantId).where('check_in_token_hash', '=', hash).where('event_id', '=', eventId)
    .forUpdate().executeTakeFirst()
}

export type LockedAttendee = NonNullable<Awaited<ReturnType<typeof lockAttendee>>>

const byId = (tenantId: string, id: number) => ({ tenantId, id })

function updateAttendee (trx: Tx, key: { tenantId: string, id: number }) {
  return trx.updateTable('attendees').where('tenant_id', '=', key.tenantId).where('id', '=', key.id)
}

/** Checks an attendee in who is not inside: who, how and when, and the status to return to on undo. */
export async function markCheckedIn (
  trx: Tx,
  tenantId: string,
  id: number,
  v: { by: string, method: CheckInMethod, previous: AttendeeStatus }
) {
  return await updateAttendee(trx, byId(tenantId, id))
    .set({
      status: 'checked_in',
      is_checked_in: true,
      checked_in_at: sql`now()`,
      checked_in_by: v.by,
      check_in_method: v.method,
      status_before_check_in: v.previous,
      checked_out_at: null,
      checked_out_by: null,
      updated_at: sql`now()`
    })
    .returning(ATTENDEE_COLUMNS).executeTakeFirstOrThrow()
}

/** Lets a checked-out attendee back in: the first check-in (at, by, method) stays, the check-out is cleared. */
export async function markReEntered (trx: Tx, tenantId: string, id: number) {
  return await updateAttendee(trx, byId(tenantId, id))
    .set({ checked_out_at: null, checked_out_by: null, updated_at: sql`now()` })
    .returning(ATTENDEE_COLUMNS).executeTakeFirstOrThrow()
}

/** Undoes a check-in: back to `restored`, as if the attendee had never come in. */
export async function undoCheckIn (trx: Tx, tenantId: string, id: number, restored: AttendeeStatus) {
  return await updateAttendee(trx, byId(tenantId, id))
    .set({
      status: restored,
      is_checked_in: false,
      checked_in_at: null,
      checked_in_by: null,
      check_in_method: null,
      status_before_check_in: null,
      checked_out_at: null,
      checked_out_by: null,
      updated_at: sql`now()`
    })
    .returning(ATTENDEE_COLUMNS).executeTakeFirstOrThrow()
}

/** Checks an attendee out (the status stays checked_in: they attended). */
export async function markCheckedOut (trx: Tx, tenantId: string, id: number, by: string) {
  return await updateAttendee(trx, byId(tenantId, id))
    .set({ checked_out_at: sql`now()`, checked_out_by: by, updated_at: sql`now()` })
    .returning(ATTENDEE_COLUMNS).executeTakeFirstOrThrow()
}

/** Stores the hash of a new token (replacing any earlier one, revoked or not); when it was issued. */
export async function issueToken (trx: Tx, tenantId: string, id: number, hash: string): Promise<Date> {
  const row = await updateAttendee(trx, byId(tenantId, id))
    .set({
      check_in_token_hash: hash,
      check_in_token_issued_at: sql`now()`,
      check_in_token_revoked_at: null,
      updated_at: sql`now()`
    })
    .returning('check_in_token_issued_at').executeTakeFirstOrThrow()
  if (row.check_in_token_issued_at === null) throw new Error('check_in_token_issued_at was not set')
  return row.check_in_token_issued_at
}

/** Revokes the token (the hash stays, so that a revoked token is recognised as such). */
export async function revokeToken (trx: Tx, tenantId: string, id: number): Promise<void> {
  await updateAttendee(trx, byId(tenantId, id))
    .set({ check_in_token_revoked_at: sql`now()`, updated_at: sql`now()` })
    .execute()
}

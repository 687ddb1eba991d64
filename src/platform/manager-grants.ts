/**
 * The rules that event, series and space manager grants share, whatever the resource: nobody grants themselves,
 * a grant that outranks the caller stays out of their reach, and an invitee's e-mail is shown only to who may
 * manage the resource's managers.
 */
import type { AuthContext } from './auth/verify.ts'
import { ApiError, fieldError } from './http/errors.ts'

/** Why the caller may not change or remove a grant holding permissions the caller does not hold. */
export const OUTRANKS =
  'this manager holds permissions you do not hold, so you may not change or remove their grant'

/** 403 when the caller names themselves: their own grant is changed by another manager. */
export function refuseSelf (auth: AuthContext, userId: string, location: string): void {
  if (userId === auth.userId) {
    throw new ApiError(403, 'nobody adds or changes their own manager grant; ask another manager', [
      fieldError(location, 'the caller', userId)
    ])
  }
}

/**
 * The rows with each pending invitee's e-mail, or with null in its place unless `mayManage` (asked only when a
 * row holds an e-mail).
 */
export async function maskInvitees<T extends { invited_email: string | null }> (
  rows: T[],
  mayManage: () => Promise<boolean>
): Promise<T[]> {
  if (rows.every(r => r.invited_email === null) || (await mayManage())) return rows
  return rows.map(r => ({ ...r, invited_email: null }))
}

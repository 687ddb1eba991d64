/**
 * The rules that event, series and space manager grants share, whatever the resource: nobody grants themselves,
 * a grant that outranks the caller stays out of their reach, and an invitee's e-mail is shown only to who may
 * manage the resource's managers.
 */
import type { AuthContext } from './auth/verify.ts'
import type { Tx } from './db/tenant.ts'
import { ApiError, fieldError } from './http/errors.ts'
import { notifyUser } from './notifications/notifications.ts'
import { managerAdded } from './notifications/templates.ts'

/** Why the caller may not change or remove a grant holding permissions the caller does not hold. */
export const OUTRANKS =
  'this manager holds permissions you do not hold, so you may not change or remove their grant'

/** 403 when the caller names themselves: their own grant is changed by another manager. */
export function refuseSelf (auth: AuthContext, userId: string, location: string): void {
  if (userId === auth.userId) {
    throw new ApiError(403, 'nobody adds or changes their own manager grant; ask another manager', [
      fieldError(location, 'the caller', userId)
    ], {}, 'self_grant')
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

/** What an add-manager body of an event or a space says of the notification to the new manager. */
export interface ManagerNotice {
  user_id: string
  notify?: boolean | undefined
  channels?: readonly string[] | null | undefined
  message?: string | undefined
  priority?: 'normal' | 'high' | undefined
}

/**
 * Tells a manager just added, when the request asks for it (`notify: true`), on the channels it names (e-mail
 * unless it names others), in the transaction that adds the manager.
 */
export async function notifyManagerAdded (
  trx: Tx,
  auth: AuthContext,
  on: { on: 'event' | 'space', id: number, title: string },
  b: ManagerNotice
): Promise<void> {
  if (b.notify !== true) return
  await notifyUser(trx, {
    tenantId: auth.tenantId,
    userId: b.user_id,
    channels: b.channels ?? ['email'],
    template: managerAdded({ ...on, userId: b.user_id, message: b.message }),
    priority: b.priority ?? 'normal',
    payload: { actor_id: auth.userId }
  })
}

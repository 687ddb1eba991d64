/**
 * The managers a clone of an event takes (`POST /events/{id}/clone`, docs/events.md "Clone"): `CloneParts.managers`,
 * given to the events module by src/app.ts. The events module checked `managers:manage` on the source before.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { emitMany } from '../../platform/outbox.ts'
import { eventDomainEvent, type EventRow, rootEventId } from '../events/index.ts'
import * as repo from './event-managers.repository.ts'

/**
 * The active managers of `source` (its published row's own rows: not its pending invitations, not the managers of its
 * series, which the clone leaves) as active managers of `clone`, each with the same role and permissions and an
 * `event.manager_added`. The clone's creator (the caller) is left out: a creator holds every permission and no
 * manager row. Their user ids.
 */
export async function copyManagers (trx: Tx, auth: AuthContext, source: EventRow, clone: EventRow): Promise<string[]> {
  const rows = (await repo.activeManagersOf(trx, auth.tenantId, rootEventId(source)))
    .flatMap(r => r.user_id === null || r.user_id === clone.creator_id
      ? []
      : [{ userId: r.user_id, permissions: r.permissions, role: r.role }])
  if (rows.length === 0) return []
  const on = { tenantId: auth.tenantId, eventId: clone.id, orgId: clone.org_id, invitedBy: auth.userId }
  await repo.insertManagers(trx, on, rows)
  await emitMany(trx, rows.map(r => eventDomainEvent(auth, clone, 'event.manager_added', {
    template: clone.template, user_id: r.userId, role: r.role, permissions: r.permissions
  })))
  return rows.map(r => r.userId)
}

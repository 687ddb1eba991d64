/**
 * What a caller holds on an event or a series, and the rule that a grant never exceeds it
 * (docs/event-collaboration.md, "Who may grant what").
 *
 * - On an event: tenant admins and the event's creator (of the published row, for a draft clone)
 *   hold every permission; anyone else holds
 *   the union of their active manager rows of the event (`event_id` = the published row) and of
 *   its series (`series_id`), each read with `grantedPermissions` (a role replaces the list).
 * - On a series: tenant admins and the series' creator hold everything; anyone else holds the
 *   union of their active series-level rows (`series_id` set). An event-level row, even of the
 *   series' anchor occurrence, gives nothing at series level.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { ApiError, fieldError } from '../../platform/http/errors.ts'
import {
  activeGrantsOn, activeSeriesGrants, creatorOfEvent, creatorOfSeries, EVENT_PERMISSIONS, type EventPermission,
  type EventRow, grantedPermissions, isTenantAdmin, rootEventId
} from '../events/index.ts'

export type Held = ReadonlySet<EventPermission>

const everything = (): Set<EventPermission> => new Set(EVENT_PERMISSIONS)

function union (rows: Array<{ role: string | null, permissions: string[] }>): Set<EventPermission> {
  const held = new Set<EventPermission>()
  for (const r of rows) for (const p of grantedPermissions(r)) held.add(p)
  return held
}

/** The event permissions the caller holds on an event row (its published row's managers and its series' managers). */
export async function heldOnEvent (trx: Tx, auth: AuthContext, row: EventRow): Promise<Held> {
  if (isTenantAdmin(auth)) return everything()
  const root = rootEventId(row)
  // a draft clone is judged by its published row: that row's creator holds everything
  const creator = root === row.id ? row.creator_id : await creatorOfEvent(trx, auth.tenantId, root)
  if (creator === auth.userId) return everything()
  return union(await activeGrantsOn(trx, auth, root, row.series_id))
}

/** The event permissions the caller holds at series level (admin, series creator, series-level manager rows). */
export async function heldOnSeries (trx: Tx, auth: AuthContext, seriesId: number): Promise<Held> {
  if (isTenantAdmin(auth)) return everything()
  if (await creatorOfSeries(trx, auth.tenantId, seriesId) === auth.userId) return everything()
  return union(await activeSeriesGrants(trx, auth, seriesId))
}

/** The permissions of `grant` that `held` lacks, in catalogue order. */
export function notHeld (grant: Iterable<string>, held: Held): string[] {
  const wanted = new Set(grant)
  return EVENT_PERMISSIONS.filter(p => wanted.has(p) && !held.has(p))
}

/**
 * 403 unless every permission of the grant is held: the detail starts with `what` and lists the
 * missing permissions; `location` names the request field that carries the grant
 * (`body.permissions`) or the row concerned (`path.user_id`).
 *
 * @example
 *   assertWithin(grant.permissions, await heldOnEvent(trx, auth, event), 'body.permissions', 'a grant may not exceed
 * your own rights')
 */
export function assertWithin (grant: Iterable<string>, held: Held, location: string, what: string): void {
  const missing = notHeld(grant, held)
  if (missing.length > 0) {
    throw new ApiError(403, `${what}; not held by you: ${missing.join(', ')}`, [
      fieldError(location, 'permissions the caller does not hold', missing)
    ], {}, 'grant_exceeds_own')
  }
}

/**
 * Series-level grants (invites with `series_id`, written by the series module) need series-level
 * rights: 403 unless the caller holds `managers:manage` and every permission of the grant at series
 * level.
 */
export async function assertSeriesGrant (
  trx: Tx,
  auth: AuthContext,
  seriesId: number,
  grant: Iterable<string>,
  location: string
): Promise<void> {
  const held = await heldOnSeries(trx, auth, seriesId)
  if (!held.has('managers:manage')) {
    throw new ApiError(
      403,
      "series-level grants need managers:manage on the series (tenant admin, the series' creator or a series manager)",
      [fieldError(location, 'a series-level grant')]
    )
  }
  assertWithin(grant, held, location, 'a series-level grant may not exceed your rights on the series')
}

/**
 * Who may change a series (docs/series.md, "Permissions"): the series of an occurrence, series-level
 * rights, and the lock every series write starts with.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import {
  activeSeriesGrants, type EventPermission, type EventRow, grantedPermissions, isTenantAdmin,
  lockById as lockEventById, lockEventForWrite
} from '../events/index.ts'
import * as repo from './series.repository.ts'
import type { SeriesRow } from './series.table.ts'

/** The live series of an occurrence row (404 when it has none). */
export async function seriesOfRow (trx: Tx, tenantId: string, row: EventRow, lock: boolean): Promise<SeriesRow> {
  const s = row.series_id === null ? undefined : await repo.findSeries(trx, tenantId, row.series_id, lock)
  if (s === undefined) throw error404NotFound('the event is not an occurrence of a series')
  return s
}

/**
 * Series-level rights (docs/series.md, "Permissions"): a tenant admin, the series' creator, or an
 * active series manager (an `event_managers` row with this `series_id`) whose grant includes
 * `permission`. Each of them holds the permission on every occurrence too (the creator of the
 * series creates every occurrence; a series-manager row applies to every occurrence), so a
 * series-wide change never touches an occurrence its caller could not change on its own.
 */
export async function hasSeriesPermission (
  trx: Tx,
  auth: AuthContext,
  s: Pick<SeriesRow, 'id' | 'creator_id'>,
  permission: EventPermission
): Promise<boolean> {
  if (isTenantAdmin(auth) || s.creator_id === auth.userId) return true
  const grants = await activeSeriesGrants(trx, auth, s.id)
  return grants.some(m => grantedPermissions(m).has(permission))
}

/** 403 unless the caller holds `permission` at series level (a change beyond the addressed occurrence). */
export async function requireSeriesPermission (
  trx: Tx,
  auth: AuthContext,
  s: SeriesRow,
  permission: EventPermission
): Promise<void> {
  if (!(await hasSeriesPermission(trx, auth, s, permission))) {
    throw error403Forbidden(
      `missing series permission ${permission}: changing more than this occurrence needs it for the whole series ` +
      '(admin, series creator or series manager)'
    )
  }
}

/**
 * Locks an occurrence (with `permission` on it) and its series; `level` 'series' also asks for
 * the permission at series level (every change beyond the addressed occurrence).
 */
export async function lockForSeriesWrite (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  permission: EventPermission,
  level: 'series' | 'occurrence',
  ifMatch?: string
) {
  const row = await lockEventForWrite(trx, auth, eventId, permission, { includeDraftClones: true })
  const occurrence = row.published_id === null ? row : await lockEventById(trx, auth.tenantId, row.published_id)
  const series = await seriesOfRow(trx, auth.tenantId, occurrence, true)
  if (level === 'series') await requireSeriesPermission(trx, auth, series, permission)
  checkIfMatch(ifMatch, series.revision)
  return { occurrence, series }
}

/**
 * Reconciliation with the identity provider (docs/identity.md, "Resync"). The provider does not
 * retry a failed delivery, so an operator exports the provider's users and applies the export with
 * `scripts/idp-resync.ts`. Each user goes through `applyUserChange`, the function the webhook uses,
 * in its own transaction: same rules, same domain events, nothing written when nothing differs.
 *
 * An export is a JSON array of users (or `{ "users": [...] }`, or ZITADEL's `{ "result": [...] }`).
 * A user is either flat:
 *   { "userId", "resourceOwner", "state", "email"?, "displayName"?, "firstName"?, "lastName"?,
 *     "userName"?, "avatarUrl"?, "sequence"? }
 * or as ZITADEL's user service (v2) lists it: `userId`, `details.resourceOwner`, `details.sequence`,
 * `state: USER_STATE_…`, `username`, `human.profile.{givenName,familyName,displayName,avatarUrl}`,
 * `human.email.email`, `machine.name`. A field the export does not carry keeps its stored value.
 */
import type { Kysely } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import * as repo from './identity.repository.ts'
import { applyUserChange, type ChangeOutcome } from './identity.service.ts'
import type { UserState } from './identity.table.ts'

export interface ExportedUser {
  userId: string
  tenantId: string
  state: UserState
  profile: repo.ProfileValues
  sequence: number | undefined
}

const STATES: Record<string, UserState> = {
  active: 'active',
  initial: 'active',
  inactive: 'inactive',
  locked: 'inactive',
  deactivated: 'inactive',
  removed: 'removed',
  deleted: 'removed'
}

export class ExportError extends Error {
  constructor (readonly problems: string[]) {
    super(
      'invalid user export: ' +
      `${problems.slice(0, 10).join('; ')}${problems.length > 10 ? `; … (${problems.length} problems)` : ''}`
    )
    this.name = 'ExportError'
  }
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
const at = (o: unknown, ...path: string[]): unknown => path.reduce<unknown>((v, k) => isObj(v) ? v[k] : undefined, o)

/** Reads an export, naming every problem by its position (`[3].state`). */
export function parseExport (json: unknown): ExportedUser[] {
  const list = Array.isArray(json)
    ? json
    : isObj(json) && Array.isArray(json.users)
      ? json.users
      : isObj(json) && Array.isArray(json.result)
        ? json.result
        : undefined
  if (list === undefined) throw new ExportError(['expected an array of users, or an object with "users" or "result"'])
  const problems: string[] = []
  const out: ExportedUser[] = []
  list.forEach((u: unknown, i: number) => {
    if (!isObj(u)) {
      problems.push(`[${i}]: expected an object`)
      return
    }
    const text = (name: string, ...candidates: unknown[]): string | null | undefined => {
      for (const v of candidates) {
        if (v === undefined) continue
        if (v === null) return null
        if (typeof v !== 'string') {
          problems.push(`[${i}].${name}: expected a string`)
          return undefined
        }
        return v.trim() === '' ? null : v.trim()
      }
      return undefined
    }
    const userId = text('userId', u.userId, u.id)
    const tenantId = text('resourceOwner', u.resourceOwner, at(u, 'details', 'resourceOwner'))
    if (userId === undefined || userId === null) problems.push(`[${i}].userId: required`)
    if (tenantId === undefined || tenantId === null) problems.push(`[${i}].resourceOwner: required`)
    const rawState = u.state
    const state = typeof rawState === 'string' ? STATES[rawState.toLowerCase().replace(/^user_state_/, '')] : undefined
    if (state === undefined) {
      problems.push(
        `[${i}].state: expected active, inactive, locked, initial, removed or deleted (USER_STATE_… accepted)`
      )
    }
    const rawSeq = u.sequence ?? at(u, 'details', 'sequence')
    const sequence =
      typeof rawSeq === 'number' || (typeof rawSeq === 'string' && /^\d+$/.test(rawSeq)) ? Number(rawSeq) : undefined
    if (rawSeq !== undefined && (sequence === undefined || !Number.isSafeInteger(sequence))) {
      problems.push(`[${i}].sequence: expected a whole number`)
    }

    const profile: repo.ProfileValues = {}
    const set = (field: keyof repo.ProfileValues, v: string | null | undefined) => {
      if (v !== undefined) profile[field] = v
    }
    set('email', text('email', u.email, at(u, 'human', 'email', 'email')))
    set('first_name', text('firstName', u.firstName, at(u, 'human', 'profile', 'givenName')))
    set('last_name', text('lastName', u.lastName, at(u, 'human', 'profile', 'familyName')))
    set(
      'display_name',
      text('displayName', u.displayName, at(u, 'human', 'profile', 'displayName'), at(u, 'machine', 'name'))
    )
    set('username', text('userName', u.userName, u.username, u.preferredLoginName))
    set('avatar_url', text('avatarUrl', u.avatarUrl, at(u, 'human', 'profile', 'avatarUrl')))
    if (profile.email !== undefined && profile.email !== null && profile.email.length > 320) {
      problems.push(`[${i}].email: expected length <= 320`)
    }

    if (typeof userId === 'string' && typeof tenantId === 'string' && state !== undefined) {
      out.push({ userId, tenantId, state, profile, sequence })
    }
  })
  if (problems.length > 0) throw new ExportError(problems)
  return out
}

export interface ResyncReport {
  /** users created or changed */
  changed: number
  unchanged: number
  /** the stored user has a newer provider sequence than the export */
  stale: number
  /** removed users stay removed */
  ignored: number
  /** users of an exported tenant that the export no longer lists, marked removed (`removeMissing`) */
  removedMissing: number
  dryRun: boolean
}

export interface ResyncOptions {
  /** mark removed the users of each exported tenant that the export does not list */
  removeMissing?: boolean
  /** compute the report, write nothing */
  dryRun?: boolean
}

class Rollback extends Error {
  constructor (readonly result: ChangeOutcome) { super('dry run') }
}

async function applyOne (
  db: Kysely<Database>,
  tenantId: string,
  run: (trx: Parameters<Parameters<typeof withTenant>[2]>[0]) => Promise<ChangeOutcome>,
  dryRun: boolean
): Promise<ChangeOutcome> {
  try {
    return await withTenant(db, { tenantId }, async trx => {
      const result = await run(trx)
      if (dryRun) throw new Rollback(result)
      return result
    })
  } catch (err) {
    if (err instanceof Rollback) return err.result
    throw err
  }
}

/**
 * Applies an export: each user in its own transaction, through the webhook's rules.
 *
 * @example
 *   const report = await resyncUsers(db, parseExport(JSON.parse(text)), { removeMissing: true })
 */
export async function resyncUsers (
  db: Kysely<Database>,
  users: readonly ExportedUser[],
  options: ResyncOptions = {}
): Promise<ResyncReport> {
  const dryRun = options.dryRun === true
  const report: ResyncReport = { changed: 0, unchanged: 0, stale: 0, ignored: 0, removedMissing: 0, dryRun }
  const count = (r: ChangeOutcome) => {
    if (r.outcome === 'applied') {
      if (r.topic !== undefined) report.changed++
      else report.unchanged++
    } else {
      report[r.outcome]++
    }
  }
  const listed = new Map<string, Set<string>>()
  for (const u of users) {
    const ids = listed.get(u.tenantId) ?? new Set<string>()
    ids.add(u.userId)
    listed.set(u.tenantId, ids)
    count(
      await applyOne(
        db,
        u.tenantId,
        trx =>
          applyUserChange(trx, {
            tenantId: u.tenantId,
            userId: u.userId,
            profile: u.profile,
            state: u.state,
            sequence: u.sequence,
            actorId: null,
            source: 'resync'
          }),
        dryRun
      )
    )
  }
  if (options.removeMissing === true) {
    for (const [tenantId, ids] of listed) {
      const live = await withTenant(db, { tenantId }, trx => repo.listLiveUserIds(trx, tenantId))
      for (const userId of live.filter(id => !ids.has(id))) {
        const r = await applyOne(
          db,
          tenantId,
          trx =>
            applyUserChange(trx, {
              tenantId,
              userId,
              profile: {},
              state: 'removed',
              sequence: undefined,
              actorId: null,
              source: 'resync'
            }),
          dryRun
        )
        if (r.outcome === 'applied' && r.topic === 'user.removed') report.removedMissing++
      }
    }
  }
  return report
}

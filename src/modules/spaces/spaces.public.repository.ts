/**
 * SQL of the public space page: only published, public (visibility 40), non-deleted spaces and
 * the public profile fields of people (display_name, first_name, last_name, username, avatar_url).
 */
import { sql } from 'kysely'
import { countOf, firstRows, totalIn } from '../../platform/db/list-page.ts'
import { together } from '../../platform/db/together.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { creationOrder, type KeyColumn } from '../../platform/http/cursor.ts'
import { memberOrder } from './spaces.people.repository.ts'
import { PUBLIC } from './spaces.schemas.ts'

export const PREVIEW_MANAGERS = 12
export const PREVIEW_MEMBERS = 24
export const SUBSPACES_MAX = 50
export const UPCOMING_MAX = 10

const PROFILE = ['u.display_name', 'u.first_name', 'u.last_name', 'u.username', 'u.avatar_url'] as const

const SHOWN = [
  'spaces.id',
  'spaces.title',
  'spaces.description',
  'spaces.timezone',
  'spaces.visibility',
  'spaces.published_at'
] as const

/** The orders of the previews: subspaces by position, people oldest first. */
const BY_POSITION: KeyColumn[] = [
  { ref: 'spaces.position', dir: 'asc', type: 'int' },
  { ref: 'spaces.id', dir: 'asc', type: 'int' }
]
const MANAGERS_BY_AGE = creationOrder('asc', 'm')
const MEMBERS_BY_AGE = memberOrder('sm')

function publicSpaces (trx: Tx, tenantId: string) {
  return trx.selectFrom('spaces')
    .where('spaces.tenant_id', '=', tenantId).where('spaces.status', '=', 'published')
    .where('spaces.visibility', '=', PUBLIC).where('spaces.is_deleted', '=', false)
}

/**
 * A public space that was published and is unpublished now (still in the public directory: docs/spaces.md,
 * "Unpublish"): its title and whether its feed shows its events cancelled. Its anonymous feed answers with that.
 */
export async function findWithdrawnSpace (trx: Tx, tenantId: string, id: number) {
  return await trx.selectFrom('spaces').select(['spaces.title', 'spaces.cancel_in_feeds'])
    .where('spaces.tenant_id', '=', tenantId).where('spaces.id', '=', id)
    .where('spaces.status', '=', 'draft').where('spaces.published_at', 'is not', null)
    .where('spaces.visibility', '=', PUBLIC).where('spaces.is_deleted', '=', false)
    .executeTakeFirst()
}

export async function findPublicSpace (trx: Tx, tenantId: string, id: number) {
  const row = await publicSpaces(trx, tenantId)
    .select([...SHOWN, 'spaces.creator_id', 'spaces.org_id'])
    .where('spaces.id', '=', id)
    .executeTakeFirst()
  if (row === undefined) return undefined
  const parent = await publicSpaces(trx, tenantId)
    .innerJoin('space_parents as p', j =>
      j.onRef('p.tenant_id', '=', 'spaces.tenant_id').onRef('p.parent_id', '=', 'spaces.id')
    )
    .where('p.space_id', '=', id)
    .select('spaces.id')
    .orderBy('spaces.id')
    .executeTakeFirst()
  return { ...row, parent_id: parent?.id }
}

export async function publicChildren (trx: Tx, tenantId: string, id: number) {
  const base = publicSpaces(trx, tenantId)
    .innerJoin('space_parents as p', j =>
      j.onRef('p.tenant_id', '=', 'spaces.tenant_id').onRef('p.space_id', '=', 'spaces.id')
    )
    .where('p.parent_id', '=', id)
  const { items, total } = await firstRows(trx, base, qb => qb.select(SHOWN), BY_POSITION, SUBSPACES_MAX)
  return { items: items.map(s => ({ ...s, parent_id: id })), total }
}

export async function managerProfiles (trx: Tx, tenantId: string, id: number) {
  const base = trx.selectFrom('space_managers as m')
    .leftJoin('users as u', j => j.onRef('u.tenant_id', '=', 'm.tenant_id').onRef('u.id', '=', 'm.user_id'))
    .where('m.tenant_id', '=', tenantId).where('m.space_id', '=', id).where('m.status', '=', 'active')
    .where(eb => eb.or([eb('u.state', 'is', null), eb('u.state', '<>', 'removed')]))
  return await firstRows(trx, base, qb => qb.select(PROFILE), MANAGERS_BY_AGE, PREVIEW_MANAGERS)
}

export async function memberProfiles (trx: Tx, tenantId: string, id: number) {
  const base = trx.selectFrom('space_members as sm')
    .leftJoin('users as u', j => j.onRef('u.tenant_id', '=', 'sm.tenant_id').onRef('u.id', '=', 'sm.user_id'))
    .where('sm.tenant_id', '=', tenantId).where('sm.space_id', '=', id).where('sm.is_active', '=', true)
    .where(eb => eb.or([eb('u.state', 'is', null), eb('u.state', '<>', 'removed')]))
  return await firstRows(trx, base, qb => qb.select(PROFILE), MEMBERS_BY_AGE, PREVIEW_MEMBERS)
}

export async function ownerProfile (trx: Tx, tenantId: string, userId: string) {
  return await trx.selectFrom('users as u').select(PROFILE)
    .where('u.tenant_id', '=', tenantId).where('u.id', '=', userId).where('u.state', '<>', 'removed')
    .executeTakeFirst()
}

export interface PublicEvent {
  id: number
  title: string
  timezone: string
  address: string | null
  description: string | null
  start_dt: Date | null
  end_dt: Date | null
  /** for the HTML page (schema.org eventStatus, geo): not in the JSON page's schema, which leaves them out */
  cancelled_at: Date | null
  latitude: number | null
  longitude: number | null
}

/** Published public events linked to the space: their count, and those that have not ended, soonest first. */
export async function publicEvents (
  trx: Tx,
  tenantId: string,
  id: number
): Promise<{ items: PublicEvent[]; total: number }> {
  const base = trx
    .selectFrom('event_spaces as es')
    .innerJoin('events as e', j => j.onRef('e.tenant_id', '=', 'es.tenant_id').onRef('e.id', '=', 'es.event_id'))
    .where('es.tenant_id', '=', tenantId)
    .where('es.space_id', '=', id)
    .where('e.status', '=', 'published')
    .where('e.visibility', '=', PUBLIC)
    .where('e.is_deleted', '=', false)
    .where('e.published_id', 'is', null)
  const [items, count] = await together(trx, [
    base
      .select([
        'e.id', 'e.title', 'e.timezone', 'e.address', 'e.description', 'e.start_dt', 'e.end_dt',
        'e.cancelled_at', 'e.latitude', 'e.longitude'
      ])
      .where(sql<boolean>`coalesce(e.end_dt, e.start_dt, 'infinity'::timestamptz) >= now()`)
      .orderBy(sql`e.start_dt asc nulls last`)
      .orderBy('e.id')
      .limit(UPCOMING_MAX),
    countOf(base)
  ])
  return { items, total: totalIn(count) }
}

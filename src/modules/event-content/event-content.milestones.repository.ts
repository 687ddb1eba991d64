/**
 * SQL of milestones: events that mark the progress of a base event, and the graph they form (event-
 * collab.milestones.routes.ts).
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { deleteRows } from '../../platform/db/match.ts'
import { listScope, pageWindow, type KeyColumn, type PageParams } from '../../platform/http/cursor.ts'
import type { EventRow } from '../events/index.ts'
import type { MilestoneStatus } from './event-content.table.ts'

// ---- milestones

export const MILESTONE_COLUMNS = [
  'm.id', 'm.base_event_id', 'm.milestone_event_id', 'm.sequence', 'm.series_id', 'm.status', 'm.status_mode',
  'm.status_updated_at', 'm.created_at', 'm.updated_at'
] as const

/**
 * The status derived from the milestone event (docs/event-collaboration.md): completed once it
 * ended (its end, else its start, is past); active while it runs; ready when it is published and
 * still ahead; planned otherwise (a draft, or no dates).
 */
export function derivedStatus (
  e: Pick<EventRow, 'start_dt' | 'end_dt' | 'status'>,
  now: Date = new Date()
): MilestoneStatus {
  const start = e.start_dt?.getTime()
  const end = (e.end_dt ?? e.start_dt)?.getTime()
  if (end !== undefined && end <= now.getTime() && (start === undefined || start <= now.getTime())) return 'completed'
  if (start !== undefined && start <= now.getTime()) return 'active'
  if (e.status === 'published') return 'ready'
  return 'planned'
}

function milestones (trx: Tx, tenantId: string) {
  return trx
    .selectFrom('event_milestones as m')
    .innerJoin('events as e', join =>
      join.onRef('e.tenant_id', '=', 'm.tenant_id').onRef('e.id', '=', 'm.milestone_event_id')
    )
    .where('m.tenant_id', '=', tenantId)
}

/** A milestone's columns and what its derived status is computed from: its event's dates and status. */
const withEvent = (qb: ReturnType<typeof milestones>) =>
  qb.select([...MILESTONE_COLUMNS, 'e.start_dt', 'e.end_dt', 'e.status as event_status'])

/** Milestones with their status: derived ones computed now from the milestone event. */
function present<
  T extends {
    status: MilestoneStatus
    status_mode: string
    start_dt: Date | null
    end_dt: Date | null
    event_status: EventRow['status']
  }
> (rows: T[]) {
  return rows.map(({ start_dt: startDt, end_dt: endDt, event_status: eventStatus, ...r }) => ({
    ...r,
    status:
      r.status_mode === 'derived' ? derivedStatus({ start_dt: startDt, end_dt: endDt, status: eventStatus }) : r.status
  }))
}

const MILESTONE_KEYS: KeyColumn[] = [
  { ref: 'm.sequence', dir: 'asc', type: 'int' },
  { ref: 'm.id', dir: 'asc', type: 'int' }
]

export async function listMilestones (trx: Tx, tenantId: string, baseId: number, q: PageParams) {
  const window = pageWindow(q, listScope('milestones', { baseId }), MILESTONE_KEYS)
  const base = milestones(trx, tenantId).where('m.base_event_id', '=', baseId)
  const page = await listPage(trx, base, withEvent, MILESTONE_KEYS, window)
  return { ...page, items: present(page.items) }
}

export async function findMilestone (trx: Tx, tenantId: string, baseId: number, milestoneId: number) {
  const rows = await milestones(trx, tenantId)
    .where('m.base_event_id', '=', baseId)
    .where('m.milestone_event_id', '=', milestoneId)
    .$call(withEvent)
    .execute()
  return present(rows)[0]
}

/** Whether `to` is reachable from `from` through milestone edges (base → milestone). */
export async function reaches (trx: Tx, tenantId: string, from: number, to: number): Promise<boolean> {
  const row = await sql<{ found: boolean }>`
    with recursive reach(id) as (
      select milestone_event_id from event_milestones where tenant_id = ${tenantId} and base_event_id = ${from}
      union
      select m.milestone_event_id from event_milestones m join reach r on m.base_event_id = r.id
        where m.tenant_id = ${tenantId}
    )
    select exists (select 1 from reach where id = ${to}) as found`.execute(trx)
  return row.rows[0]?.found === true
}

/** Serializes milestone writes of a tenant, so two concurrent additions cannot close a cycle. */
export async function lockMilestoneGraph (trx: Tx, tenantId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`event-milestones|${tenantId}`}, 0))`.execute(trx)
}

export async function insertMilestone (
  trx: Tx,
  v: {
    tenantId: string
    baseId: number
    milestoneId: number
    orgId: string | null
    sequence: number
    status: MilestoneStatus
  }
) {
  return await trx
    .insertInto('event_milestones')
    .values({
      tenant_id: v.tenantId,
      base_event_id: v.baseId,
      milestone_event_id: v.milestoneId,
      org_id: v.orgId,
      sequence: v.sequence,
      status: v.status,
      status_mode: 'derived',
      status_updated_at: sql`now()`
    })
    .onConflict(oc =>
      oc
        .columns(['tenant_id', 'base_event_id', 'milestone_event_id'])
        .where('base_event_id', 'is not', null)
        .doNothing()
    )
    .returning('id')
    .executeTakeFirst()
}

export async function updateMilestone (
  trx: Tx,
  tenantId: string,
  baseId: number,
  milestoneId: number,
  values: { sequence?: number; status?: MilestoneStatus; status_mode?: 'derived' | 'manual' }
) {
  const statusChange = values.status !== undefined || values.status_mode !== undefined
  const row = await trx
    .updateTable('event_milestones')
    .set({ ...values, updated_at: sql`now()`, ...(statusChange ? { status_updated_at: sql`now()` } : {}) })
    .where('tenant_id', '=', tenantId)
    .where('base_event_id', '=', baseId)
    .where('milestone_event_id', '=', milestoneId)
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

export async function deleteMilestone (
  trx: Tx,
  tenantId: string,
  baseId: number,
  milestoneId: number
): Promise<boolean> {
  const match = { tenant_id: tenantId, base_event_id: baseId, milestone_event_id: milestoneId }
  return await deleteRows(trx, 'event_milestones', match) > 0
}

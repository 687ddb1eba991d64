/** All SQL of milestones, linked documents, attachments and cross-reference links. */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import { afterKey, listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { EventRow } from '../events/events.table.ts'
import type { MilestoneStatus } from './event-collab.table.ts'

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

export async function listMilestones (
  trx: Tx,
  tenantId: string,
  baseId: number,
  q: { page: number; size: number; cursor?: string | undefined }
) {
  const window = pageWindow(q, listScope('milestones', { baseId }), MILESTONE_KEYS)
  const base = milestones(trx, tenantId).where('m.base_event_id', '=', baseId)
  const [rows, count] = await Promise.all([
    base
      .select([...MILESTONE_COLUMNS, 'e.start_dt', 'e.end_dt', 'e.status as event_status'])
      .$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, MILESTONE_KEYS, window.after ?? [])))
      .orderBy('m.sequence')
      .orderBy('m.id')
      .limit(window.limit)
      .offset(window.offset)
      .execute(),
    base.select(eb => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const page = pageOf(rows, window, r => [r.sequence, r.id])
  return { ...page, items: present(page.items), total: Number(count.total) }
}

export async function findMilestone (trx: Tx, tenantId: string, baseId: number, milestoneId: number) {
  const rows = await milestones(trx, tenantId)
    .where('m.base_event_id', '=', baseId)
    .where('m.milestone_event_id', '=', milestoneId)
    .select([...MILESTONE_COLUMNS, 'e.start_dt', 'e.end_dt', 'e.status as event_status'])
    .execute()
  return present(rows)[0]
}

/** Whether `to` is reachable from `from` through milestone edges (base → milestone). */
export async function reaches (trx: Tx, tenantId: string, from: number, to: number): Promise<boolean> {
  const row = await sql<{ found: boolean }>`
    with recursive reach(id) as (
      select milestone_event_id from event_milestones where tenant_id = ${tenantId} and base_event_id = ${from}
      union
      select m.milestone_event_id from event_milestones m join reach r on m.base_event_id = r.id where m.tenant_id = ${tenantId}
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
  const r = await trx
    .deleteFrom('event_milestones')
    .where('tenant_id', '=', tenantId)
    .where('base_event_id', '=', baseId)
    .where('milestone_event_id', '=', milestoneId)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

// ---- documents

const DOCUMENT_COLUMNS = ['id', 'event_id', 'document_id', 'org_id', 'created_by', 'created_at'] as const

export async function listDocuments (trx: Tx, tenantId: string, eventId: number, limit: number) {
  return await trx
    .selectFrom('event_documents')
    .select(DOCUMENT_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute()
}

export async function insertDocument (
  trx: Tx,
  v: { tenantId: string; eventId: number; orgId: string | null; documentId: string; createdBy: string }
) {
  return await trx
    .insertInto('event_documents')
    .values({
      tenant_id: v.tenantId,
      event_id: v.eventId,
      org_id: v.orgId,
      document_id: v.documentId,
      created_by: v.createdBy
    })
    .onConflict(oc => oc.columns(['tenant_id', 'event_id', 'document_id']).doNothing())
    .returning(DOCUMENT_COLUMNS)
    .executeTakeFirst()
}

export async function deleteDocument (
  trx: Tx, tenantId: string, eventId: number, documentId: string
): Promise<boolean> {
  const r = await trx
    .deleteFrom('event_documents')
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .where('document_id', '=', documentId)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

// ---- attachments

const ATTACHMENT_COLUMNS = [
  'id',
  'event_id',
  'series_id',
  'org_id',
  'kind',
  'ref',
  'metadata',
  'created_by',
  'created_at'
] as const

/** Attachments of an occurrence and those its series shares. */
export async function listAttachments (
  trx: Tx,
  tenantId: string,
  event: { id: number; seriesId: number | null },
  kind: string | undefined,
  limit: number
) {
  return await trx
    .selectFrom('event_attachments')
    .select(ATTACHMENT_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where(eb =>
      event.seriesId === null
        ? eb('event_id', '=', event.id)
        : eb.or([
          eb('event_id', '=', event.id),
          eb.and([eb('event_id', 'is', null), eb('series_id', '=', event.seriesId)])
        ])
    )
    .$if(kind !== undefined && kind !== '', qb => qb.where('kind', '=', kind ?? ''))
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute()
}

export async function insertAttachment (
  trx: Tx,
  v: {
    tenantId: string
    eventId: number
    orgId: string | null
    kind: string
    ref: string
    metadata: Record<string, unknown>
    createdBy: string
  }
) {
  return await trx
    .insertInto('event_attachments')
    .values({
      tenant_id: v.tenantId,
      event_id: v.eventId,
      org_id: v.orgId,
      kind: v.kind,
      ref: v.ref,
      metadata: JSON.stringify(v.metadata),
      created_by: v.createdBy
    })
    .returning(ATTACHMENT_COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function findAttachment (trx: Tx, tenantId: string, id: number) {
  return await trx
    .selectFrom('event_attachments')
    .select(ATTACHMENT_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
}

export async function deleteAttachment (trx: Tx, tenantId: string, id: number): Promise<void> {
  await trx.deleteFrom('event_attachments').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

// ---- links

const LINK_COLUMNS = ['id', 'event_id', 'target_id', 'series_id', 'created_at'] as const

/** Links of an occurrence and those held by its series. */
export async function listLinks (
  trx: Tx,
  tenantId: string,
  event: { id: number; seriesId: number | null },
  limit: number
) {
  return await trx
    .selectFrom('event_links')
    .select(LINK_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where(eb =>
      event.seriesId === null
        ? eb('event_id', '=', event.id)
        : eb.or([
          eb('event_id', '=', event.id),
          eb.and([eb('event_id', 'is', null), eb('series_id', '=', event.seriesId)])
        ])
    )
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute()
}

export async function insertLink (
  trx: Tx,
  v: { tenantId: string; eventId: number; targetId: number; orgId: string | null; createdBy: string }
) {
  return await trx
    .insertInto('event_links')
    .values({
      tenant_id: v.tenantId,
      event_id: v.eventId,
      target_id: v.targetId,
      org_id: v.orgId,
      created_by: v.createdBy
    })
    .onConflict(oc => oc.columns(['tenant_id', 'event_id', 'target_id']).where('event_id', 'is not', null).doNothing())
    .returning(LINK_COLUMNS)
    .executeTakeFirst()
}

export async function deleteLink (trx: Tx, tenantId: string, eventId: number, targetId: number): Promise<boolean> {
  const r = await trx
    .deleteFrom('event_links')
    .where('tenant_id', '=', tenantId)
    .where('event_id', '=', eventId)
    .where('target_id', '=', targetId)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

/** Removes the links a series holds to a target; the number removed. */
export async function deleteSeriesLinks (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  targetId: number
): Promise<number> {
  const r = await trx
    .deleteFrom('event_links')
    .where('tenant_id', '=', tenantId)
    .where('series_id', '=', seriesId)
    .where('target_id', '=', targetId)
    .executeTakeFirst()
  return Number(r.numDeletedRows)
}

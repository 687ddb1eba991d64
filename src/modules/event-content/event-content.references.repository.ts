/**
 * SQL of what an event refers to: linked documents, attachments and cross-reference links (event-
 * collab.references.routes.ts).
 */
import { deleteRows, selectRows } from '../../platform/db/match.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { type OccurrenceRef, ofEventOrSeries } from '../attendees/index.ts'

// ---- documents

const DOCUMENT_COLUMNS = ['id', 'event_id', 'document_id', 'org_id', 'created_by', 'created_at'] as const

export async function listDocuments (trx: Tx, tenantId: string, eventId: number, limit: number) {
  return await selectRows(trx, 'event_documents', { tenant_id: tenantId, event_id: eventId })
    .select(DOCUMENT_COLUMNS)
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
  return await deleteRows(trx, 'event_documents', {
    tenant_id: tenantId, event_id: eventId, document_id: documentId
  }) > 0
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
  event: OccurrenceRef,
  kind: string | undefined,
  limit: number
) {
  return await trx
    .selectFrom('event_attachments')
    .select(ATTACHMENT_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where(ofEventOrSeries(event))
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
export async function listLinks (trx: Tx, tenantId: string, event: OccurrenceRef, limit: number) {
  return await trx
    .selectFrom('event_links')
    .select(LINK_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where(ofEventOrSeries(event))
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
  return await deleteRows(trx, 'event_links', { tenant_id: tenantId, event_id: eventId, target_id: targetId }) > 0
}

/** Removes the links a series holds to a target; the number removed. */
export async function deleteSeriesLinks (
  trx: Tx,
  tenantId: string,
  seriesId: number,
  targetId: number
): Promise<number> {
  return await deleteRows(trx, 'event_links', { tenant_id: tenantId, series_id: seriesId, target_id: targetId })
}

/**
 * The audit log's reads (docs/audit.md): sealed entries of one tenant, newest first, by the filters of the list and
 * the export. Entries are written by the platform (src/platform/audit.ts) and sealed by src/platform/audit-chain.ts.
 */
import type { AuditActorKind } from '../../platform/audit.ts'
import { listPage } from '../../platform/db/list-page.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { KeysetPageQuery } from '../../platform/http/schema.ts'

export const AUDIT_COLUMNS = [
  'seq', 'id', 'at', 'actor_type', 'actor_id', 'via', 'request_id', 'address', 'action', 'resource_type',
  'resource_id', 'contact_id', 'fields', 'prev_hash', 'hash'
] as const

/** The filters of the list and the export. */
export interface AuditFilter {
  actor_type?: AuditActorKind | undefined
  actor_id?: string | undefined
  action?: string | undefined
  resource_type?: string | undefined
  resource_id?: string | undefined
  contact_id?: string | undefined
  since?: string | undefined
  until?: string | undefined
}

/** What a sealed entry has (the list and the export read only those). */
interface Sealed { seq: number, prev_hash: string, hash: string }

const KEYS: KeyColumn[] = [{ ref: 'seq', dir: 'desc', type: 'int' }]

function filtered (trx: Tx, tenantId: string, f: AuditFilter) {
  return trx.selectFrom('audit_log')
    .where('tenant_id', '=', tenantId)
    .where('seq', 'is not', null)
    .$if(f.actor_type !== undefined, qb => qb.where('actor_type', '=', f.actor_type ?? 'user'))
    .$if(f.actor_id !== undefined, qb => qb.where('actor_id', '=', f.actor_id ?? ''))
    .$if(f.action !== undefined, qb => qb.where('action', '=', f.action ?? ''))
    .$if(f.resource_type !== undefined, qb => qb.where('resource_type', '=', f.resource_type ?? ''))
    .$if(f.resource_id !== undefined, qb => qb.where('resource_id', '=', f.resource_id ?? ''))
    .$if(f.contact_id !== undefined, qb => qb.where('contact_id', '=', f.contact_id ?? ''))
    .$if(f.since !== undefined, qb => qb.where('at', '>=', new Date(f.since ?? 0)))
    .$if(f.until !== undefined, qb => qb.where('at', '<', new Date(f.until ?? 0)))
}

/** A page of the tenant's sealed entries matching `f`, newest (highest position) first. */
export async function listEntries (trx: Tx, tenantId: string, q: KeysetPageQuery & AuditFilter) {
  const { page, size, cursor, ...f } = q
  const window = pageWindow(q, listScope('audit', f as Record<string, unknown>), KEYS)
  const columns = (qb: ReturnType<typeof filtered>) => qb.select(AUDIT_COLUMNS).$narrowType<Sealed>()
  return await listPage(trx, filtered(trx, tenantId, f), columns, KEYS, window)
}

/** The next chunk of an export: entries matching `f` below position `before` (all when undefined), newest first. */
export async function entryChunk (
  trx: Tx, tenantId: string, f: AuditFilter, before: number | undefined, limit: number
) {
  return await filtered(trx, tenantId, f)
    .$if(before !== undefined, qb => qb.where('seq', '<', before ?? 0))
    .select(AUDIT_COLUMNS).$narrowType<Sealed>().orderBy('seq', 'desc').limit(limit).execute()
}

/** Every sealed entry about a contact or by a user, oldest first (a data-subject export; at most `limit`). */
export async function entriesAbout (
  trx: Tx, tenantId: string, subject: { contactId: string | number } | { userId: string }, limit: number
) {
  return await trx.selectFrom('audit_log').select(AUDIT_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where(eb => 'contactId' in subject
      ? eb('contact_id', '=', String(subject.contactId))
      : eb('actor_id', '=', subject.userId))
    .orderBy('id').limit(limit).execute()
}

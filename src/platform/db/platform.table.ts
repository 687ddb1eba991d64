import type { ColumnType, Generated, JSONColumnType } from 'kysely'

/**
 * A timestamptz column: read as Date, written as Date or ISO string, optional on insert (it has a default or may be
 * null).
 */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
export type Json<T extends object | null = Record<string, unknown>> = JSONColumnType<T, T | string, T | string>

export interface OutboxTable {
  tenant_id: string
  id: Generated<number>
  topic: string
  aggregate_type: string
  aggregate_id: string
  actor_id: string | null
  payload: Json
  depth: Generated<number>
  created_at: Timestamp
  processed_at: Timestamp | null
}

export interface IdempotencyKeysTable {
  tenant_id: string
  user_id: string
  key: string
  method: string
  path: string
  request_hash: string
  status_code: number | null
  response_headers: Json<Record<string, string>> | null
  response_body: string | null
  created_at: Timestamp
  expires_at: Timestamp
}

export interface NotificationOutboxTable {
  tenant_id: string
  id: Generated<number>
  channel: string
  recipient: string
  subject: string
  body: string
  priority: Generated<string>
  payload: Generated<Json>
  status: Generated<string>
  attempts: Generated<number>
  last_error: string | null
  created_at: Timestamp
  sent_at: Timestamp | null
}

/** Who made a change of the audit log (src/platform/audit.ts, AUDIT_ACTOR_KINDS). */
export type AuditActorKind =
  'user' | 'api_key' | 'guest' | 'anonymous' | 'identity_provider' | 'automation' | 'scim' | 'system'

/** One change of the tenant audit log (migration 0043, docs/audit.md); seq, prev_hash and hash are set when sealed. */
export interface AuditLogTable {
  tenant_id: string
  id: Generated<number>
  at: Timestamp
  actor_type: AuditActorKind
  actor_id: string | null
  via: string | null
  request_id: string | null
  address: string | null
  action: string
  resource_type: string
  resource_id: string | null
  contact_id: string | null
  fields: Json
  seq: number | null
  prev_hash: string | null
  hash: string | null
}

/** The head of a tenant's audit chain, and where retention cut its start. */
export interface AuditHeadsTable {
  tenant_id: string
  seq: Generated<number>
  hash: Generated<string>
  pruned_seq: Generated<number>
  pruned_hash: Generated<string>
}

export interface PlatformTables {
  audit_log: AuditLogTable
  audit_heads: AuditHeadsTable
  outbox: OutboxTable
  idempotency_keys: IdempotencyKeysTable
  notification_outbox: NotificationOutboxTable
}

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

export interface PlatformTables {
  outbox: OutboxTable
  idempotency_keys: IdempotencyKeysTable
  notification_outbox: NotificationOutboxTable
}

/**
 * The tables of the webhooks module (migrations/0025_webhooks.sql, 0047_webhook_attempts.sql). They are not part of
 * the shared `Database` interface: the repository reaches them through `withTables<WebhooksTables>()`.
 */
import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export type WebhookSubscriptionsTable = {
  tenant_id: string
  id: Generated<string>
  url: string
  event_types: string[]
  description: string | null
  enabled: Generated<boolean>
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  created_by: string
  created_by_email: string | null
  /** the roles and organization the creator's token carried (migration 0033): whom the subscription reads as */
  created_by_roles: Generated<string[]>
  created_by_org: string | null
  consecutive_failures: Generated<number>
  failing_since: Date | null
  /** when a delivery last succeeded (migration 0047) */
  last_success_at: Date | null
  disabled_reason: string | null
  disabled_at: Date | null
  revision: Generated<number>
  created_at: Timestamp
  updated_at: Timestamp
}

export type WebhookDeliveriesTable = {
  tenant_id: string
  id: Generated<string>
  subscription_id: string
  outbox_id: number | null
  msg_id: string
  event_type: string
  body: unknown
  status: Generated<'pending' | 'succeeded' | 'failed'>
  attempts: Generated<number>
  next_attempt_at: Date | null
  last_status_code: number | null
  last_duration_ms: number | null
  last_error: string | null
  last_attempt_at: Date | null
  delivered_at: Date | null
  created_at: Timestamp
}

/** Why an attempt got no answer (or none taken): the network error's kind; null when the receiver answered. */
export const ATTEMPT_ERROR_KINDS = ['timeout', 'refused', 'dns', 'connection', 'tls', 'response', 'other'] as const
export type AttemptErrorKind = typeof ATTEMPT_ERROR_KINDS[number]

export type WebhookDeliveryAttemptsTable = {
  tenant_id: string
  id: Generated<number>
  delivery_id: string
  attempt: number
  started_at: Date
  duration_ms: number
  status_code: number | null
  error_kind: AttemptErrorKind | null
  error: string | null
  response_excerpt: string | null
  succeeded: boolean
}

export type WebhookOutboxSeenTable = {
  tenant_id: string
  outbox_id: number
  seen_at: Timestamp
}

export type WebhookCursorsTable = {
  tenant_id: string
  floor_id: Generated<number>
  updated_at: Timestamp
}

export type WebhooksTables = {
  webhook_subscriptions: WebhookSubscriptionsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable
  webhook_outbox_seen: WebhookOutboxSeenTable
  webhook_cursors: WebhookCursorsTable
}

export type SubscriptionRow = Selectable<WebhookSubscriptionsTable>
export type DeliveryRow = Selectable<WebhookDeliveriesTable>

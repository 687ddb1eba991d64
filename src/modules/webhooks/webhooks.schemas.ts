/** Wire schemas of the webhooks module: subscriptions, their secrets, deliveries and their attempts. */
import { Type, type Static } from '@sinclair/typebox'
import {
  body, KeysetPageQuery, model, Nullable, pagedBody, StringEnum, Timestamp, UuidString
} from '../../platform/http/schema.ts'
import { EXCERPT_BYTES } from './webhooks.attempts.ts'
import { ATTEMPT_ERROR_KINDS } from './webhooks.table.ts'

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const

const Url = Type.String({
  minLength: 1,
  maxLength: 2000,
  description:
    'Where deliveries are POSTed: an https URL of a public address (AUTOMATION_WEBHOOK_ALLOW may allow others)'
})
const EventTypes = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'Outbox topics (`GET /api/v1/automation/triggers`, kind domain_event), or `*` for every one'
})
const Description = Nullable(Type.String({ maxLength: 1000, description: 'What the subscription is for' }))

const subscriptionFields = {
  id: Type.String({ format: 'uuid', description: 'Subscription id' }),
  url: Type.String({ description: 'Where deliveries are POSTed' }),
  event_types: Type.Array(Type.String(), { description: 'Topics delivered, or `*`' }),
  description: Description,
  enabled: Type.Boolean({ description: 'Whether events are delivered' }),
  disabled_reason: Nullable(Type.String({ description: 'Why the service disabled it (repeated failures)' })),
  disabled_at: Nullable(Timestamp()),
  consecutive_failures: Type.Integer({ description: 'Failed attempts since the last success' }),
  previous_secret_expires_at: Nullable(Timestamp('Until when the secret before the last rotation still signs')),
  created_by: Type.String({ description: 'The user who created it (notified when it is disabled)' }),
  created_at: Timestamp(),
  updated_at: Timestamp()
}

const DeliveryFigures = Type.Object({
  pending: Type.Integer({
    description: 'Deliveries not yet delivered nor given up: due, waiting for a retry, in flight'
  }),
  failing: Type.Integer({ description: 'Of the pending ones, those whose last attempt failed' }),
  last_success_at: Nullable(Timestamp('When a delivery last succeeded (null: none since migration 0047)'))
}, { description: "The subscription's deliveries now: only in the answer of `GET /api/v1/webhooks/{id}`" })

export const WebhookSubscription = model('WebhookSubscription', {
  ...subscriptionFields,
  deliveries: Type.Optional(DeliveryFigures)
})

export const WebhookSubscriptionWithSecret = model('WebhookSubscriptionWithSecret', {
  ...subscriptionFields,
  secret: Type.String({
    description: 'The signing secret, `whsec_<base64>`: shown only in this answer (creation, rotation)'
  })
})

export const PagedBodyWebhookSubscription = pagedBody(WebhookSubscription, 'PagedBodyWebhookSubscription')

export const CreateWebhookBody = body({
  url: Url,
  event_types: EventTypes,
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean({ default: true }))
})
export type CreateWebhookBody = Static<typeof CreateWebhookBody>

export const PatchWebhookBody = body({
  url: Type.Optional(Url),
  event_types: Type.Optional(EventTypes),
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean({ description: 'true enables it again and clears the reason it was disabled' }))
})
export type PatchWebhookBody = Static<typeof PatchWebhookBody>

export const WebhookParams = Type.Object({ id: UuidString })
export const DeliveryParams = Type.Object({ id: UuidString, delivery_id: UuidString })

export const WebhookDelivery = model('WebhookDelivery', {
  id: Type.String({ format: 'uuid', description: 'Delivery id' }),
  subscription_id: Type.String({ format: 'uuid' }),
  outbox_id: Nullable(Type.Integer({ description: 'The domain event delivered (null for a ping)' })),
  msg_id: Type.String({ description: 'The webhook-id header: the same on every attempt and redelivery' }),
  event_type: Type.String({ description: 'The topic (`webhook.ping` for a ping)' }),
  status: StringEnum(DELIVERY_STATUSES, { description: 'pending (due, or waiting for a retry), succeeded, failed' }),
  attempts: Type.Integer({ description: 'Attempts so far' }),
  next_attempt_at: Nullable(Timestamp('When a pending delivery is tried (again)')),
  last_status_code: Nullable(Type.Integer({ description: 'The HTTP status of the last answer' })),
  last_duration_ms: Nullable(Type.Integer({ description: 'How long the last attempt took' })),
  last_error: Nullable(Type.String({ description: 'Why the last attempt failed' })),
  last_attempt_at: Nullable(Timestamp()),
  delivered_at: Nullable(Timestamp()),
  created_at: Timestamp()
})

export const PagedBodyWebhookDelivery = pagedBody(WebhookDelivery, 'PagedBodyWebhookDelivery')

export const WebhookDeliveryAttempt = model('WebhookDeliveryAttempt', {
  id: Type.Integer({ description: 'Attempt id' }),
  attempt: Type.Integer({
    description: 'The number of the attempt in its run: 1 the first; a redelivery starts a run at 1 again'
  }),
  started_at: Timestamp('When the request was sent (its webhook-timestamp)'),
  duration_ms: Type.Integer({ description: 'From the request to the answer or the failure' }),
  status_code: Nullable(Type.Integer({ description: 'The HTTP status of the answer (null: none, see error_kind)' })),
  error_kind: Nullable(StringEnum(ATTEMPT_ERROR_KINDS, {
    description: 'Why there was no answer: timeout, refused (destination not allowed: nothing sent), dns, ' +
      'connection, tls, other; null when the receiver answered'
  })),
  error: Nullable(Type.String({ description: 'Why the attempt failed, as the service saw it' })),
  response_excerpt: Nullable(Type.String({
    description: `The first ${EXCERPT_BYTES} bytes of the answer's body as sent, when it is text (a signing ` +
      'secret of the subscription in it is replaced by `[redacted]`); null when empty or not text'
  })),
  succeeded: Type.Boolean({ description: 'Whether the receiver took it (a 2xx answer)' })
})

export const PagedBodyWebhookDeliveryAttempt = pagedBody(WebhookDeliveryAttempt, 'PagedBodyWebhookDeliveryAttempt')

export const ListWebhooksQuery = KeysetPageQuery

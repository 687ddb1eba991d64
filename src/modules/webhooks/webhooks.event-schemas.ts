/**
 * The JSON Schema of each webhook event type, version 1, built from the automation trigger catalogue
 * (its payload descriptions: field → "type: meaning"), served at
 * `GET /schemas/webhooks/WebhookEvent.<type>.v1.json`. A field's JSON type is read from the start of its
 * description where it names one (integer, string, boolean, array, object, "… or null"); `data` allows
 * fields the catalogue does not list (receivers must ignore unknown fields). A new version is a new name.
 */
import { DOMAIN_TRIGGERS } from '../automation/index.ts'
import { PING_TYPE } from './webhooks.delivery.ts'

type Json = Record<string, unknown>

const TYPES: Array<[RegExp, Json]> = [
  [/^array of string/, { type: 'array', items: { type: 'string' } }],
  [/^array/, { type: 'array' }],
  [/^integer/, { type: 'integer' }],
  [/^string/, { type: 'string' }],
  [/^boolean/, { type: 'boolean' }],
  [/^object/, { type: 'object' }]
]

/** A payload field's schema from its catalogue description. */
function fieldSchema (text: string): Json {
  const known = TYPES.find(([re]) => re.test(text))?.[1]
  if (known === undefined) return { description: text }
  const nullable = /^\w+( of \w+)? or null/.test(text)
  return nullable && typeof known.type === 'string'
    ? { ...known, type: [known.type, 'null'], description: text }
    : { ...known, description: text }
}

function eventSchema (type: string, description: string, payload: Record<string, string>): Json {
  return {
    title: `WebhookEvent.${type}.v1`,
    description: `${description}. The body of a webhook delivery of \`${type}\` (Standard Webhooks).`,
    type: 'object',
    required: ['type', 'timestamp', 'data'],
    properties: {
      type: { const: type },
      timestamp: { type: 'string', format: 'date-time', description: 'When the event happened' },
      data: {
        type: 'object',
        description: 'The domain event payload',
        properties: Object.fromEntries(Object.entries(payload).map(([k, v]) => [k, fieldSchema(v)])),
        additionalProperties: true
      }
    }
  }
}

/** Event type → its schema (without `$id`, which names the serving URL). */
export const WEBHOOK_EVENT_SCHEMAS: ReadonlyMap<string, Json> = new Map([
  ...DOMAIN_TRIGGERS.map(t => [t.type, eventSchema(t.type, t.description, t.payload)] as const),
  [PING_TYPE, eventSchema(PING_TYPE, 'A test event sent by POST /api/v1/webhooks/{id}/ping', {
    subscription_id: 'string (uuid): the subscription pinged'
  })]
])

/** The schema file name of an event type. */
export const schemaFileOf = (type: string): string => `WebhookEvent.${type}.v1.json`

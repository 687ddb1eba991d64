/** Wire schemas of the audit module: entries, their filters, a verification of the chain. */
import { Type } from '@sinclair/typebox'
import { AUDIT_ACTOR_KINDS } from '../../platform/audit.ts'
import { CsvQuery } from '../../platform/http/csv.ts'
import { KeysetPageQuery, model, Nullable, pagedBody, StringEnum, Timestamp } from '../../platform/http/schema.ts'

const Text = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 200, description }))

const filterFields = {
  actor_type: Type.Optional(StringEnum(AUDIT_ACTOR_KINDS, { description: 'Only changes by this kind of actor' })),
  actor_id: Text('Only changes by this actor (a user id, a service account id `sa_…`)'),
  action: Text('Only this action (`contact.updated`, `api_key.revoked`, `POST /api/v1/webhooks`)'),
  resource_type: Text('Only changes of this kind of resource (`contact`, `event`, `webhooks`)'),
  resource_id: Text('Only changes of this resource (with resource_type)'),
  contact_id: Text('Only changes that concern this contact'),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Only changes at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Only changes before this time' }))
}

export const AuditListQuery = Type.Object({ ...KeysetPageQuery.properties, ...filterFields })

export const AuditExportQuery = Type.Object({
  ...filterFields,
  // with format=csv only (JSON Lines never has a byte-order mark)
  ...CsvQuery.properties,
  format: Type.Optional(StringEnum(['csv', 'jsonl'] as const, {
    description: 'CSV (RFC 4180, the fields as one JSON cell) or JSON Lines (one entry a line); default jsonl'
  }))
})

export const AuditEntry = model('AuditEntry', {
  seq: Type.Integer({ description: 'Position in the tenant\'s chain (1, 2, …)' }),
  id: Type.Integer({ description: 'Entry id (the order of writing; the chain\'s order is seq)' }),
  at: Timestamp('When the change was made (its transaction\'s time)'),
  actor_type: StringEnum(AUDIT_ACTOR_KINDS, { description: 'Who made it' }),
  actor_id: Nullable(Type.String({ description: 'The user, service account (`sa_…`) or run-as user' })),
  via: Nullable(Type.String({
    description: 'What it went through: `key:<id>` of an API key, `execution:<id>` of a rule'
  })),
  request_id: Nullable(Type.String({
    description: 'The request\'s id (the `instance` of its problems, its log lines)'
  })),
  address: Nullable(Type.String({ description: 'The caller\'s address' })),
  action: Type.String({ description: 'A domain event topic, an action name, or `METHOD route` of a request' }),
  resource_type: Type.String(),
  resource_id: Nullable(Type.String()),
  contact_id: Nullable(Type.String({ description: 'The contact the change concerns' })),
  fields: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The changed fields: values that may be personal data as `hmac:…` keyed hashes (docs/audit.md)'
  }),
  prev_hash: Type.String({ description: 'The hash of the entry before it in the chain ("" for the first)' }),
  hash: Type.String({ description: 'SHA-256 (hex) of prev_hash, a newline and the entry\'s canonical JSON' })
})

export const PagedBodyAuditEntry = pagedBody(AuditEntry, 'PagedBodyAuditEntry')

const Position = Type.Object({ seq: Type.Integer(), hash: Type.String() })

export const AuditVerifyQuery = Type.Object({
  from: Type.Optional(Type.Integer({
    minimum: 1,
    description: 'The first position to check (default: the chain\'s start); a long chain is walked in windows of ' +
      '100 000 entries, each answer naming the `next` one'
  }))
})

export const AuditVerification = model('AuditVerification', {
  valid: Type.Boolean({ description: 'Always true here: a broken chain answers 409' }),
  complete: Type.Boolean({
    description: 'Whether the walk reached the head; false: it stopped after 100 000 entries, call again with `from`' +
      ' = `next` (the head is checked by the walk that reaches it)'
  }),
  next: Type.Optional(Type.Integer({ description: 'Where the next walk starts (`from`), when not complete' })),
  checked: Type.Integer({ description: 'Entries checked in this walk, from `from` (the chain\'s start) on' }),
  head: Type.Object(Position.properties, { description: 'The last position and its hash: keep it elsewhere' }),
  start: Type.Object(Position.properties, { description: 'Where retention cut the chain, and the hash it starts from' })
})

import { Type } from '@sinclair/typebox'
import { model, Nullable, StringEnum, Timestamp, UuidString } from '../../platform/http/schema.ts'
import type { ErasureCounts } from './privacy.table.ts'

export const ContactParams = Type.Object({ id: UuidString })
export const UserParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) })

export const ExportQuery = Type.Object({
  format: Type.Optional(StringEnum(['json', 'zip'], {
    description: '`zip`: a ZIP file holding `personal-data.json` (as `Accept: application/zip` asks); default JSON'
  }))
})

const Section = Type.Object({
  items: Type.Array(Type.Unknown(), { description: 'The rows as stored (secrets and computed keys left out)' }),
  truncated: Type.Boolean({ description: 'The place held more rows than a section lists (`limits.per_section`)' })
})

export const PersonalData = model('PersonalData', {
  subject: Type.Object({ type: StringEnum(['contact', 'user']), id: Type.String() }),
  limits: Type.Object({ per_section: Type.Integer() }),
  profile: Nullable(Type.Record(Type.String(), Type.Unknown(), {
    description: 'The contact, or the user\'s profile from the identity provider (null when it sent none)'
  })),
  sections: Type.Record(Type.String(), Section, {
    description: 'Every place that holds rows about the subject, by name (docs/privacy.md, "Export")'
  })
}, { description: 'Everything the service holds about a person (GDPR article 15; docs/privacy.md)' })

const COUNT_NAMES: Array<keyof ErasureCounts> = [
  'contact', 'redirects', 'attendances_anonymised', 'attendances_withdrawn', 'registration_answers', 'guest_links',
  'space_links', 'space_activity', 'event_activity', 'notifications_deleted', 'notifications_scrubbed',
  'outbox_events', 'webhook_deliveries', 'automation_executions', 'idempotent_answers', 'sync_tombstones',
  'stored_objects'
]

export const ErasureReport = model('ErasureReport', {
  contact_id: UuidString,
  erased_at: Timestamp(),
  erased_by: Type.String({ description: 'The user who erased it' }),
  counts: Type.Object(Object.fromEntries(COUNT_NAMES.map(n => [n, Type.Integer({ minimum: 0 })])), {
    description: 'Rows each place held, deleted or made anonymous (docs/privacy.md, "Erasure")'
  })
}, {
  description: 'What an erasure removed or made anonymous, per place: ids and counts only. A second erase of the ' +
    'same contact answers the same report'
})

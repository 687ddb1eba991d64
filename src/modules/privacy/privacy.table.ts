import type { ColumnType, Generated } from 'kysely'

/** How many rows each place held of an erased contact, and what became of them (docs/privacy.md, "Erasure"). */
export type ErasureCounts = {
  /** the contact row with its phones, e-mail and fields (1) */
  contact: number
  /** contacts merged into it earlier whose redirects went */
  redirects: number
  /** attendances kept anonymous (no contact, no personal column) */
  attendances_anonymised: number
  /** of those, the ones that waited on the person (waitlisted, pending, awaiting confirmation): now declined */
  attendances_withdrawn: number
  /** attendances whose registration answers were removed */
  registration_answers: number
  guest_links: number
  space_links: number
  space_activity: number
  event_activity: number
  notifications_deleted: number
  notifications_scrubbed: number
  outbox_events: number
  webhook_deliveries: number
  automation_executions: number
  idempotent_answers: number
  /** the sync log's tombstones of the contact (kept: ids only, so synced clients delete it) */
  sync_tombstones: number
  /** stored files of the contact deleted (contacts have no stored files: always 0) */
  stored_objects: number
}

/** One erased contact (migration 0046): ids and counts, no personal value. */
export interface ErasuresTable {
  tenant_id: string
  id: Generated<number>
  contact_id: string
  erased_at: Generated<Date>
  erased_by: string
  counts: ColumnType<ErasureCounts, string, string>
}

// a type, not an interface: `withTables` takes a record of tables
export type PrivacyTables = {
  erasures: ErasuresTable
}

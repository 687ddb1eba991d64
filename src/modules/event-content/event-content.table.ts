import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'
import type { JsonWithDefault } from '../../platform/db/columns.ts'

export const MILESTONE_STATUSES = ['planned', 'ready', 'active', 'completed', 'skipped'] as const
export type MilestoneStatus = typeof MILESTONE_STATUSES[number]
export type MilestoneStatusMode = 'derived' | 'manual'

export interface EventMilestonesTable {
  tenant_id: string
  id: Generated<number>
  base_event_id: number | null
  series_id: number | null
  milestone_event_id: number
  org_id: string | null
  sequence: Generated<number>
  status: Generated<MilestoneStatus>
  status_mode: Generated<MilestoneStatusMode>
  status_updated_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface EventDocumentsTable {
  tenant_id: string
  id: Generated<number>
  event_id: number
  document_id: string
  org_id: string | null
  created_by: string | null
  created_at: Timestamp
}

export interface EventAttachmentsTable {
  tenant_id: string
  id: Generated<number>
  event_id: number | null
  series_id: number | null
  org_id: string | null
  kind: string
  ref: string
  metadata: JsonWithDefault
  created_by: string | null
  created_at: Timestamp
}

export interface EventLinksTable {
  tenant_id: string
  id: Generated<number>
  event_id: number | null
  series_id: number | null
  target_id: number
  org_id: string | null
  created_by: string | null
  created_at: Timestamp
}

export type MilestoneRow = Selectable<EventMilestonesTable>
export type EventDocumentRow = Selectable<EventDocumentsTable>
export type AttachmentRow = Selectable<EventAttachmentsTable>
export type EventLinkRow = Selectable<EventLinksTable>

export interface EventContentTables {
  event_milestones: EventMilestonesTable
  event_documents: EventDocumentsTable
  event_attachments: EventAttachmentsTable
  event_links: EventLinksTable
}

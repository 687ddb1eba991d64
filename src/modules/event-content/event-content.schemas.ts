/**
 * The schemas of the event content module: milestones, documents, attachments, links, the cover
 * (docs/event-collaboration.md).
 */
import { Type } from '@sinclair/typebox'
import { body, IntId, model, Nullable, pagedBody, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { MILESTONE_STATUSES } from './event-content.table.ts'

/** Bounds chosen by us (docs/event-collaboration.md). */
export const ATTACHMENT_REF_MAX = 2048
export const ATTACHMENT_METADATA_MAX_KEYS = 50
export const ATTACHMENT_METADATA_MAX_BYTES = 8192
export const LIST_MAX = 1000
export const COVER_MAX_BYTES = 5 * 1024 * 1024

export const MilestoneParams = Type.Object({ id: IntId, milestone_event_id: IntId })
export const DocumentParams = Type.Object({
  id: IntId,
  document_id: Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[^\\s/]+$',
    description: 'Document id (no spaces or slashes)'
  })
})
export const LinkParams = Type.Object({ id: IntId, target_id: IntId })
export const AttachmentParams = Type.Object({ id: IntId })

// ---- milestones

export const Milestone = model('Milestone', {
  id: Type.Integer(),
  base_event_id: Nullable(Type.Integer()),
  milestone_event_id: Type.Integer(),
  sequence: Type.Integer(),
  series_id: Nullable(Type.Integer()),
  status: StringEnum(MILESTONE_STATUSES),
  status_mode: StringEnum(['derived', 'manual'] as const),
  status_updated_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  updated_at: Timestamp()
})
export const PagedBodyMilestone = pagedBody(Milestone, 'PagedBodyMilestone')

const Sequence = Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 })
export const AddMilestoneBody = body({ milestone_event_id: IntId, sequence: Type.Optional(Sequence) })
export const UpdateMilestoneSequenceBody = body({ sequence: Sequence })
export const PatchMilestoneBody = body({
  status: Type.Optional(
    StringEnum(MILESTONE_STATUSES, { description: 'Sets the status by hand (status_mode manual)' })
  ),
  reset_to_derived: Type.Optional(Type.Boolean({ description: 'true: status derived from the milestone event again' }))
})

// ---- documents, attachments, links

export const EventDocument = model('EventDocument', {
  id: Type.Integer(),
  event_id: Type.Integer(),
  document_id: Type.String(),
  org_id: Nullable(Type.String()),
  created_by: Nullable(Type.String()),
  created_at: Timestamp()
})
export const EventDocumentList = Type.Array(EventDocument)

export const Attachment = model('Attachment', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer()),
  series_id: Nullable(Type.Integer()),
  org_id: Nullable(Type.String()),
  kind: Type.String(),
  ref: Type.String(),
  metadata: Type.Object({}, { additionalProperties: true }),
  created_by: Nullable(Type.String()),
  created_at: Timestamp()
})
export const AttachmentListBody = model('AttachmentListBody', { items: Type.Array(Attachment) })
export const ListAttachmentsQuery = Type.Object({
  kind: Type.Optional(Type.String({ maxLength: 64, description: 'One kind; empty = all' }))
})
export const AddAttachmentBody = body({
  kind: Type.String({ minLength: 1, maxLength: 64, description: "One of the template's allowed attachment kinds" }),
  ref: Type.String({ minLength: 1, maxLength: ATTACHMENT_REF_MAX, description: 'URL, blob key or document id' }),
  metadata: Type.Optional(
    Nullable(
      Type.Object(
        {},
        {
          additionalProperties: true,
          maxProperties: ATTACHMENT_METADATA_MAX_KEYS,
          description:
            `mime, size, content_hash… (at most ${ATTACHMENT_METADATA_MAX_KEYS} keys, ` +
            `${ATTACHMENT_METADATA_MAX_BYTES} bytes as JSON)`
        }
      )
    )
  )
})

export const Link = model('Link', {
  id: Type.Integer(),
  event_id: Nullable(Type.Integer({ description: 'Source event; null for a link held by a series' })),
  target_id: Type.Integer(),
  series_id: Nullable(Type.Integer({ description: 'Set when the link applies to every occurrence of a series' })),
  created_at: Timestamp()
})
export const LinkList = Type.Array(Link)
export const AddLinkBody = body({ target_id: IntId })

/**
 * What an event refers to: linked documents (ids of an external document store), attachments
 * (kinds allowed by the event's template) and cross-reference links to other events, including
 * removal of links held by a series. Reading needs only to see the event; writes need the event
 * permissions `documents:manage`, `attachments:manage` or `links:manage`.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error404NotFound, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { createdRoute, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { emit, type DomainEvent } from '../../platform/outbox.ts'
import {
  eventEvent, EventIdParams, EventParams, type EventRow, findTemplate, findVisibleEvent, latestTemplate,
  lockEventForWrite, readEvent, removeFromEvent, rootEventId, seriesEvent, templateAllows, writeSeries
} from '../events/index.ts'
import {
  AddAttachmentBody, AddLinkBody, Attachment, ATTACHMENT_METADATA_MAX_BYTES, AttachmentListBody, AttachmentParams,
  DocumentParams, EventDocumentList, Link, LinkList, LinkParams, LIST_MAX, ListAttachmentsQuery
} from './event-content.schemas.ts'
import * as repo from './event-content.references.repository.ts'
import { requirePolicy } from '../policy/index.ts'
import { LONE_SURROGATE } from '../../platform/http/validation.ts'

const operation = operationsTagged('Event references')
const METADATA_MAX_DEPTH = 16

/** A domain event about `event` (its published row): the event id first and its template last in the payload. */
function eventChange (
  auth: AuthContext, event: EventRow, topic: string, payload: Record<string, unknown>
): DomainEvent {
  return {
    tenantId: auth.tenantId,
    topic,
    aggregateType: 'event',
    aggregateId: rootEventId(event),
    actorId: auth.userId,
    payload: { event_id: rootEventId(event), ...payload, template: event.template }
  }
}

/**
 * Bounds of a free-form object without recursion (a value nested 50 000 levels deep must not
 * overflow the stack): depth, then well-formed text (a lone surrogate cannot be stored in jsonb),
 * then size as JSON.
 */
function checkMetadata (value: Record<string, unknown>): void {
  const stack: Array<[unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number]
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) throw invalidField('body.metadata', 'expected well-formed unicode text')
      continue
    }
    if (v === null || typeof v !== 'object') continue
    if (depth > METADATA_MAX_DEPTH) {
      throw invalidField('body.metadata', `expected at most ${METADATA_MAX_DEPTH} levels of nesting`)
    }
    for (const [k, child] of Object.entries(v)) {
      if (LONE_SURROGATE.test(k)) throw invalidField('body.metadata', 'expected well-formed unicode keys')
      stack.push([child, depth + 1])
    }
  }
  if (Buffer.byteLength(JSON.stringify(value)) > ATTACHMENT_METADATA_MAX_BYTES) {
    throw invalidField('body.metadata', `expected at most ${ATTACHMENT_METADATA_MAX_BYTES} bytes as JSON`)
  }
}

export async function referencesRoutes (app: App, { db }: AppContext): Promise<void> {
  // ---- documents

  app.get('/api/v1/events/:id/documents', operation('list-event-documents',
    `Documents linked to an event (an array, oldest first, at most ${LIST_MAX})`, {
      description: 'The documents linked to an event, oldest first (at most 1000).',
      params: EventParams,
      response: { 200: EventDocumentList }
    }, requirePolicy('link', 'read')), async request =>
    await withTenant(db, request.auth, async trx => {
      const event = await readEvent(trx, request.auth, request.params.id)
      return await repo.listDocuments(trx, request.auth.tenantId, rootEventId(event), LIST_MAX)
    })
  )

  app.post('/api/v1/events/:id/documents/:document_id', operation('link-event-document',
    'Link a document to an event (201, no body; 409 when already linked)', {
      description: 'Links a document to the event. Answers 201 without a body, 409 when it is already linked.',
      params: DocumentParams,
      response: { 201: NoContent }
    }, requirePolicy('link', 'write')), async (request, reply) => {
    const { auth, params: { id, document_id: documentId } } = request
    await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, id, 'documents:manage')
      const row = await repo.insertDocument(trx, {
        tenantId: auth.tenantId,
        eventId: rootEventId(event),
        orgId: event.org_id,
        documentId,
        createdBy: auth.userId
      })
      if (row === undefined) {
        throw error409Conflict('the document is already linked to this event', [
          fieldError('path.document_id', 'already linked', documentId)
        ], 'already_linked')
      }
      await emit(trx, eventChange(auth, event, 'event.document_linked', { document_id: documentId }))
    })
    // Created with no body (upstream): an empty payload, not the JSON null of the schema
    return await reply.code(201).send(undefined as never)
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/documents/:document_id', operation('unlink-event-document',
    'Unlink a document', {
      description: 'Unlinks a document from the event; the document itself is not touched.',
      params: DocumentParams
    }, requirePolicy('link', 'write')), async (trx, { auth, params: { id, document_id: documentId } }) => {
    const event = await removeFromEvent(trx, auth, id, 'documents:manage', 'document not linked', root =>
      repo.deleteDocument(trx, auth.tenantId, root, documentId))
    await emit(trx, eventChange(auth, event, 'event.document_unlinked', { document_id: documentId }))
  })

  // ---- attachments

  app.get('/api/v1/events/:event_id/attachments', operation('list-event-attachments',
    `Attachments of an event and of its series (kind filter; at most ${LIST_MAX})`, {
      description: 'The attachments of an event and of its series, optionally of one kind (at most 1000).',
      params: EventIdParams,
      querystring: ListAttachmentsQuery,
      response: { 200: AttachmentListBody }
    }, requirePolicy('link', 'read')), async request => {
    const items = await withTenant(db, request.auth, async trx => {
      const event = await readEvent(trx, request.auth, request.params.event_id)
      return await repo.listAttachments(
        trx,
        request.auth.tenantId,
        { id: rootEventId(event), seriesId: event.series_id },
        request.query.kind,
        LIST_MAX
      )
    })
    return { items }
  })

  createdRoute(app, db, 'post', '/api/v1/events/:event_id/attachments', operation('add-event-attachment',
    "Attach a file or reference (kind must be allowed by the event's template)", {
      description: 'Attaches a file or a reference to the event. The kind must be one the event\'s template allows.',
      params: EventIdParams,
      body: AddAttachmentBody,
      response: { 201: Attachment }
    }, requirePolicy('link', 'write')), async (trx, { auth, params, body: b }) => {
    const metadata = b.metadata ?? {}
    checkMetadata(metadata)
    const event = await lockEventForWrite(trx, auth, params.event_id, 'attachments:manage')
    if (!templateAllows(event.template, event.template_version, 'attachment', b.kind)) {
      const t = findTemplate(event.template, event.template_version) ?? latestTemplate(event.template)
      throw invalidField(
        'body.kind',
        `expected one of the kinds the ${event.template} template allows: ` +
        `${(t?.allowed_attachment_kinds ?? []).join(', ')}`,
        b.kind
      )
    }
    const created = await repo.insertAttachment(trx, {
      tenantId: auth.tenantId,
      eventId: rootEventId(event),
      orgId: event.org_id,
      kind: b.kind,
      ref: b.ref,
      metadata,
      createdBy: auth.userId
    })
    await emit(trx, eventChange(auth, event, 'attachment.added', { attachment_id: created.id, kind: b.kind }))
    return created
  })

  noContentRoute(app, db, 'delete', '/api/v1/attachments/:id', operation('delete-attachment', 'Remove an attachment', {
    description: 'Removes an attachment from its event or series.',
    params: AttachmentParams
  }, requirePolicy('link', 'write')), async (trx, { auth, params }) => {
    const row = await repo.findAttachment(trx, auth.tenantId, params.id)
    if (row === undefined) throw error404NotFound('attachment not found')
    const event =
      row.event_id !== null
        ? await lockEventForWrite(trx, auth, row.event_id, 'attachments:manage')
        : await writeSeries(trx, auth, row.series_id ?? 0, 'attachments:manage')
    await repo.deleteAttachment(trx, auth.tenantId, row.id)
    await emit(trx, eventEvent(auth, rootEventId(event), 'attachment.removed', {
      event_id: row.event_id,
      series_id: row.series_id,
      attachment_id: row.id,
      kind: row.kind,
      template: event.template
    }))
  })

  // ---- links

  app.get('/api/v1/events/:id/links', operation('list-event-links',
    `Cross-reference links of an event and of its series (an array, at most ${LIST_MAX})`, {
      description: 'The cross-reference links of an event and of its series to other events (at most 1000).',
      params: EventParams,
      response: { 200: LinkList }
    }, requirePolicy('link', 'read')), async request =>
    await withTenant(db, request.auth, async trx => {
      const event = await readEvent(trx, request.auth, request.params.id)
      return await repo.listLinks(
        trx,
        request.auth.tenantId,
        { id: rootEventId(event), seriesId: event.series_id },
        LIST_MAX
      )
    })
  )

  createdRoute(app, db, 'post', '/api/v1/events/:id/links', operation('add-event-link',
    'Link another visible event of the tenant (no self link; 409 when already linked)', {
      description: 'Links another visible event of the tenant as a cross-reference. A self link is refused, a ' +
        'duplicate answers 409.',
      params: EventParams,
      body: AddLinkBody,
      response: { 201: Link }
    }, requirePolicy('link', 'write')), async (trx, { auth, params, body }) => {
    const targetId = body.target_id
    const event = await lockEventForWrite(trx, auth, params.id, 'links:manage')
    const eventId = rootEventId(event)
    if (targetId === eventId || targetId === event.id) {
      throw invalidField('body.target_id', 'an event cannot link to itself', targetId)
    }
    const target = await findVisibleEvent(trx, auth, targetId, ['id'])
    if (target === undefined) throw invalidField('body.target_id', 'unknown event', targetId)
    const created = await repo.insertLink(trx, {
      tenantId: auth.tenantId,
      eventId,
      targetId,
      orgId: event.org_id,
      createdBy: auth.userId
    })
    if (created === undefined) {
      throw error409Conflict('the events are already linked', [
        fieldError('body.target_id', 'already linked', targetId)
      ], 'already_linked')
    }
    await emit(trx, eventChange(auth, event, 'event.link_added', { target_id: targetId }))
    return created
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/links/:target_id', operation('remove-event-link',
    'Remove a cross-reference link', {
      description: 'Removes a cross-reference link of the event; both events stay.',
      params: LinkParams
    }, requirePolicy('link', 'write')), async (trx, { auth, params: { id, target_id: targetId } }) => {
    const event = await removeFromEvent(trx, auth, id, 'links:manage', 'link not found', root =>
      repo.deleteLink(trx, auth.tenantId, root, targetId))
    await emit(trx, eventChange(auth, event, 'event.link_removed', { target_id: targetId }))
  })

  noContentRoute(app, db, 'delete', '/api/v1/series/:id/links/:target_id', operation('remove-series-link',
    'Remove the cross-reference links a series holds to an event (event permission links:manage on an occurrence)', {
      description: 'Removes the cross-reference links a series holds to an event.',
      params: LinkParams
    }, requirePolicy('series', 'links')), async (trx, { auth, params: { id, target_id: targetId } }) => {
    const event = await writeSeries(trx, auth, id, 'links:manage')
    if ((await repo.deleteSeriesLinks(trx, auth.tenantId, id, targetId)) === 0) {
      throw error404NotFound('link not found')
    }
    await emit(trx, seriesEvent(auth, id, 'series.link_removed', {
      series_id: id, target_id: targetId, template: event.template
    }))
  })
}

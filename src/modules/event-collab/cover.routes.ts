/**
 * The cover image of an event: `PUT /events/{id}/cover` (multipart, one part `file`, JPEG, PNG or
 * WebP recognised by its first bytes, at most COVER_MAX_BYTES) stores the image through the
 * object storage (local files, or S3 when configured) and records its key in `events.cover_image_key`
 * and `metadata.cover_image`; `GET /events/{id}/cover` serves it. Needs the event permission
 * `event:edit`. A store that fails answers 503 and changes nothing. @fastify/multipart is
 * registered in this plugin's scope only.
 */
import crypto from 'node:crypto'
import multipart from '@fastify/multipart'
import { Type } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger } from 'fastify'
import { sql } from 'kysely'
import type { App, AppContext } from '../../platform/app-context.ts'
import { requirePermission } from '../../platform/auth/permissions.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import { ApiError, error403Forbidden, error404NotFound, error413PayloadTooLarge, error415UnsupportedMediaType, error503ServiceUnavailable, invalidField } from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { createObjectStorage, newObjectKey, sniffImage, type ObjectStorage } from '../../platform/storage/storage.ts'
import { hasEventPermission, lockEventForWrite } from '../events/events.access.ts'
import { Event } from '../events/events.schemas.ts'
import { withSpaces } from '../events/events.service.ts'
import { readEvent, rootOf } from './event-collab.access.ts'
import { COVER_MAX_BYTES, EventParams } from './event-collab.schemas.ts'

const tags = ['Event cover']
const MIB = COVER_MAX_BYTES / 1024 / 1024

interface MultipartErrorLike { code?: string, statusCode?: number }

/** The one `file` part as bytes: 400 without it, 413 above the limit, 415 when not multipart. */
async function readFilePart (request: { file: (o: object) => Promise<{ fieldname: string, toBuffer: () => Promise<Buffer> } | undefined> }): Promise<Buffer> {
  try {
    const part = await request.file({ limits: { fileSize: COVER_MAX_BYTES, files: 1, fields: 10 }, throwFileSizeLimit: true })
    if (part === undefined) throw invalidField('body.file', 'expected a file part named file')
    if (part.fieldname !== 'file') throw invalidField('body.file', `expected a file part named file, not ${part.fieldname}`)
    const data = await part.toBuffer()
    if (data.length === 0) throw invalidField('body.file', 'expected a non-empty file')
    return data
  } catch (err) {
    const e = err as MultipartErrorLike
    if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.statusCode === 413) throw error413PayloadTooLarge(`the cover image is larger than ${MIB} MiB`)
    if (e.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') throw error415UnsupportedMediaType('expected multipart/form-data with a part named file')
    if (err instanceof ApiError) throw err
    // busboy's parse errors (no boundary, truncated form…) are the client's
    throw invalidField('body', `malformed multipart body: ${err instanceof Error ? err.message : String(err)}`)
  }
}

/** A failing store is the service's trouble, not the client's: 503 with Retry-After, the cause in the log. */
async function fromStore<T> (log: FastifyBaseLogger, op: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    log.error({ err }, `object storage ${op} failed`)
    throw error503ServiceUnavailable('the object storage is unavailable, try again later')
  }
}

/** Removes an object that nothing refers to any more; a failure leaves an orphan and a warning, never a failed request. */
async function forget (log: FastifyBaseLogger, storage: ObjectStorage, key: string): Promise<void> {
  try {
    await storage.delete(key)
  } catch (err) {
    log.warn({ err, key }, 'object storage delete failed, the object is left behind')
  }
}

/** `storage` defaults to the store the configuration names (local files, or S3 when S3_BUCKET is set), closed with the app. */
export async function coverRoutes (parent: App, { db, config }: AppContext, given?: ObjectStorage): Promise<void> {
  const storage = given ?? await createObjectStorage(config)
  await parent.register(async (instance) => {
    if (given === undefined && storage.close !== undefined) instance.addHook('onClose', async () => { await storage.close?.() })
    await instance.register(multipart, { limits: { fileSize: COVER_MAX_BYTES, files: 1 } })
    const app = instance.withTypeProvider<TypeBoxTypeProvider>()

    app.put('/api/v1/events/:id/cover', {
      schema: {
        operationId: 'upload-event-cover',
        summary: `Upload the cover image (multipart part "file"; JPEG, PNG or WebP by content; at most ${MIB} MiB: 413 above, 415 for other types)`,
        tags,
        consumes: ['multipart/form-data'],
        params: EventParams,
        response: { 200: Event }
      },
      onRequest: requirePermission('events:write')
    }, async (request, reply) => {
      const auth = request.auth
      const id = request.params.id
      // who may upload is known before the upload is read
      const root = await withTenant(db, auth, async (trx) => {
        const row = await readEvent(trx, auth, id)
        if (!(await hasEventPermission(trx, auth, row, 'event:edit'))) throw error403Forbidden('missing event permission event:edit')
        return rootOf(row)
      })
      const data = await readFilePart(request)
      const type = sniffImage(data)
      if (type === undefined) throw error415UnsupportedMediaType('expected a JPEG, PNG or WebP image')

      const scope = crypto.createHash('sha256').update(auth.tenantId).digest('hex').slice(0, 16)
      const key = newObjectKey(`covers/${scope}/${root}`, type.ext)
      // stored before the event row is locked: no lock or connection is held while the store works
      await fromStore(request.log, 'put', () => storage.put(key, data, type.mime))
      try {
        const { event, previous } = await withTenant(db, auth, async (trx) => {
          const row = await lockEventForWrite(trx, auth, id, 'event:edit', { ifMatch: ifMatchOf(request) })
          const url = storage.publicUrl(key) ?? `${config.baseUrl}/api/v1/events/${row.id}/cover`
          const cover = { key, url, content_type: type.mime, size: data.length, sha256: crypto.createHash('sha256').update(data).digest('hex') }
          const updated = await trx.updateTable('events')
            .set({
              cover_image_key: key,
              metadata: sql`metadata || jsonb_build_object('cover_image', ${JSON.stringify(cover)}::jsonb)`,
              revision: sql`revision + 1`,
              updated_at: sql`now()`
            })
            .where('tenant_id', '=', auth.tenantId).where('id', '=', row.id)
            .returningAll().executeTakeFirstOrThrow()
          await emit(trx, { tenantId: auth.tenantId, topic: 'event.cover_updated', aggregateType: 'event', aggregateId: rootOf(row), actorId: auth.userId, payload: { event_id: rootOf(row), template: row.template, cover_image_key: key, content_type: type.mime, size: data.length } })
          return { event: await withSpaces(trx, auth.tenantId, updated), previous: row.cover_image_key }
        })
        if (previous !== null && previous !== key) await forget(request.log, storage, previous)
        setEtag(reply, event.revision)
        return event
      } catch (err) {
        // nothing is kept of a failed upload
        await forget(request.log, storage, key)
        throw err
      }
    })

    app.get('/api/v1/events/:id/cover', {
      schema: {
        operationId: 'get-event-cover',
        summary: 'The cover image of an event (its bytes)',
        tags,
        params: EventParams,
        response: { 200: Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'JPEG, PNG or WebP' }) }
      },
      onRequest: requirePermission('events:read')
    }, async (request, reply) => {
      const row = await withTenant(db, request.auth, trx => readEvent(trx, request.auth, request.params.id))
      const key = row.cover_image_key
      const object = key === null ? undefined : await fromStore(request.log, 'get', () => storage.get(key))
      if (object === undefined) throw error404NotFound('the event has no cover image')
      return await reply.header('content-type', object.contentType).header('cache-control', 'private, max-age=300').send(object.data)
    })
  })
}

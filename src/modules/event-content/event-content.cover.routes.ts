/**
 * The cover image of an event: `PUT /events/{id}/cover` (multipart, one part `file`, JPEG, PNG or
 * WebP recognised by its first bytes, at most COVER_MAX_BYTES) decodes the image and stores it
 * re-encoded (`reencodeImage`: pixels only, so no markup survives) through the object storage (local
 * files, or S3 when configured), and records its key in `events.cover_image_key` and
 * `metadata.cover_image`; `GET /events/{id}/cover` serves it with `nosniff` and a sandboxing CSP.
 * Needs the event permission `event:edit`. A store that fails answers 503 and changes nothing.
 * @fastify/multipart is registered in this plugin's scope only.
 *
 * Keys and objects (docs/storage.md): a key names its tenant and event (`newCoverKey`); an object
 * is read or deleted only when its key belongs to the tenant and to the event at hand (its root, or
 * an event of its series: occurrences share the anchor's cover), and deleted only when no row of
 * the tenant (events, event_series) refers to it any more. The published event and its draft clone
 * share a key until one of them gets a new cover, so replacing the draft's cover keeps the
 * published one. After each upload the event's prefix is swept of objects no row refers to (left by
 * a publish or a discard), but only those older than SWEEP_GRACE_MS: an upload under way has put its
 * object and not yet committed its key.
 */
import crypto from 'node:crypto'
import multipart from '@fastify/multipart'
import { Type } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger } from 'fastify'
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import {
  ApiError, error403Forbidden, error404NotFound, error413PayloadTooLarge, error415UnsupportedMediaType,
  error503ServiceUnavailable, invalidField
} from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { multipartBody } from '../../platform/http/openapi.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { ImageRefused, reencodeImage } from '../../platform/storage/image.ts'
import {
  COVER_TYPES, coverPrefix, createObjectStorage, newCoverKey, parseCoverKey, sniffImage, tenantScope,
  type ObjectStorage
} from '../../platform/storage/storage.ts'
import {
  Event, eventEvent, EventParams, type EventRow, hasEventPermission, lockEventForWrite, readEvent, rootEventId,
  withSpaces
} from '../events/index.ts'
import { COVER_MAX_BYTES } from './event-content.schemas.ts'
import { isOccurrenceOf, referencedKeys, setEventCover } from './event-content.cover.repository.ts'
import { requirePolicy } from '../policy/index.ts'
import { operationsTagged } from '../../platform/http/routes.ts'

const operation = operationsTagged('Event cover')
const MIB = COVER_MAX_BYTES / 1024 / 1024

/**
 * An object younger than this is never swept: an upload may have put it and not committed its key yet (requests end
 * within 30 s).
 */
export const SWEEP_GRACE_MS = 60 * 60 * 1000

/**
 * Headers of a served cover: the stored type only (no sniffing), and nothing a browser would run if it were opened as a
 * page.
 */
const COVER_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cache-control': 'private, max-age=300'
}

interface MultipartErrorLike { code?: string, statusCode?: number }

/** The one `file` part as bytes: 400 without it, 413 above the limit, 415 when not multipart. */
async function readFilePart (request: {
  file: (o: object) => Promise<{ fieldname: string; toBuffer: () => Promise<Buffer> } | undefined>
}): Promise<Buffer> {
  try {
    const part = await request.file({
      limits: { fileSize: COVER_MAX_BYTES, files: 1, fields: 10 },
      throwFileSizeLimit: true
    })
    if (part === undefined) throw invalidField('body.file', 'expected a file part named file')
    if (part.fieldname !== 'file') {
      throw invalidField('body.file', `expected a file part named file, not ${part.fieldname}`)
    }
    const data = await part.toBuffer()
    if (data.length === 0) throw invalidField('body.file', 'expected a non-empty file')
    return data
  } catch (err) {
    const e = err as MultipartErrorLike
    if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.statusCode === 413) {
      throw error413PayloadTooLarge(`the cover image is larger than ${MIB} MiB`)
    }
    if (e.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') {
      throw error415UnsupportedMediaType('expected multipart/form-data with a part named file')
    }
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

/**
 * Removes an object that nothing refers to any more; a failure leaves an orphan and a warning, never a failed request.
 */
async function forget (log: FastifyBaseLogger, storage: ObjectStorage, key: string): Promise<void> {
  try {
    await storage.delete(key)
  } catch (err) {
    log.warn({ err, key }, 'object storage delete failed, the object is left behind')
  }
}

type EventFamily = Pick<EventRow, 'id' | 'published_id' | 'series_id'>

/**
 * Whether `key` is a cover key of this tenant and of this event: made by `newCoverKey` for the
 * tenant, under the event's root (the published row of a draft clone) or under an event of the
 * same series (occurrences share their anchor's cover). Anything else (another tenant's key,
 * `../x`, a key of an unrelated event) is never read nor deleted.
 */
export async function coverKeyBelongs (trx: Tx, tenantId: string, event: EventFamily, key: string): Promise<boolean> {
  const owner = parseCoverKey(key)
  if (owner === undefined || owner.scope !== tenantScope(tenantId)) return false
  if (owner.eventId === rootEventId(event)) return true
  if (event.series_id === null) return false
  return await isOccurrenceOf(trx, tenantId, owner.eventId, event.series_id)
}

/**
 * After an upload committed: deletes the replaced cover and the objects under the event's prefix
 * that no row of the tenant refers to (a replaced draft cover after discard, the published cover
 * after a draft with a new one was published). Checked after the commit, so every committed
 * reference is seen; objects younger than SWEEP_GRACE_MS are left to a later upload. Failures are
 * logged and leave orphans, never a failed request.
 */
async function releaseCovers (
  log: FastifyBaseLogger,
  db: AppContext['db'],
  storage: ObjectStorage,
  auth: AuthContext,
  event: EventFamily,
  replaced: string | null,
  kept: string
): Promise<void> {
  try {
    const root = rootEventId(event)
    // without ListBucket (S3) the sweep is skipped; the replaced cover is still checked and deleted
    const listed = await storage.list(coverPrefix(auth.tenantId, root)).catch((err: unknown) => {
      log.warn({ err }, 'object storage list failed, older unreferenced covers are left for a later upload')
      return []
    })
    const old = Date.now() - SWEEP_GRACE_MS
    const candidates = new Set(
      listed
        .filter(o => o.key !== kept && o.lastModified.getTime() < old && parseCoverKey(o.key) !== undefined)
        .map(o => o.key)
    )
    const gone = await withTenant(db, auth, async trx => {
      if (replaced !== null && replaced !== kept) {
        if (await coverKeyBelongs(trx, auth.tenantId, event, replaced)) candidates.add(replaced)
        else {
          log.warn(
            { key: replaced },
            'the replaced cover key is not of this tenant and event: its object is not deleted'
          )
        }
      }
      const used = await referencedKeys(trx, auth.tenantId, [...candidates])
      return [...candidates].filter(k => !used.has(k))
    })
    for (const key of gone) await forget(log, storage, key)
  } catch (err) {
    log.warn({ err }, 'cover clean-up failed, objects may be left behind')
  }
}

/**
 * `storage` defaults to the store the configuration names (local files, or S3 when S3_BUCKET is set), closed with the
 * app.
 */
export async function coverRoutes (parent: App, { db, config }: AppContext, given?: ObjectStorage): Promise<void> {
  const storage = given ?? await createObjectStorage(config)
  await parent.register(async (instance) => {
    if (given === undefined && storage.close !== undefined) {
      instance.addHook('onClose', async () => {
        await storage.close?.()
      })
    }
    await instance.register(multipart, { limits: { fileSize: COVER_MAX_BYTES, files: 1 } })
    const app = instance.withTypeProvider<TypeBoxTypeProvider>()

    app.put('/api/v1/events/:id/cover', operation('upload-event-cover',
      `Upload the cover image (multipart part "file"; JPEG, PNG or WebP by content; at most ${MIB} MiB: 413 above, ` +
      '415 for other types, 400 when it does not decode; stored re-encoded)', {
        description: 'Uploads the cover image as the multipart part `file` (JPEG, PNG or WebP by content, at most 5 ' +
          'MiB); it is stored re-encoded. A new upload replaces the cover.',
        consumes: ['multipart/form-data'],
        // documentation only: the handler reads the part itself (@fastify/multipart streams it)
        ...multipartBody(
          {
            file: {
              type: 'string',
              format: 'binary',
              contentMediaType: 'application/octet-stream',
              description: `The image: JPEG, PNG or WebP, at most ${MIB} MiB`
            }
          },
          { file: Object.values(COVER_TYPES).join(', ') }
        ),
        params: EventParams,
        response: { 200: Event }
      }, requirePolicy('cover', 'write')), async (request, reply) => {
      const auth = request.auth
      const id = request.params.id
      // who may upload is known before the upload is read
      const root = await withTenant(db, auth, async trx => {
        const row = await readEvent(trx, auth, id)
        if (!(await hasEventPermission(trx, auth, row, 'event:edit'))) {
          throw error403Forbidden('missing event permission event:edit')
        }
        return rootEventId(row)
      })
      const data = await readFilePart(request)
      const type = sniffImage(data)
      if (type === undefined) throw error415UnsupportedMediaType('expected a JPEG, PNG or WebP image')
      // only the decoded pixels are kept: a polyglot does not decode, markup in metadata or after the image is
      // dropped
      let image: Buffer
      try {
        image = await reencodeImage(data, type)
      } catch (err) {
        if (err instanceof ImageRefused) throw invalidField('body.file', err.message)
        throw err
      }

      const key = newCoverKey(auth.tenantId, root, type.ext)
      // stored before the event row is locked: no lock or connection is held while the store works
      await fromStore(request.log, 'put', () => storage.put(key, image, type.mime))
      let written: { event: Awaited<ReturnType<typeof withSpaces>>; previous: string | null; locked: EventRow }
      try {
        written = await withTenant(db, auth, async trx => {
          const row = await lockEventForWrite(trx, auth, id, 'event:edit', { ifMatch: ifMatchOf(request) })
          // the published event's address: a draft clone's id no longer answers once the draft is published
          const url = storage.publicUrl(key) ?? `${config.baseUrl}/api/v1/events/${rootEventId(row)}/cover`
          const cover = {
            key,
            url,
            content_type: type.mime,
            size: image.length,
            sha256: crypto.createHash('sha256').update(image).digest('hex')
          }
          const updated = await setEventCover(trx, auth.tenantId, row.id, key, cover)
          await emit(trx, eventEvent(auth, rootEventId(row), 'event.cover_updated', {
            event_id: rootEventId(row),
            template: row.template,
            cover_image_key: key,
            content_type: type.mime,
            size: image.length
          }))
          return { event: await withSpaces(trx, auth.tenantId, updated), previous: row.cover_image_key, locked: row }
        })
      } catch (err) {
        // nothing is kept of a failed upload
        await forget(request.log, storage, key)
        throw err
      }
      // the replaced cover goes only if nothing refers to it any more (the published event keeps a key its draft
      // clone replaced)
      await releaseCovers(request.log, db, storage, auth, written.locked, written.previous, key)
      setEtag(reply, written.event.revision)
      return written.event
    })

    app.get('/api/v1/events/:id/cover', operation('get-event-cover', 'The cover image of an event (its bytes)', {
      description: 'The bytes of the event\'s cover image in its stored type. Answers 404 when the event has no cover.',
      params: EventParams,
      // the stored type: one of these (the document lists each, with the image bytes as body)
      produces: [...new Set(Object.values(COVER_TYPES))],
      response: {
        200: Type.Unsafe<Buffer>({
          type: 'string',
          format: 'binary',
          description: 'The image bytes: JPEG, PNG or WebP'
        })
      }
    }, requirePolicy('cover', 'read')), async (request, reply) => {
      const auth = request.auth
      const key = await withTenant(db, auth, async trx => {
        const row = await readEvent(trx, auth, request.params.id)
        if (row.cover_image_key === null) return null
        if (await coverKeyBelongs(trx, auth.tenantId, row, row.cover_image_key)) return row.cover_image_key
        request.log.warn(
          { key: row.cover_image_key, event: row.id },
          'the cover key is not of this tenant and event: not read'
        )
        return null
      })
      const object = key === null ? undefined : await fromStore(request.log, 'get', () => storage.get(key))
      if (key === null || object === undefined) throw error404NotFound('the event has no cover image')
      // the type stored with the object when it is an image type; else the one the key's extension stands for
      const ext = parseCoverKey(key)?.ext ?? 'png'
      const contentType = (Object.values(COVER_TYPES) as string[]).includes(object.contentType)
        ? object.contentType
        : COVER_TYPES[ext]
      return await reply.headers({ ...COVER_HEADERS, 'content-type': contentType }).send(object.data)
    })
  })
}

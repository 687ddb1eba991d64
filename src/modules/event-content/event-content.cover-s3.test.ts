import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { problemIssues } from '../../../test/helpers/problem.ts'
import { startS3Emulator, type S3Emulator } from '../../../test/helpers/s3.ts'
import {
  GIF, JPEG, JPEG_CARRYING_HTML, PNG, sha256, TOO_LARGE, uploadExpecting, WEBP
} from './event-content.cover.fixtures.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import { createEvent, getEvent, outboxTopics, publishEvent } from '../attendees/attendees.fixtures.ts'

/** where the covers of a tenant's event go in the bucket */
const prefixOf = (tenantId: string, eventId: number): string =>
  `covers/${crypto.createHash('sha256').update(tenantId).digest('hex').slice(0, 16)}/${eventId}/`

/**
 * An app configured for the emulator. The emulator starts first: its port is known only then, and
 * useTestApp reads `env` when its own `before` runs.
 */
function useS3App (
  kind: ReturnType<typeof databases>[number],
  extra: (s3: S3Emulator) => Record<string, string> = () => ({})
): { t: TestApp; s3: () => S3Emulator } {
  let s3: S3Emulator | undefined
  const env: Record<string, string> = {}
  before(async () => {
    s3 = await startS3Emulator()
    Object.assign(env, s3.env, extra(s3))
  })
  const t = useTestApp(kind, { env })
  after(async () => {
    await s3?.stop()
  })
  return { t, s3: () => s3 ?? assert.fail('the emulator is not running') }
}

for (const kind of databases()) {
  void describe(`${kind}: event cover on S3 with a public URL`, () => {
    const { t, s3 } = useS3App(kind, s3 => ({ S3_PUBLIC_URL: `${s3.endpoint}/${s3.bucket}` }))

    void it('stores the image in the bucket with its type, links it by its public URL, ' +
      'and the service serves it too', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { metadata: { room: 'A' } })
      const res = await uploadExpecting(t, alice, event.id, PNG, 200, { type: 'application/octet-stream' })
      const e = res.json()
      assert.ok(e.cover_image_key.startsWith(prefixOf(tenant.id, event.id)), e.cover_image_key)
      assert.match(e.cover_image_key, /\/[0-9a-f]{24}\.png$/)
      const url = `${s3().endpoint}/${s3().bucket}/${e.cover_image_key}`
      assert.deepEqual(
        { ...e.metadata.cover_image, sha256: '', size: 0 },
        { key: e.cover_image_key, url, content_type: 'image/png', size: 0, sha256: '' }
      )
      assert.equal(e.metadata.room, 'A')
      assert.equal((await getEvent(t, alice, event.id)).json().metadata.cover_image.url, url)

      // in the bucket, re-encoded (size and hash recorded); the type is the recognised one, not the declared one
      assert.deepEqual(await s3().keys(prefixOf(tenant.id, event.id)), [e.cover_image_key])
      const stored = await s3().object(e.cover_image_key)
      assert.equal(stored.contentType, 'image/png')
      assert.equal(stored.data.length, e.metadata.cover_image.size)
      assert.equal(sha256(stored.data), e.metadata.cover_image.sha256)
      // the public URL answers with the image
      const fetched = await fetch(url)
      assert.equal(fetched.status, 200)
      assert.equal(fetched.headers.get('content-type'), 'image/png')
      assert.deepEqual(Buffer.from(await fetched.arrayBuffer()), stored.data)
      // and so does the service
      const img = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })
      assert.equal(img.statusCode, 200)
      assert.equal(img.headers['content-type'], 'image/png')
      assert.equal(img.headers['x-content-type-options'], 'nosniff')
      assert.deepEqual(img.rawPayload, stored.data)
      assert.ok((await outboxTopics(t, tenant.id)).includes('event.cover_updated'))
    })

    void it('replacing a cover deletes the old object from the bucket', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      await uploadExpecting(t, alice, event.id, PNG, 200)
      await uploadExpecting(t, alice, event.id, JPEG, 200)
      const third = await uploadExpecting(t, alice, event.id, WEBP, 200)
      const key = third.json().cover_image_key
      assert.deepEqual(await s3().keys(prefixOf(tenant.id, event.id)), [key])
      assert.equal(sha256((await s3().object(key)).data), third.json().metadata.cover_image.sha256)
      assert.equal(third.headers.etag, '"4"')
    })

    void it('a refused upload leaves the bucket and the event as they were', async () => {
      const { alice, event } = await aliceWithEvent(t)
      const ok = await uploadExpecting(t, alice, event.id, PNG, 200)
      const before = await s3().keys('covers/')

      const gif = await uploadExpecting(t, alice, event.id, GIF, 415, { type: 'image/png' })
      assert.deepEqual(problemIssues(gif), [])
      await uploadExpecting(t, alice, event.id, TOO_LARGE, 413)
      // a stale If-Match is found only once the event is locked, after the image was stored: the object goes again
      const stale = await uploadExpecting(t, alice, event.id, JPEG, 412, { headers: { 'if-match': '"1"' } })
      assert.deepEqual(problemIssues(stale), [])

      assert.deepEqual(await s3().keys('covers/'), before)
      const after = await getEvent(t, alice, event.id)
      assert.equal(after.headers.etag, '"2"')
      assert.equal(after.json().cover_image_key, ok.json().cover_image_key)
    })

    void it('answers 503 while the store is down, changes nothing, and works again when it is back', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const ok = await uploadExpecting(t, alice, event.id, PNG, 200)

      await s3().pause()
      try {
        const down = await uploadExpecting(t, alice, event.id, JPEG, 503)
        assert.deepEqual(problemIssues(down), [])
        assert.equal(down.json().detail, 'the object storage is unavailable, try again later')
        assert.equal(down.headers['retry-after'], '5')
        const read = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })
        assert.equal(read.statusCode, 503, read.body)
        assert.deepEqual(problemIssues(read), [])

        const unchanged = await getEvent(t, alice, event.id)
        assert.equal(unchanged.headers.etag, '"2"')
        assert.deepEqual(unchanged.json().metadata.cover_image, ok.json().metadata.cover_image)
        assert.equal((await outboxTopics(t, tenant.id)).filter(topic => topic === 'event.cover_updated').length, 1)
      } finally {
        await s3().resume()
      }

      assert.deepEqual(await s3().keys(prefixOf(tenant.id, event.id)), [ok.json().cover_image_key])
      const img = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })
      assert.equal(img.statusCode, 200)
      assert.equal(sha256(img.rawPayload), ok.json().metadata.cover_image.sha256)
      const again = await uploadExpecting(t, alice, event.id, JPEG, 200)
      assert.deepEqual(await s3().keys(prefixOf(tenant.id, event.id)), [again.json().cover_image_key])
    })
  })

  void describe(`${kind}: event cover on S3 without a public URL`, () => {
    const { t, s3 } = useS3App(kind)

    void it('links the service address and serves the object from the bucket', async () => {
      const { alice, event } = await aliceWithEvent(t)
      const res = await uploadExpecting(t, alice, event.id, JPEG, 200)
      const key = res.json().cover_image_key
      assert.equal(res.json().metadata.cover_image.url, `http://localhost:8080/api/v1/events/${event.id}/cover`)
      const stored = await s3().object(key)
      assert.equal(stored.contentType, 'image/jpeg')
      assert.equal(sha256(stored.data), res.json().metadata.cover_image.sha256)
      const img = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })
      assert.equal(img.statusCode, 200)
      assert.equal(img.headers['content-type'], 'image/jpeg')
      assert.equal(img.headers['content-security-policy'], "default-src 'none'; sandbox")
      assert.deepEqual(img.rawPayload, stored.data)
    })

    void it('stores no markup a JPEG carried: the bucket holds the re-encoded pixels only', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      const res = await uploadExpecting(t, alice, event.id, JPEG_CARRYING_HTML, 200, { type: 'text/html' })
      const stored = await s3().object(res.json().cover_image_key)
      assert.equal(stored.data.includes('<script'), false)
      assert.equal(stored.contentType, 'image/jpeg')
    })

    void it('never reads nor deletes another tenant\'s object through a key written into a row', async () => {
      const alice = await newTenant(t).user('alice')
      const mine = await createEvent(t, alice)
      const uploaded = await uploadExpecting(t, alice, mine.id, PNG, 200)
      const victimKey: string = uploaded.json().cover_image_key
      const victim = await s3().object(victimKey)

      const b = newTenant(t)
      const mallory = await b.user('mallory', ['admin'])
      const theirs = await createEvent(t, mallory)
      for (const bad of [victimKey, '../x.png']) {
        await withTenant(t.ctx.db, { tenantId: b.id }, async (trx) => {
          await trx
            .updateTable('events')
            .set({ cover_image_key: bad })
            .where('tenant_id', '=', b.id)
            .where('id', '=', theirs.id)
            .execute()
        })
        const read = await t.as(mallory, { method: 'GET', url: `/api/v1/events/${theirs.id}/cover` })
        assert.equal(read.statusCode, 404, read.body)
        await uploadExpecting(t, mallory, theirs.id, JPEG, 200)
        assert.deepEqual(await s3().object(victimKey), victim, bad)
      }
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${mine.id}/cover` })).statusCode, 200)
    })

    void it('a cover uploaded to a draft leaves the published object in the bucket; ' +
      'after discard it is still served', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      await publishEvent(t, alice, event.id)
      const first = await uploadExpecting(t, alice, event.id, PNG, 200)
      const publishedKey: string = first.json().cover_image_key
      const draft = await t.as(alice, { method: 'POST', url: `/api/v1/events/${event.id}/edit` })
      assert.equal(draft.statusCode, 200, draft.body)
      const onDraft = await uploadExpecting(t, alice, draft.json().id, JPEG, 200)
      assert.deepEqual(
        await s3().keys(prefixOf(tenant.id, event.id)),
        [publishedKey, onDraft.json().cover_image_key].sort()
      )
      assert.equal((await t.as(alice, { method: 'POST', url: `/api/v1/events/${event.id}/discard` })).statusCode, 204)
      const img = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })
      assert.equal(img.statusCode, 200, img.body)
      assert.equal(sha256(img.rawPayload), first.json().metadata.cover_image.sha256)
    })
  })
}

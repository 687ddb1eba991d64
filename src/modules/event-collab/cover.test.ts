import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { JPEG, PNG, upload, WEBP } from './cover.fixtures.ts'
import { addManager, createEvent, getEvent, outboxTopics } from './event-collab.fixtures.ts'
import { COVER_MAX_BYTES } from './event-collab.schemas.ts'

function storedFiles (t: TestApp): string[] {
  const root = path.join(t.config.dataDir, 'objects')
  if (!fs.existsSync(root)) return []
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter(f => !f.endsWith('.type') && fs.statSync(path.join(root, f)).isFile())
}

for (const kind of databases()) {
  void describe(`${kind}: event cover image`, () => {
    const t = useTestApp(kind)

    void it('stores PNG, JPEG and WebP by content, records the key, returns the event, serves the image', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice, { metadata: { room: 'A' } })
      const res = await upload(t, alice, event.id, PNG, { type: 'application/octet-stream' })
      assert.equal(res.statusCode, 200, res.body)
      const e = res.json()
      assert.equal(e.$schema, 'http://localhost:8080/schemas/Event.json')
      assert.match(e.cover_image_key, /^covers\/[0-9a-f]{16}\/\d+\/[0-9a-f]{24}\.png$/)
      assert.equal(e.metadata.room, 'A')
      assert.deepEqual({ ...e.metadata.cover_image, sha256: '' }, { key: e.cover_image_key, url: `http://localhost:8080/api/v1/events/${event.id}/cover`, content_type: 'image/png', size: PNG.length, sha256: '' })
      assert.equal(res.headers.etag, '"2"')
      assert.equal((await getEvent(t, alice, event.id)).json().cover_image_key, e.cover_image_key)

      const img = await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })
      assert.equal(img.statusCode, 200)
      assert.equal(img.headers['content-type'], 'image/png')
      assert.deepEqual(img.rawPayload, PNG)

      const jpeg = await upload(t, alice, event.id, JPEG)
      assert.equal(jpeg.statusCode, 200, jpeg.body)
      assert.match(jpeg.json().cover_image_key, /\.jpg$/)
      const webp = await upload(t, alice, event.id, WEBP)
      assert.equal(webp.statusCode, 200, webp.body)
      assert.equal(webp.json().metadata.cover_image.content_type, 'image/webp')
      // replaced covers are removed from storage
      assert.equal(storedFiles(t).filter(f => f.includes(`${path.sep}${event.id}${path.sep}`)).length, 1)
      assert.ok((await outboxTopics(t, tenant.id)).includes('event.cover_updated'))
    })

    void it('refuses other content (415), too large files (413), a missing part (400), and stores nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      const before = storedFiles(t).length

      const gif = await upload(t, alice, event.id, Buffer.from('GIF89a' + 'x'.repeat(50)), { type: 'image/png' })
      assert.equal(gif.statusCode, 415, gif.body)
      const big = await upload(t, alice, event.id, Buffer.concat([PNG, Buffer.alloc(COVER_MAX_BYTES)]))
      assert.equal(big.statusCode, 413, big.body)
      const wrongName = await upload(t, alice, event.id, PNG, { name: 'image' })
      assert.equal(wrongName.statusCode, 400, wrongName.body)
      assert.equal(wrongName.json().errors[0].location, 'body.file')
      const json = await t.as(alice, { method: 'PUT', url: `/api/v1/events/${event.id}/cover`, payload: { file: 'x' } })
      assert.equal(json.statusCode, 415, json.body)

      assert.equal(storedFiles(t).length, before)
      const after = await getEvent(t, alice, event.id)
      assert.equal(after.json().cover_image_key, null)
      assert.equal(after.headers.etag, '"1"')
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })).statusCode, 404)
    })

    void it('needs event:edit: 403 for other managers, 404 for other tenants, nothing changed', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice)
      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, event.id, 'bob', { role: 'event_manager:attendees' })
      assert.equal((await upload(t, bob, event.id, PNG)).statusCode, 403)
      const carol = await tenant.user('carol')
      await addManager(t, tenant.id, event.id, 'carol', { permissions: ['event:edit'] })
      assert.equal((await upload(t, carol, event.id, PNG)).statusCode, 200)
      const mallory = await newTenant(t).user('mallory', ['admin'])
      assert.equal((await upload(t, mallory, event.id, JPEG)).statusCode, 404)
      assert.equal((await t.as(mallory, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })).statusCode, 404)
      assert.match((await getEvent(t, alice, event.id)).json().cover_image_key, /\.png$/)
    })
  })
}

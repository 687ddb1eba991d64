import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import {
  GIF, HTML, JPEG, JPEG_CARRYING_HTML, JPEG_HEADER_HTML, PNG, sha256, TOO_LARGE, upload, uploadExpecting, WEBP
} from './event-content.cover.fixtures.ts'
import { SWEEP_GRACE_MS } from './event-content.cover.routes.ts'
import { aliceWithEvent } from '../events/events.fixtures.ts'
import {
  addManager, createEvent, getEvent, outboxTopics, publishEvent, type Json
} from '../attendees/attendees.fixtures.ts'

function storedFiles (t: TestApp): string[] {
  const root = path.join(t.config.dataDir, 'objects')
  if (!fs.existsSync(root)) return []
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter(
    f => !f.endsWith('.type') && fs.statSync(path.join(root, f)).isFile()
  )
}

const fileOf = (t: TestApp, key: string): string => path.join(t.config.dataDir, 'objects', ...key.split('/'))
/** the object's bytes in the local store, undefined when it is not there */
const objectBytes = (t: TestApp, key: string): Buffer | undefined =>
  fs.existsSync(fileOf(t, key)) ? fs.readFileSync(fileOf(t, key)) : undefined
/** makes an object look older than the sweep's grace period, as if written an hour and a minute ago */
function backdate (t: TestApp, key: string): void {
  const then = new Date(Date.now() - SWEEP_GRACE_MS - 60_000)
  fs.utimesSync(fileOf(t, key), then, then)
}
/** a legacy row: the key written straight into the event, as a series PATCH or an old bug could have left it */
async function setCoverKey (t: TestApp, tenantId: string, eventId: number, key: string): Promise<void> {
  await withTenant(t.ctx.db, { tenantId }, async (trx) => {
    await trx
      .updateTable('events')
      .set({ cover_image_key: key })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', eventId)
      .execute()
  })
}
const getCover = async (t: TestApp, token: string, id: number) =>
  await t.as(token, { method: 'GET', url: `/api/v1/events/${id}/cover` })
async function post (t: TestApp, token: string, url: string, status: number): Promise<Json> {
  const res = await t.as(token, { method: 'POST', url })
  assert.equal(res.statusCode, status, res.body)
  return status === 204 ? {} : res.json()
}
/** the bytes answered are the ones the upload recorded (size and SHA-256 in metadata.cover_image) */
function assertServes (res: Awaited<ReturnType<typeof getCover>>, cover: Json): void {
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['content-type'], cover.content_type)
  assert.equal(res.rawPayload.length, cover.size)
  assert.equal(sha256(res.rawPayload), cover.sha256)
}

for (const kind of databases()) {
  void describe(`${kind}: event cover image`, () => {
    const t = useTestApp(kind)

    void it('stores PNG, JPEG and WebP by content, records the key, returns the event, serves the image', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t, { metadata: { room: 'A' } })
      const res = await uploadExpecting(t, alice, event.id, PNG, 200, { type: 'application/octet-stream' })
      const e = res.json()
      assert.equal(e.$schema, 'http://localhost:8080/schemas/Event.json')
      assert.match(e.cover_image_key, /^covers\/[0-9a-f]{16}\/\d+\/[0-9a-f]{24}\.png$/)
      assert.equal(e.metadata.room, 'A')
      // the stored image is the re-encoded one: its size and hash are recorded
      assert.deepEqual(
        { ...e.metadata.cover_image, sha256: '', size: 0 },
        {
          key: e.cover_image_key,
          url: `http://localhost:8080/api/v1/events/${event.id}/cover`,
          content_type: 'image/png',
          size: 0,
          sha256: ''
        }
      )
      assert.match(e.metadata.cover_image.sha256, /^[0-9a-f]{64}$/)
      assert.equal(res.headers.etag, '"2"')
      assert.equal((await getEvent(t, alice, event.id)).json().cover_image_key, e.cover_image_key)

      const img = await getCover(t, alice, event.id)
      assertServes(img, e.metadata.cover_image)
      assert.deepEqual(img.rawPayload.subarray(0, 8), PNG.subarray(0, 8))
      assert.deepEqual(objectBytes(t, e.cover_image_key), img.rawPayload)

      const jpeg = await uploadExpecting(t, alice, event.id, JPEG, 200)
      assert.match(jpeg.json().cover_image_key, /\.jpg$/)
      const webp = await uploadExpecting(t, alice, event.id, WEBP, 200)
      assert.equal(webp.json().metadata.cover_image.content_type, 'image/webp')
      // replaced covers are removed from storage
      assert.equal(storedFiles(t).filter(f => f.includes(`${path.sep}${event.id}${path.sep}`)).length, 1)
      assert.ok((await outboxTopics(t, tenant.id)).includes('event.cover_updated'), 'a cover_updated event')
    })

    void it('refuses other content (415), too large files (413), a missing part (400), ' +
      'and stores nothing', async () => {
      const { alice, event } = await aliceWithEvent(t)
      const before = storedFiles(t).length

      await uploadExpecting(t, alice, event.id, GIF, 415, { type: 'image/png' })
      await uploadExpecting(t, alice, event.id, TOO_LARGE, 413)
      const wrongName = await uploadExpecting(t, alice, event.id, PNG, 400, { name: 'image' })
      assert.equal(wrongName.json().errors[0].location, 'body.file')
      const json = await t.as(alice, { method: 'PUT', url: `/api/v1/events/${event.id}/cover`, payload: { file: 'x' } })
      assert.equal(json.statusCode, 415, json.body)

      assert.equal(storedFiles(t).length, before)
      const after = await getEvent(t, alice, event.id)
      assert.equal(after.json().cover_image_key, null)
      assert.equal(after.headers.etag, '"1"')
      assert.equal((await t.as(alice, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })).statusCode, 404)
    })

    void it('serves covers with nosniff, a sandboxing CSP and the stored type', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      for (const [image, type] of [[JPEG, 'image/jpeg'], [PNG, 'image/png'], [WEBP, 'image/webp']] as const) {
        const res = await uploadExpecting(t, alice, event.id, image, 200, { type: 'text/html' })
        const img = await getCover(t, alice, event.id)
        assertServes(img, res.json().metadata.cover_image)
        assert.equal(img.headers['content-type'], type)
        assert.equal(img.headers['x-content-type-options'], 'nosniff')
        assert.equal(img.headers['content-security-policy'], "default-src 'none'; sandbox")
      }
    })

    void it('refuses a JPEG header followed by HTML with 400 on body.file, and stores nothing', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const before = storedFiles(t).length
      const res = await uploadExpecting(t, alice, event.id, JPEG_HEADER_HTML, 400, { type: 'image/jpeg' })
      assert.equal(res.json().errors[0].location, 'body.file')
      assert.match(res.json().errors[0].message, /not a readable JPEG image/)
      // a PNG signature before JPEG bytes: the content is not what its first bytes announce
      const mixed = await uploadExpecting(t, alice, event.id, Buffer.concat([PNG.subarray(0, 8), JPEG]), 400)
      assert.equal(mixed.json().errors[0].location, 'body.file')
      assert.equal(storedFiles(t).length, before)
      const after = await getEvent(t, alice, event.id)
      assert.equal(after.json().cover_image_key, null)
      assert.equal(after.headers.etag, '"1"')
      assert.ok(!(await outboxTopics(t, tenant.id)).includes('event.cover_updated'), 'no cover_updated event')
    })

    void it('keeps the pixels only: markup in a JPEG comment or after its end is not stored nor served', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      assert.ok(JPEG_CARRYING_HTML.includes(HTML), 'the fixture carries the page')
      const res = await uploadExpecting(t, alice, event.id, JPEG_CARRYING_HTML, 200, { type: 'image/jpeg' })
      const stored = objectBytes(t, res.json().cover_image_key) ?? assert.fail('the object is stored')
      assert.ok(!stored.includes('<script') && !stored.includes('<html'), 'no markup in the stored bytes')
      const img = await getCover(t, alice, event.id)
      assertServes(img, res.json().metadata.cover_image)
      assert.ok(!img.rawPayload.includes('<script'), 'no markup served')
      assert.deepEqual(img.rawPayload.subarray(0, 3), Buffer.from([0xff, 0xd8, 0xff]))
    })

    void it('never reads nor deletes an object through a key of another tenant or outside the ' +
      'generated form', async () => {
      const a = newTenant(t)
      const alice = await a.user('alice')
      const mine = await createEvent(t, alice)
      const uploaded = await uploadExpecting(t, alice, mine.id, PNG, 200)
      const victimKey: string = uploaded.json().cover_image_key
      const victimBytes = objectBytes(t, victimKey) ?? assert.fail('stored')

      const b = newTenant(t)
      const mallory = await b.user('mallory', ['admin'])
      const theirs = await createEvent(t, mallory)
      // a file beside the object root, reachable with ../ from a key
      fs.writeFileSync(path.join(t.config.dataDir, 'secret.png'), 'secret')
      const otherEvent = await createEvent(t, mallory)
      const sameTenantOtherEvent = (await upload(t, mallory, otherEvent.id, JPEG)).json().cover_image_key as string
      for (const bad of [
        victimKey,
        '../secret.png',
        'covers/../../secret.png',
        victimKey.replace(/\/\d+\//, `/${theirs.id}/`),
        sameTenantOtherEvent
      ]) {
        await setCoverKey(t, b.id, theirs.id, bad)
        const read = await getCover(t, mallory, theirs.id)
        assert.equal(read.statusCode, 404, `${bad}: ${read.body}`)
        assert.equal(read.json().detail, 'the event has no cover image')
        // replacing the cover must not delete what the bad key names
        backdate(t, victimKey)
        await uploadExpecting(t, mallory, theirs.id, WEBP, 200)
        assert.deepEqual(objectBytes(t, victimKey), victimBytes, bad)
        assert.ok(objectBytes(t, sameTenantOtherEvent) !== undefined, bad)
      }
      assert.equal(fs.readFileSync(path.join(t.config.dataDir, 'secret.png'), 'utf8'), 'secret')
      // the owner still reads it
      assertServes(await getCover(t, alice, mine.id), uploaded.json().metadata.cover_image)
      assert.equal(objectBytes(t, victimKey)?.length, uploaded.json().metadata.cover_image.size)
    })

    void it('a cover uploaded to a draft clone keeps the published cover; discarding the draft leaves it served with ' +
      'the same bytes', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      await publishEvent(t, alice, event.id)
      const first = await uploadExpecting(t, alice, event.id, PNG, 200)
      const publishedKey: string = first.json().cover_image_key
      const publishedBytes = (await getCover(t, alice, event.id)).rawPayload

      const draft = await post(t, alice, `/api/v1/events/${event.id}/edit`, 200)
      assert.equal(draft.cover_image_key, publishedKey)
      const onDraft = await uploadExpecting(t, alice, draft.id, JPEG, 200)
      const draftKey: string = onDraft.json().cover_image_key
      assert.notEqual(draftKey, publishedKey)
      assert.ok(objectBytes(t, publishedKey) !== undefined, 'the published cover is still stored')
      const readers = await getCover(t, alice, event.id)
      assert.equal(readers.headers['content-type'], 'image/png')
      assert.deepEqual(readers.rawPayload, publishedBytes)
      assertServes(await getCover(t, alice, draft.id), onDraft.json().metadata.cover_image)
      // the draft's cover is addressed through the published event, under its prefix
      assert.equal(onDraft.json().metadata.cover_image.url, `http://localhost:8080/api/v1/events/${event.id}/cover`)

      await post(t, alice, `/api/v1/events/${event.id}/discard`, 204)
      const after = await getCover(t, alice, event.id)
      assert.equal(after.statusCode, 200, after.body)
      assert.deepEqual(after.rawPayload, publishedBytes)
      assert.equal((await getEvent(t, alice, event.id)).json().cover_image_key, publishedKey)

      // the discarded draft's object is swept by a later upload once it is older than the grace period
      assert.ok(objectBytes(t, draftKey) !== undefined, "the discarded draft's object is still there")
      backdate(t, draftKey)
      const next = await uploadExpecting(t, alice, event.id, WEBP, 200)
      assert.equal(objectBytes(t, draftKey), undefined)
      assert.equal(objectBytes(t, publishedKey), undefined)
      assert.deepEqual(
        storedFiles(t)
          .filter(f => f.includes(`${path.sep}${event.id}${path.sep}`))
          .map(f => f.split(path.sep).pop()),
        [next.json().cover_image_key.split('/').pop()]
      )
    })

    void it('publishing a draft with a new cover: the old object goes only once no row refers to it, ' +
      'and never while it is young', async () => {
      const alice = await newTenant(t).user('alice')
      const event = await createEvent(t, alice)
      await publishEvent(t, alice, event.id)
      const oldKey: string = (await upload(t, alice, event.id, PNG)).json().cover_image_key
      const draft = await post(t, alice, `/api/v1/events/${event.id}/edit`, 200)
      const onDraft = await uploadExpecting(t, alice, draft.id, JPEG, 200)
      const newKey: string = onDraft.json().cover_image_key
      // still referenced by the published row: kept even when old
      backdate(t, oldKey)
      await uploadExpecting(t, alice, draft.id, JPEG, 200)
      const draftKey: string = (await getEvent(t, alice, draft.id)).json().cover_image_key
      assert.ok(objectBytes(t, oldKey) !== undefined, 'the published cover stays while the published row refers to it')
      assert.equal(objectBytes(t, newKey), undefined, "the draft's replaced cover, referenced by no row, is deleted")

      await publishEvent(t, alice, event.id)
      const published = (await getEvent(t, alice, event.id)).json()
      assert.equal(published.cover_image_key, draftKey)
      assertServes(await getCover(t, alice, event.id), published.metadata.cover_image)
      // no row refers to the old cover any more; an unreferenced but young object (an upload under way) is left alone
      const young = `covers/${oldKey.split('/')[1]}/${event.id}/${'0'.repeat(24)}.png`
      fs.copyFileSync(fileOf(t, oldKey), fileOf(t, young))
      const replaced = await uploadExpecting(t, alice, event.id, WEBP, 200)
      assert.equal(objectBytes(t, oldKey), undefined, 'the unreferenced old cover is deleted')
      assert.equal(objectBytes(t, draftKey), undefined, 'the replaced published cover is deleted')
      assert.ok(objectBytes(t, young) !== undefined, 'a young object is not swept')
      assertServes(await getCover(t, alice, event.id), replaced.json().metadata.cover_image)
    })

    void it("occurrences that share their anchor's cover (rows from before covers became per event) read it, " +
      'and it stays while any row refers to it', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const anchor = await createEvent(t, alice, { start_dt: '2027-03-15T09:00:00Z', end_dt: '2027-03-15T10:00:00Z' })
      const res = await uploadExpecting(t, alice, anchor.id, PNG, 200)
      const key: string = res.json().cover_image_key
      const made = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/events/${anchor.id}/series`,
        payload: { freq: 'daily', ends_on: 'after_n', end_count: 3 }
      })
      assert.equal(made.statusCode, 201, made.body)
      const occurrences = (made.json() as Json[]).filter(o => o.id !== anchor.id)
      assert.equal(occurrences.length, 2)
      // earlier versions copied the anchor's key to every occurrence and to the series row
      for (const o of occurrences) await setCoverKey(t, tenant.id, o.id, key)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .updateTable('event_series')
          .set({ cover_image_key: key })
          .where('tenant_id', '=', tenant.id)
          .where('id', '=', occurrences[0]?.series_id as number)
          .execute()
      })
      for (const o of occurrences) assertServes(await getCover(t, alice, o.id), res.json().metadata.cover_image)
      // a new cover on one occurrence: the shared object stays for the anchor and the other occurrence
      backdate(t, key)
      const own = await uploadExpecting(t, alice, occurrences[0]?.id as number, JPEG, 200)
      assert.ok(objectBytes(t, key) !== undefined, "the anchor's cover is kept")
      assertServes(await getCover(t, alice, anchor.id), res.json().metadata.cover_image)
      assertServes(await getCover(t, alice, occurrences[1]?.id as number), res.json().metadata.cover_image)
      assertServes(await getCover(t, alice, occurrences[0]?.id as number), own.json().metadata.cover_image)
      // the anchor and the other occurrence move on too: the series row alone still refers to the key (new occurrences
      // may copy it)
      await uploadExpecting(t, alice, anchor.id, WEBP, 200)
      await uploadExpecting(t, alice, occurrences[1]?.id as number, WEBP, 200)
      assert.ok(objectBytes(t, key) !== undefined, 'kept while the series row refers to it')
      // an event of another series, or of none, does not read it
      const stranger = await createEvent(t, alice)
      await setCoverKey(t, tenant.id, stranger.id, key)
      assert.equal((await getCover(t, alice, stranger.id)).statusCode, 404)
    })

    void it('needs event:edit: 403 for other managers, 404 for other tenants, nothing changed', async () => {
      const { tenant, alice, event } = await aliceWithEvent(t)
      const bob = await tenant.user('bob')
      await addManager(t, tenant.id, event.id, 'bob', { role: 'event_manager:attendees' })
      await uploadExpecting(t, bob, event.id, PNG, 403)
      const carol = await tenant.user('carol')
      await addManager(t, tenant.id, event.id, 'carol', { permissions: ['event:edit'] })
      await uploadExpecting(t, carol, event.id, PNG, 200)
      const mallory = await newTenant(t).user('mallory', ['admin'])
      await uploadExpecting(t, mallory, event.id, JPEG, 404)
      assert.equal((await t.as(mallory, { method: 'GET', url: `/api/v1/events/${event.id}/cover` })).statusCode, 404)
      assert.match((await getEvent(t, alice, event.id)).json().cover_image_key, /\.png$/)
    })
  })
}

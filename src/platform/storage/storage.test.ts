import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import {
  assertSafeKey, coverPrefix, localStorage, newCoverKey, newObjectKey, parseCoverKey, sniffImage, tenantScope
} from './storage.ts'

void describe('object storage', () => {
  void it('recognises JPEG, PNG and WebP by their first bytes only', () => {
    assert.deepEqual(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0])), { mime: 'image/jpeg', ext: 'jpg' })
    assert.deepEqual(sniffImage(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0])), {
      mime: 'image/png',
      ext: 'png'
    })
    assert.deepEqual(sniffImage(Buffer.from('RIFF\0\0\0\0WEBPVP8 ')), { mime: 'image/webp', ext: 'webp' })
    assert.equal(sniffImage(Buffer.from('GIF89a')), undefined)
    assert.equal(sniffImage(Buffer.from('RIFF\0\0\0\0WAVEfmt ')), undefined)
    assert.equal(sniffImage(Buffer.alloc(0)), undefined)
  })

  void it('refuses keys that leave the root', () => {
    for (const bad of ['../x', 'a/../../b', '/abs', 'a//b', 'a/./b', '', 'a b']) {
      assert.throws(() => {
        assertSafeKey(bad)
      }, /unsafe object key/)
    }
    assertSafeKey(newObjectKey('covers/abc/1', 'png'))
  })

  void it('makes cover keys that name their tenant and event, and reads the owner back only from keys ' +
    'in that form', () => {
    const key = newCoverKey('acme', 42, 'png')
    assert.match(key, /^covers\/[0-9a-f]{16}\/42\/[0-9a-f]{24}\.png$/)
    assert.ok(key.startsWith(coverPrefix('acme', 42)), key)
    assert.equal(tenantScope('acme').length, 16)
    assert.notEqual(tenantScope('acme'), tenantScope('acme2'))
    assert.deepEqual(parseCoverKey(key), { scope: tenantScope('acme'), eventId: 42, ext: 'png' })
    assertSafeKey(key)
    const random = key.split('/')[3] as string
    for (const bad of [
      '../x.png',
      `covers/${tenantScope('acme')}/../${random}`,
      `covers/${tenantScope('acme')}/42/../../x/${random}`,
      `covers/${tenantScope('acme')}/042/${random}`,
      `covers/${tenantScope('acme')}/0/${random}`,
      `covers/${tenantScope('acme')}/42/${random}.html`,
      `covers/ACME/42/${random}`,
      `x/${key}`,
      `${key}/x`,
      `covers/${tenantScope('acme')}/42/${random.slice(1)}`,
      `covers/${tenantScope('acme')}/42/${random.replace('.png', '.svg')}`
    ]) {
      assert.equal(parseCoverKey(bad), undefined, bad)
    }
  })

  void it('lists local objects under a prefix, without content-type files or puts under way', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'objects-'))
    try {
      const store = localStorage(root)
      const before = Date.now() - 60_000
      const a = newObjectKey('covers/t/7', 'png')
      const b = newObjectKey('covers/t/7', 'jpg')
      await store.put(a, Buffer.from('a'), 'image/png')
      await store.put(b, Buffer.from('b'), 'image/jpeg')
      await store.put(newObjectKey('covers/t/70', 'png'), Buffer.from('c'), 'image/png')
      fs.writeFileSync(path.join(root, 'covers', 't', '7', 'x.png.0a0b0c0d.tmp'), 'half')
      const listed = await store.list('covers/t/7/')
      assert.deepEqual(listed.map(o => o.key).sort(), [a, b].sort())
      for (const o of listed) assert.ok(o.lastModified.getTime() > before, o.key)
      assert.deepEqual(await store.list('covers/t/8/'), [])
      for (const bad of ['covers/t/7', '../', 'covers/../', '/tmp/']) {
        await assert.rejects(store.list(bad), /unsafe object/)
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  void it('puts, gets and deletes local objects', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'objects-'))
    try {
      const store = localStorage(root)
      const key = newObjectKey('covers/t/1', 'png')
      assert.deepEqual(await store.put(key, Buffer.from('abc'), 'image/png'), {
        key,
        size: 3,
        contentType: 'image/png'
      })
      assert.deepEqual(await store.get(key), { data: Buffer.from('abc'), contentType: 'image/png' })
      assert.equal(store.publicUrl(key), undefined)
      await store.delete(key)
      assert.equal(await store.get(key), undefined)
      await store.delete(key)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})

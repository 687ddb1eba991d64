import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { assertSafeKey, localStorage, newObjectKey, sniffImage } from './storage.ts'

void describe('object storage', () => {
  void it('recognises JPEG, PNG and WebP by their first bytes only', () => {
    assert.deepEqual(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0])), { mime: 'image/jpeg', ext: 'jpg' })
    assert.deepEqual(sniffImage(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0])), { mime: 'image/png', ext: 'png' })
    assert.deepEqual(sniffImage(Buffer.from('RIFF\0\0\0\0WEBPVP8 ')), { mime: 'image/webp', ext: 'webp' })
    assert.equal(sniffImage(Buffer.from('GIF89a')), undefined)
    assert.equal(sniffImage(Buffer.from('RIFF\0\0\0\0WAVEfmt ')), undefined)
    assert.equal(sniffImage(Buffer.alloc(0)), undefined)
  })

  void it('refuses keys that leave the root', () => {
    for (const bad of ['../x', 'a/../../b', '/abs', 'a//b', 'a/./b', '', 'a b']) assert.throws(() => { assertSafeKey(bad) }, /unsafe object key/)
    assertSafeKey(newObjectKey('covers/abc/1', 'png'))
  })

  void it('puts, gets and deletes local objects', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'objects-'))
    try {
      const store = localStorage(root)
      const key = newObjectKey('covers/t/1', 'png')
      assert.deepEqual(await store.put(key, Buffer.from('abc'), 'image/png'), { key, size: 3, contentType: 'image/png' })
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

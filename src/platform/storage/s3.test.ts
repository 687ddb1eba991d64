import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../../config.ts'
import { startS3Emulator, type S3Emulator } from '../../../test/helpers/s3.ts'
import { s3Storage } from './s3.ts'
import { createObjectStorage, newObjectKey, type ObjectStorage } from './storage.ts'

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100, 7)])

void describe('S3 configuration', () => {
  void it('is off without S3_BUCKET, and takes defaults with it', () => {
    assert.equal(loadConfig({}).s3, undefined)
    assert.deepEqual(loadConfig({ S3_BUCKET: 'covers' }).s3, {
      bucket: 'covers',
      endpoint: undefined,
      region: 'us-east-1',
      credentials: undefined,
      forcePathStyle: false,
      publicUrl: undefined
    })
    assert.deepEqual(loadConfig({
      S3_BUCKET: 'covers.example',
      S3_ENDPOINT: 'http://minio:9000/',
      S3_REGION: 'eu-central-1',
      S3_ACCESS_KEY_ID: 'id',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_PUBLIC_URL: 'https://cdn.example.com/covers/'
    }).s3, {
      bucket: 'covers.example',
      endpoint: 'http://minio:9000',
      region: 'eu-central-1',
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
      // another server than AWS: buckets by path unless told otherwise
      forcePathStyle: true,
      publicUrl: 'https://cdn.example.com/covers'
    })
    assert.equal(
      loadConfig({ S3_BUCKET: 'covers', S3_ENDPOINT: 'http://minio:9000', S3_FORCE_PATH_STYLE: 'false' }).s3
        ?.forcePathStyle,
      false
    )
    assert.equal(loadConfig({ S3_BUCKET: 'covers', S3_FORCE_PATH_STYLE: 'true' }).s3?.forcePathStyle, true)
  })

  void it('refuses bad values and incomplete combinations at start, naming the variable', () => {
    const refuses = (env: Record<string, string>, variable: string, message: RegExp): void => {
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.variable === variable && message.test(e.message)
      )
    }
    refuses({ S3_ENDPOINT: 'http://minio:9000' }, 'S3_ENDPOINT', /needs S3_BUCKET/)
    refuses({ S3_PUBLIC_URL: 'https://cdn.example.com' }, 'S3_PUBLIC_URL', /needs S3_BUCKET/)
    refuses({ S3_BUCKET: 'Covers' }, 'S3_BUCKET', /bucket name/)
    refuses({ S3_BUCKET: 'ab' }, 'S3_BUCKET', /bucket name/)
    refuses({ S3_BUCKET: 'a..b' }, 'S3_BUCKET', /bucket name/)
    refuses({ S3_BUCKET: 'covers', S3_ENDPOINT: 'minio:9000' }, 'S3_ENDPOINT', /http: or https:/)
    refuses({ S3_BUCKET: 'covers', S3_ENDPOINT: 'not a url' }, 'S3_ENDPOINT', /not a valid URL/)
    refuses({ S3_BUCKET: 'covers', S3_REGION: 'eu west' }, 'S3_REGION', /region/)
    refuses({ S3_BUCKET: 'covers', S3_ACCESS_KEY_ID: 'id' }, 'S3_ACCESS_KEY_ID', /needs S3_SECRET_ACCESS_KEY/)
    refuses({ S3_BUCKET: 'covers', S3_SECRET_ACCESS_KEY: 'secret' }, 'S3_SECRET_ACCESS_KEY', /needs S3_ACCESS_KEY_ID/)
    refuses({ S3_BUCKET: 'covers', S3_FORCE_PATH_STYLE: 'yes' }, 'S3_FORCE_PATH_STYLE', /true or false/)
    refuses({ S3_BUCKET: 'covers', S3_PUBLIC_URL: 'https://cdn.example.com/?v=1' }, 'S3_PUBLIC_URL', /without query/)
  })
})

void describe('S3 object storage (emulator)', () => {
  let s3: S3Emulator
  let store: ObjectStorage
  before(async () => {
    s3 = await startS3Emulator()
    store = s3Storage(loadConfig(s3.env).s3 ?? assert.fail('S3 is configured'))
  })
  after(async () => {
    await store?.close?.()
    await s3?.stop()
  })

  void it('puts, gets and deletes objects, keeping their bytes and content type', async () => {
    const key = newObjectKey('covers/t/1', 'png')
    assert.deepEqual(await store.put(key, PNG, 'image/png'), { key, size: PNG.length, contentType: 'image/png' })
    assert.deepEqual(await s3.object(key), { data: PNG, contentType: 'image/png' })
    assert.deepEqual(await store.get(key), { data: PNG, contentType: 'image/png' })

    const webp = newObjectKey('covers/t/1', 'webp')
    await store.put(webp, Buffer.from('RIFF....WEBP'), 'image/webp')
    assert.equal((await store.get(webp))?.contentType, 'image/webp')
    assert.deepEqual(await s3.keys('covers/t/1/'), [key, webp].sort())

    await store.delete(key)
    assert.equal(await store.get(key), undefined)
    assert.deepEqual(await s3.keys('covers/t/1/'), [webp])
    // deleting what is not there is no error
    await store.delete(key)
    await store.delete(webp)
    assert.deepEqual(await s3.keys('covers/t/1/'), [])
  })

  void it('lists the objects under a prefix with their write time, across pages, and nothing beside it', async () => {
    const before = Date.now() - 60_000
    const keys = Array.from({ length: 3 }, () => newObjectKey('covers/t/5', 'png'))
    for (const key of keys) await store.put(key, PNG, 'image/png')
    await store.put(newObjectKey('covers/t/50', 'png'), PNG, 'image/png')
    const listed = await store.list('covers/t/5/')
    assert.deepEqual(listed.map(o => o.key).sort(), [...keys].sort())
    for (const o of listed) {
      assert.ok(
        o.lastModified.getTime() > before && o.lastModified.getTime() <= Date.now() + 60_000,
        `${o.key} ${o.lastModified.toISOString()}`
      )
    }
    assert.deepEqual(await store.list('covers/t/6/'), [])
    for (const bad of ['covers/t/5', '../', 'covers//', '/covers/']) {
      await assert.rejects(store.list(bad), /unsafe object/)
    }
    for (const o of [...listed, ...await store.list('covers/t/50/')]) await store.delete(o.key)
  })

  void it('answers undefined for a missing object, but fails for a missing bucket', async () => {
    assert.equal(await store.get(newObjectKey('covers/t/2', 'png')), undefined)
    const wrongBucket = s3Storage(
      loadConfig({ ...s3.env, S3_BUCKET: 'no-such-bucket' }).s3 ?? assert.fail('S3 is configured')
    )
    try {
      await assert.rejects(wrongBucket.get(newObjectKey('covers/t/2', 'png')), { name: 'NoSuchBucket' })
    } finally {
      await wrongBucket.close?.()
    }
  })

  void it('refuses unsafe keys and stores nothing for them', async () => {
    for (const bad of ['../x.png', 'covers//x.png', '/covers/x.png', 'covers/./x.png']) {
      await assert.rejects(store.put(bad, PNG, 'image/png'), /unsafe object key/)
      await assert.rejects(store.get(bad), /unsafe object key/)
      await assert.rejects(store.delete(bad), /unsafe object key/)
    }
    assert.deepEqual(await s3.keys(), [])
  })

  void it('gives a public URL only when S3_PUBLIC_URL is set', async () => {
    const key = newObjectKey('covers/t/3', 'png')
    assert.equal(store.publicUrl(key), undefined)
    const config = loadConfig({ ...s3.env, S3_PUBLIC_URL: 'https://cdn.example.com/covers/' })
    const published = await createObjectStorage(config)
    try {
      assert.equal(published.publicUrl(key), `https://cdn.example.com/covers/${key}`)
      // the configuration picks the store: this one writes to the bucket
      await published.put(key, PNG, 'image/png')
      assert.deepEqual(await s3.keys('covers/t/3/'), [key])
      await published.delete(key)
    } finally {
      await published.close?.()
    }
  })

  void it('fails put and get while the server is down, and works again when it is back', async () => {
    const key = newObjectKey('covers/t/4', 'png')
    await s3.pause()
    try {
      await assert.rejects(store.put(key, PNG, 'image/png'), { code: 'ECONNREFUSED' })
      await assert.rejects(store.get(key), { code: 'ECONNREFUSED' })
    } finally {
      await s3.resume()
    }
    assert.deepEqual(await s3.keys('covers/t/4/'), [])
    await store.put(key, PNG, 'image/png')
    assert.deepEqual((await store.get(key))?.data, PNG)
    await store.delete(key)
  })
})

void describe('default object storage', () => {
  void it('is local files under DATA_DIR/objects without S3_BUCKET', async () => {
    const store = await createObjectStorage(loadConfig({ DATA_DIR: '/nonexistent-data-dir' }))
    assert.equal(store.publicUrl('covers/t/1/x.png'), undefined)
    assert.equal(store.close, undefined)
    assert.equal(await store.get('covers/t/1/x.png'), undefined)
    assert.deepEqual(await store.list('covers/t/1/'), [])
  })
})

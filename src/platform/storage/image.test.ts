import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import zlib from 'node:zlib'
import { IMAGE_MAX_PIXELS, ImageRefused, reencodeImage } from './image.ts'
import { sniffImage } from './storage.ts'

const JPEG = Buffer.from(
  '/9j/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUfGhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBD' +
  'AQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wAARCAAeACgD' +
  'ASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAf/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFgEBAQEAAAAAAAAAAAAAAAAA' +
  'AAYH/8QAFBEBAAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8AlwCabaAAAAAAAAAA/9k=',
  'base64'
)
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAACgAAAAeCAYAAABe3VzdAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAATElEQVRYhe2UsQ0AQBCCrJna' +
  '0X+Kj1dQ2BOiJtDTyRoAAdFg5z3DkaDBzruGR40GezJZAyAgGuy8ZzgSNNh51/Co0WBPJmsABOSrwQeccLXfglDkCAAAAABJRU5E' +
  'rkJggg==',
  'base64'
)
const HTML = Buffer.from('<html><script>alert(1)</script></html>')
const typeOf = (data: Buffer) => sniffImage(data) ?? assert.fail('an image type')

/** A PNG announcing width × height pixels in its header, with (far too little) pixel data: nothing to decode. */
function pngOfSize (width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type), data])
    const length = Buffer.alloc(4)
    length.writeUInt32BE(data.length)
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(body))
    return Buffer.concat([length, body, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  return Buffer.concat([
    PNG.subarray(0, 8),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.alloc(1))),
    chunk('IEND', Buffer.alloc(0))
  ])
}

function crc32 (data: Buffer): number {
  let c = 0xffffffff
  for (const byte of data) {
    c ^= byte
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1))
  }
  return (c ^ 0xffffffff) >>> 0
}

void describe('image re-encoding', () => {
  void it('re-encodes several images at once, one after the other, each in its own format', async () => {
    const outs = await Promise.all([JPEG, PNG, JPEG, PNG].map(async image => await reencodeImage(image, typeOf(image))))
    assert.deepEqual(outs.map(o => sniffImage(o)?.ext), ['jpg', 'png', 'jpg', 'png'])
    // a refused image does not stop the ones after it
    const [bad, good] = await Promise.allSettled([
      reencodeImage(Buffer.concat([JPEG.subarray(0, 4), HTML]), typeOf(JPEG)),
      reencodeImage(PNG, typeOf(PNG))
    ])
    assert.equal(bad?.status, 'rejected')
    assert.equal(good?.status, 'fulfilled')
  })

  void it('re-encodes a whole image in its own format', async () => {
    for (const image of [JPEG, PNG]) {
      const out = await reencodeImage(image, typeOf(image))
      assert.deepEqual(sniffImage(out), sniffImage(image))
    }
  })

  void it('drops what follows the image and refuses what only starts like one', async () => {
    const out = await reencodeImage(Buffer.concat([JPEG, HTML]), typeOf(JPEG))
    assert.equal(out.includes('<script'), false)
    await assert.rejects(
      reencodeImage(Buffer.concat([JPEG.subarray(0, 4), HTML]), typeOf(JPEG)),
      (e: unknown) => e instanceof ImageRefused && /not a readable JPEG image/.test(e.message)
    )
    await assert.rejects(reencodeImage(JPEG.subarray(0, JPEG.length - 40), typeOf(JPEG)), ImageRefused)
    await assert.rejects(reencodeImage(Buffer.concat([PNG.subarray(0, 8), JPEG]), typeOf(PNG)), ImageRefused)
  })

  void it(`refuses more than ${IMAGE_MAX_PIXELS} pixels before decoding them`, async () => {
    await assert.rejects(
      reencodeImage(pngOfSize(5001, 5000), typeOf(PNG)),
      (e: unknown) =>
        e instanceof ImageRefused && e.message.includes(`more than ${IMAGE_MAX_PIXELS / 1_000_000} million pixels`)
    )
  })
})

/**
 * Uploaded images are stored re-encoded, never as sent: `reencodeImage` decodes the bytes with
 * sharp (libvips), keeps the pixels only (no EXIF, ICC, comments, text chunks, nor anything after
 * the image's end), and encodes them again in the same format. A file that only starts like an
 * image (a JPEG header followed by HTML, a polyglot) does not decode and is refused; markup hidden
 * in metadata or appended after the image does not survive. Cost and bounds: docs/storage.md.
 *
 * sharp is imported on the first upload only (about 200 ms and 30 MB of resident memory that a
 * process serving no upload does not pay).
 */
import type { Sharp, SharpOptions } from 'sharp'
import type { ImageType } from './storage.ts'

/**
 * The largest decoded image, width × height (25 MP: a 6000 × 4000 camera picture); a larger one is
 * refused before its pixels are decoded. Decoding a 12 MP image raised the process' resident memory
 * to about 420 MB (docs/storage.md): the bound and one re-encoding at a time keep it there.
 */
export const IMAGE_MAX_PIXELS = 25_000_000

/** Why an image was refused, in words a client can act on. */
export class ImageRefused extends Error {}

type SharpFactory = (input: Buffer, options: SharpOptions) => Sharp
let factory: Promise<SharpFactory> | undefined

async function loadSharp (): Promise<SharpFactory> {
  factory ??= import('sharp').then((m) => {
    const sharp = m.default
    // no cache of decoded images between requests: each upload is seen once
    sharp.cache(false)
    return (input: Buffer, options: SharpOptions) => sharp(input, options)
  })
  return await factory
}

/** Re-encodings run one after the other (libvips uses every core for one image): memory stays that of one image. */
let queue: Promise<unknown> = Promise.resolve()
async function oneAtATime<T> (work: () => Promise<T>): Promise<T> {
  const run = queue.then(work)
  queue = run.catch(() => undefined)
  return await run
}

const FORMAT: Record<ImageType['ext'], string> = { jpg: 'jpeg', png: 'png', webp: 'webp' }

/**
 * The image's pixels encoded again as `type` (the type its first bytes announce), turned upright by
 * its EXIF orientation. Throws `ImageRefused` when the bytes are not a whole image of that type or
 * the image has more than IMAGE_MAX_PIXELS pixels.
 */
export async function reencodeImage (data: Buffer, type: ImageType): Promise<Buffer> {
  const sharp = await loadSharp()
  return await oneAtATime(async () => await reencode(sharp, data, type))
}

async function reencode (sharp: SharpFactory, data: Buffer, type: ImageType): Promise<Buffer> {
  // failOn 'warning' (sharp's default, advised for untrusted input): a damaged or truncated image is refused
  const options: SharpOptions = { limitInputPixels: IMAGE_MAX_PIXELS, failOn: 'warning', autoOrient: true }
  let format: string | undefined
  try {
    format = (await sharp(data, options).metadata()).format
  } catch (err) {
    throw new ImageRefused(
      `not a readable ${type.ext === 'jpg' ? 'JPEG' : type.ext.toUpperCase()} image (${reason(err)})`
    )
  }
  if (format !== FORMAT[type.ext]) {
    throw new ImageRefused(`the file starts like ${type.mime} but is ${format ?? 'something else'}`)
  }
  const image = sharp(data, options)
  const encoded = type.ext === 'jpg'
    ? image.jpeg({ quality: 85 })
    : type.ext === 'png'
      ? image.png({ compressionLevel: 6 })
      // effort 2 of 6: 40 % faster than the default 4 for 3 % more bytes (12 MP: 0.75 s instead of 1.3 s)
      : image.webp({ quality: 85, effort: 2 })
  try {
    return await encoded.toBuffer()
  } catch (err) {
    throw new ImageRefused(
      `not a readable ${type.ext === 'jpg' ? 'JPEG' : type.ext.toUpperCase()} image (${reason(err)})`
    )
  }
}

function reason (err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  if (/pixel limit/i.test(message)) return `more than ${IMAGE_MAX_PIXELS / 1_000_000} million pixels`
  // libvips' first line names the problem; the rest is its internal trace
  return message.split('\n')[0]?.slice(0, 200) ?? 'unreadable'
}

/** Test fixtures of the cover upload: small images of each accepted type, polyglots, and a multipart upload. */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import { COVER_MAX_BYTES } from './event-content.schemas.ts'

// whole images of 40 × 30 pixels (covers are decoded and re-encoded: a header alone is refused)
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAACgAAAAeCAYAAABe3VzdAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAATElEQVRYhe2UsQ0AQBCCrJna' +
  '0X+Kj1dQ2BOiJtDTyRoAAdFg5z3DkaDBzruGR40GezJZAyAgGuy8ZzgSNNh51/Co0WBPJmsABOSrwQeccLXfglDkCAAAAABJRU5E' +
  'rkJggg==',
  'base64'
)
export const JPEG = Buffer.from(
  '/9j/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUfGhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBD' +
  'AQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wAARCAAeACgD' +
  'ASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAf/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFgEBAQEAAAAAAAAAAAAAAAAA' +
  'AAYH/8QAFBEBAAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8AlwCabaAAAAAAAAAA/9k=',
  'base64'
)
export const WEBP = Buffer.from(
  'UklGRjoAAABXRUJQVlA4IC4AAAAQAwCdASooAB4APm02l0ikIyIhJWgAgA2JaQAALsd/sQAA/vsZq+g+HJQVrAAA',
  'base64'
)

export const HTML = '<html><body><script>alert(document.cookie)</script></body></html>'
/** A JPEG's first bytes followed by a page: sniffed as JPEG, rendered as HTML by a browser that sniffs. */
export const JPEG_HEADER_HTML = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from(HTML)])
/** A whole JPEG with the page in a comment segment (COM, right after SOI) and again after its end (EOI). */
export const JPEG_CARRYING_HTML = (() => {
  const comment = Buffer.from(HTML)
  const length = Buffer.alloc(2)
  length.writeUInt16BE(comment.length + 2)
  return Buffer.concat([
    JPEG.subarray(0, 2),
    Buffer.from([0xff, 0xfe]),
    length,
    comment,
    JPEG.subarray(2),
    Buffer.from(HTML)
  ])
})()

export const sha256 = (data: Buffer): string => crypto.createHash('sha256').update(data).digest('hex')

export function multipartBody (
  parts: Array<{ name: string; filename?: string; type?: string; data: Buffer | string }>
) {
  const boundary = '----collab' + Math.random().toString(16).slice(2)
  const chunks: Buffer[] = []
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: ${disposition}\r\n` +
        `${p.type !== undefined ? `Content-Type: ${p.type}\r\n` : ''}\r\n`
      )
    )
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

/** `PUT /events/{id}/cover` with one file part (named `file` unless told). */
export const upload = async (
  t: TestApp,
  token: string,
  id: number,
  data: Buffer,
  opts: { name?: string; type?: string; headers?: Record<string, string> } = {}
) => {
  const body = multipartBody([
    { name: opts.name ?? 'file', filename: 'cover.bin', type: opts.type ?? 'image/png', data }
  ])
  return await t.as(token, {
    method: 'PUT',
    url: `/api/v1/events/${id}/cover`,
    payload: body.payload,
    headers: { ...body.headers, ...opts.headers }
  })
}

/** `upload`, asserting the status it answers with; the answer. */
export async function uploadExpecting (
  t: TestApp,
  token: string,
  id: number,
  data: Buffer,
  status: number,
  opts: { name?: string; type?: string; headers?: Record<string, string> } = {}
) {
  const res = await upload(t, token, id, data, opts)
  assert.equal(res.statusCode, status, res.body)
  return res
}

/** Content covers refuse: a GIF (declared as PNG by the tests that send it). */
export const GIF = Buffer.from('GIF89a' + 'x'.repeat(50))
/** A PNG past the size limit. */
export const TOO_LARGE = Buffer.concat([PNG, Buffer.alloc(COVER_MAX_BYTES)])

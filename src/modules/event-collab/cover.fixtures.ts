/** Test fixtures of the cover upload: small images of each accepted type and a multipart upload. */
import type { TestApp } from '../../../test/helpers/build-app.ts'

export const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)])
export const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 2)])
export const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(64, 3)])

export function multipartBody (parts: Array<{ name: string, filename?: string, type?: string, data: Buffer | string }>) {
  const boundary = '----collab' + Math.random().toString(16).slice(2)
  const chunks: Buffer[] = []
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type !== undefined ? `Content-Type: ${p.type}\r\n` : ''}\r\n`))
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

/** `PUT /events/{id}/cover` with one file part (named `file` unless told). */
export const upload = async (t: TestApp, token: string, id: number, data: Buffer, opts: { name?: string, type?: string, headers?: Record<string, string> } = {}) => {
  const body = multipartBody([{ name: opts.name ?? 'file', filename: 'cover.bin', type: opts.type ?? 'image/png', data }])
  return await t.as(token, { method: 'PUT', url: `/api/v1/events/${id}/cover`, payload: body.payload, headers: { ...body.headers, ...opts.headers } })
}

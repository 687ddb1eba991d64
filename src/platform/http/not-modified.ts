/**
 * 304 Not Modified in one place (docs/api-conventions.md, "Conditional reads: If-None-Match"). Every GET and HEAD
 * whose answer is a 200 with an `ETag` answers 304 when the request's `If-None-Match` names it (weakly, `*`, a list);
 * a route that answers 304 itself (the feeds and public pages, before rendering) goes through the same hook. A 304
 * carries no body and no body headers (`Content-Type`, `Content-Length`, `Content-Encoding`): the headers the 200
 * would carry besides those stay (RFC 9110 §15.4.5: `ETag`, `Cache-Control`, `Vary`, `Expires`, `Content-Location`,
 * `Date`), and `Vary` names `Accept-Encoding` when the request asks for a coding the 200 may have been sent in.
 *
 * A row's tag (a revision, the digest of an attendee's stored values) names the row, not everything its answer
 * shows (an event's registration figures change without its revision): such a tag is joined to a digest of the
 * answer for a request with If-None-Match (`representationTag`: `"7"` becomes `"7.<digest>"`), so that a 304 is
 * sent only for the very answer the client holds, and If-Match still reads it as the row's tag. A request without
 * If-None-Match gets the row's tag as before.
 *
 * Registered on the root instance, its hook runs before each route's own onSend hooks (compression among them), so a
 * 304 is never compressed.
 */
import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { encodingFor } from './compression.ts'
import { etagMatches, namesRepresentation, representationTag } from './conditional.ts'

/** Headers that describe a body, which a 304 has not. */
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-disposition', 'transfer-encoding']

/** `Vary` with each field once (compared without case), `extra` added. */
function tidyVary (reply: FastifyReply, extra?: string): void {
  const raw = reply.getHeader('vary')
  if (raw === undefined && extra === undefined) return
  const values = Array.isArray(raw) ? raw : raw === undefined ? [] : [String(raw)]
  const kept = new Map<string, string>()
  for (const field of [...values, extra ?? ''].flatMap(v => v.split(',')).map(f => f.trim())) {
    if (field !== '' && !kept.has(field.toLowerCase())) kept.set(field.toLowerCase(), field)
  }
  void reply.header('vary', [...kept.values()].join(', '))
}

/** The tag the answer is validated by: its own when it names the answer, else the row's joined to the body's digest. */
function validatorOf (reply: FastifyReply, etag: string, payload: unknown): string | undefined {
  if (namesRepresentation(reply, etag)) return etag
  return typeof payload === 'string' || Buffer.isBuffer(payload) ? representationTag(etag, payload) : undefined
}

/** The 304 of a reply: its body headers dropped, its body let go (a stream drained). */
function bare (request: FastifyRequest, reply: FastifyReply, payload: unknown): null | Readable {
  for (const h of BODY_HEADERS) reply.removeHeader(h)
  if (encodingFor(request) !== undefined) tidyVary(reply, 'accept-encoding')
  if (payload instanceof Readable) payload.destroy()
  // HEAD: Fastify's own hook of HEAD routes reads the payload after this one; an empty stream sets no Content-Length
  return request.method === 'HEAD' ? Readable.from([]) : null
}

export function registerNotModified (app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    tidyVary(reply)
    if (request.method !== 'GET' && request.method !== 'HEAD') return payload
    if (reply.statusCode === 200) {
      const etag = reply.getHeader('etag')
      const ifNoneMatch = request.headers['if-none-match']
      if (typeof etag !== 'string' || ifNoneMatch === undefined) return payload
      const validator = validatorOf(reply, etag, payload)
      if (validator === undefined) return payload
      void reply.header('etag', validator)
      if (!etagMatches(ifNoneMatch, validator)) return payload
      void reply.code(304)
    }
    return reply.statusCode === 304 ? bare(request, reply, payload) : payload
  })
}

/**
 * What a route that takes JSON reads (docs/api-conventions.md, "Bodies"): `application/json` and any
 * `application/*+json` (merge-patch, …), in UTF-8 (a `charset` other than `utf-8` is refused). Any other media type
 * with a body answers 415 naming `header.content-type` and the type sent, before anything runs: Fastify's own
 * `text/plain` parser is dropped, under which `fetch(url, { body: JSON.stringify(x) })` (no header: `text/plain`) was
 * read as a string and refused with a 400 that named no media type. No route takes plain text: no beacon, no webhook
 * of ours reads it (the identity provider's webhook, the CSV and iCalendar imports, the page's form and the cover's
 * multipart each declare their own types in their own scope).
 *
 * A request without a body (no bytes) is read as none whatever its `Content-Type`: generated clients call the
 * operations whose body is optional without one, some with the header set.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './errors.ts'

/** `application/json` and `application/<anything>+json`, with or without parameters (as Fastify writes them). */
const JSON_TYPES = /^application\/(?:[\w!#$%&'*+.^`|~-]+\+)?json(?:;|$)/

/** What the 415 says is taken. */
const TAKEN = 'expected application/json or application/*+json (charset utf-8 or none)'

const contentTypeOf = (request: FastifyRequest): string => request.headers['content-type'] ?? '(none)'

/** The 415 of a request whose body is of another media type than the route takes. */
export function unsupportedMediaType (sent: string, taken = TAKEN): ApiError {
  return new ApiError(415, `unsupported media type ${sent}`, [
    { location: 'header.content-type', message: taken, value: sent }
  ])
}

/** The `charset` parameter of a Content-Type, lower-cased; undefined without one. */
function charsetOf (contentType: string): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1]?.toLowerCase()
}

export function registerJsonBodies (app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  // Fastify's defaults are application/json and text/plain: JSON alone, as below
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, (request, body, done) => {
    const charset = charsetOf(contentTypeOf(request))
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(unsupportedMediaType(contentTypeOf(request)), undefined)
      return
    }
    if (body === '') {
      done(null, undefined)
      return
    }
    void parseJson(request, body as string, done)
  })
  // every other type (and a body without Content-Type): none when empty, else 415
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    if ((body as Buffer).length === 0) done(null, undefined)
    else done(unsupportedMediaType(contentTypeOf(request)), undefined)
  })
}

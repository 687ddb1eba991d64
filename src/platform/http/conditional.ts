/**
 * Optimistic concurrency (Huma's conditional/ idea). A resource's ETag is its `revision`, a
 * counter every write increments (distinct from the API's `version`, which counts publishes).
 * Reads send `ETag`; a write with `If-Match` naming another revision answers 412 and changes
 * nothing. The check runs inside the write's transaction, after the row is locked.
 */
import crypto from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { error412PreconditionFailed } from './errors.ts'

export const etagOf = (revision: number): string => `"${revision}"`

/**
 * The ETag of a row without a `revision` column (attendees, event managers): a digest of its
 * stored values, in a fixed column order. Any write that changes a value (through this service's
 * routes or any other path: series, automation, identity) changes the tag, with no counter for
 * every writer to maintain. Timestamps count in milliseconds, as the API shows them.
 *
 * @example
 *   reply.header('etag', digestEtag(ATTENDEE_COLUMNS.map(c => row[c])))
 */
export function digestEtag (values: readonly unknown[]): string {
  return `"${crypto.createHash('sha256').update(JSON.stringify(values)).digest('base64url').slice(0, 27)}"`
}

export function setEtag (reply: FastifyReply, revision: number): void {
  void reply.header('etag', etagOf(revision))
}

/** The raw If-Match header, read before the transaction. */
export const ifMatchOf = (request: FastifyRequest): string | undefined => {
  const h = request.headers['if-match']
  return Array.isArray(h) ? h.join(',') : h
}

/**
 * Throws 412 when `ifMatch` is present and names none of the current revision's tags.
 *
 * @example
 *   const row = await lockContact(trx, tenantId, id)
 *   checkIfMatch(ifMatchOf(request), row.revision)
 */
export function checkIfMatch (ifMatch: string | undefined, revision: number): void {
  checkIfMatchTag(ifMatch, etagOf(revision))
}

/**
 * Throws 412 when `ifMatch` is present and names none of `current` (a quoted entity tag, e.g. from
 * `digestEtag`). Call it on the locked row, before writing.
 */
export function checkIfMatchTag (ifMatch: string | undefined, current: string): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return
  // a read's tag of its answer (`representationTag`) names the row's tag it was made of
  const tags = ifMatch.split(',').map(t => rowTagOf(t.trim().replace(/^W\//, '')))
  if (!tags.includes(current)) {
    throw error412PreconditionFailed(`the resource was changed: current ETag is ${current}`)
  }
}

/** Whether `If-None-Match` names `etag` (weakly: `W/` ignored on both sides) or is `*`: the answer is then a 304. */
export function etagMatches (ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const raw = Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch
  const bare = etag.replace(/^W\//, '')
  return raw.split(',').map(t => t.trim()).some(t => t === '*' || t.replace(/^W\//, '') === bare)
}

/**
 * The ETags that name an answer's bytes (a digest of what it shows: the feeds, the public pages), set through
 * `setRepresentationEtag`. Any other strong tag names a row (its revision or the digest of its stored values), which
 * an answer may show with more (an event's registration figures, a manager's display name): not a validator of the
 * answer for `If-None-Match` (not-modified.ts). A weak tag (`W/`) is taken to name what the answer shows.
 */
const representationTags = new WeakSet<FastifyReply>()

/** Sets the ETag of an answer whose tag is a digest of everything it shows: If-None-Match compares it as it is. */
export function setRepresentationEtag (reply: FastifyReply, etag: string): void {
  representationTags.add(reply)
  void reply.header('etag', etag)
}

/** Whether the reply's `etag` names its answer (see `representationTags`). */
export const namesRepresentation = (reply: FastifyReply, etag: string): boolean =>
  etag.startsWith('W/') || representationTags.has(reply)

/**
 * A row's tag joined to a digest of the answer it is shown in: `"7"` and a body make `"7.<digest>"`. It validates the
 * answer (If-None-Match), and names the row's tag `"7"` to If-Match (`rowTagOf`).
 */
export function representationTag (rowTag: string, body: string | Buffer): string {
  const inner = rowTag.replace(/^W\//, '').replace(/^"|"$/g, '')
  return `"${inner}.${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
}

/** The row's tag of a `representationTag` (`"7.<digest>"` → `"7"`); any other tag as it is. */
export const rowTagOf = (tag: string): string => tag.replace(/^"([^".]+)\.[\w-]{22}"$/, '"$1"')

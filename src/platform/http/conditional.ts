/**
 * Optimistic concurrency (Huma's conditional/ idea). A resource's ETag is its `revision`, a
 * counter every write increments (distinct from the API's `version`, which counts publishes).
 * Reads send `ETag`; a write with `If-Match` naming another revision answers 412 and changes
 * nothing. The check runs inside the write's transaction, after the row is locked.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { error412PreconditionFailed } from './errors.ts'

export const etagOf = (revision: number): string => `"${revision}"`

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
  if (ifMatch === undefined || ifMatch.trim() === '*') return
  const current = etagOf(revision)
  const tags = ifMatch.split(',').map(t => t.trim().replace(/^W\//, ''))
  if (!tags.includes(current)) {
    throw error412PreconditionFailed(`the resource was changed: current ETag is ${current}`)
  }
}

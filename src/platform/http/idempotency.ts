/**
 * `Idempotency-Key` on POST writes. The first request with a key claims it (a row per tenant,
 * caller and key); its answer is stored and replayed for 24 hours to a repeat with the same method,
 * path and body (`Idempotent-Replayed: true`). The same key with another body answers 409. A
 * concurrent repeat waits for the first answer and then replays it, so the write applies once.
 *
 * A 5xx answer releases the key so the client can retry. A claim whose request died before it
 * answered is taken over after CLAIM_TIMEOUT_MS.
 */
import crypto from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { Database } from '../db/database.ts'
import { withTenant } from '../db/tenant.ts'
import { ApiError, error409Conflict, invalidField } from './errors.ts'

const TTL_HOURS = 24
const CLAIM_TIMEOUT_MS = 60_000
const WAIT_MS = 15_000
const KEPT_HEADERS = ['content-type', 'etag', 'location', 'link']

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: { key: string } | null
  }
}

function requestHash (request: FastifyRequest): string {
  return crypto.createHash('sha256')
    .update(`${request.method} ${request.url}\n`)
    .update(request.body === undefined ? '' : Buffer.isBuffer(request.body) ? request.body : JSON.stringify(request.body))
    .digest('hex')
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

export function registerIdempotency (app: FastifyInstance, db: Kysely<Database>): void {
  app.decorateRequest('idempotencyClaim', null)

  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return
    const raw = request.headers['idempotency-key']
    if (raw === undefined) return
    const auth = request.optionalAuth ?? null
    if (auth === null) return
    const key = Array.isArray(raw) ? raw[0] ?? '' : raw
    if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
      throw invalidField('header.idempotency-key', 'expected 1 to 255 visible ASCII characters', key)
    }
    const hash = requestHash(request)
    const scope = { tenantId: auth.tenantId, userId: auth.userId }
    const deadline = Date.now() + WAIT_MS
    for (;;) {
      const claimed = await withTenant(db, scope, async (trx) => {
        await trx.deleteFrom('idempotency_keys')
          .where('tenant_id', '=', auth.tenantId).where('user_id', '=', auth.userId).where('key', '=', key)
          .where(eb => eb.or([
            eb('expires_at', '<', sql<Date>`now()`),
            eb.and([eb('status_code', 'is', null), eb('created_at', '<', sql<Date>`now() - make_interval(secs => ${CLAIM_TIMEOUT_MS / 1000})`)])
          ]))
          .execute()
        const inserted = await trx.insertInto('idempotency_keys').values({
          tenant_id: auth.tenantId,
          user_id: auth.userId,
          key,
          method: request.method,
          path: request.url,
          request_hash: hash,
          expires_at: sql<Date>`now() + make_interval(hours => ${TTL_HOURS})`
        }).onConflict(oc => oc.doNothing()).returning('key').executeTakeFirst()
        if (inserted !== undefined) return null
        return await trx.selectFrom('idempotency_keys').selectAll()
          .where('tenant_id', '=', auth.tenantId).where('user_id', '=', auth.userId).where('key', '=', key)
          .executeTakeFirst()
      })
      if (claimed === null) {
        request.idempotencyClaim = { key }
        return
      }
      if (claimed === undefined) continue // released between our insert and read: try again
      if (claimed.request_hash !== hash) {
        throw error409Conflict('this Idempotency-Key was used with another request', [{ location: 'header.idempotency-key', message: 'key already used with a different body or path', value: key }])
      }
      if (claimed.status_code !== null) {
        for (const [k, v] of Object.entries(claimed.response_headers ?? {})) void reply.header(k, v)
        void reply.header('idempotent-replayed', 'true')
        return await reply.code(claimed.status_code).serializer((p: unknown) => p as string).send(claimed.response_body ?? '')
      }
      if (Date.now() > deadline) throw new ApiError(409, 'a request with this Idempotency-Key is still in progress; retry later')
      await sleep(50)
    }
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotencyClaim
    const auth = request.optionalAuth ?? null
    if (claim === null || auth === null) return payload
    request.idempotencyClaim = null
    const scope = { tenantId: auth.tenantId, userId: auth.userId }
    const where = { tenant_id: auth.tenantId, user_id: auth.userId, key: claim.key }
    await withTenant(db, scope, async (trx) => {
      if (reply.statusCode >= 500) {
        await trx.deleteFrom('idempotency_keys').where('tenant_id', '=', where.tenant_id).where('user_id', '=', where.user_id).where('key', '=', where.key).execute()
        return
      }
      const headers: Record<string, string> = {}
      for (const h of KEPT_HEADERS) {
        const v = reply.getHeader(h)
        if (v !== undefined) headers[h] = String(v)
      }
      await trx.updateTable('idempotency_keys')
        .set({ status_code: reply.statusCode, response_headers: JSON.stringify(headers), response_body: typeof payload === 'string' ? payload : payload === null || payload === undefined ? '' : String(payload) })
        .where('tenant_id', '=', where.tenant_id).where('user_id', '=', where.user_id).where('key', '=', where.key)
        .execute()
    })
    return payload
  })
}

/**
 * `Idempotency-Key` on POST writes. The first request with a key claims it (a row per tenant,
 * caller and key); its answer is stored and replayed for 24 hours to a repeat with the same method,
 * path and body (`Idempotent-Replayed: true`). The same key with another body answers 409. A
 * concurrent repeat waits for the first answer and then replays it, so the write applies once.
 *
 * Two ways to claim:
 *
 * - **In the write's transaction** (routes with `config: { idempotency: 'transaction' }`, whose
 *   handler runs its write through `idempotent(request, fn)`): the claim row is inserted as the
 *   transaction's first write and the handler's result is stored in it before the commit, so the
 *   claim, the effect and an answer commit together or not at all. A write that fails (an error
 *   thrown in the transaction: 4xx or 5xx) leaves no claim, and a retry with the key runs again. A
 *   crash anywhere leaves either nothing or the effect with its answer. After the commit, the exact
 *   answer (status, headers, bytes) replaces the stored result; should that step not happen, a
 *   repeat gets the stored result through the route's serializer (same body, without ETag/Location).
 *   A repeat arriving while the first is in flight waits on the uncommitted claim (up to WAIT_MS,
 *   then 409) before its handler runs, then replays the answer.
 * - **In a transaction of its own** (every other POST): claimed before the handler, the answer
 *   stored after it. A 5xx answer releases the key so the client can retry; a claim whose request
 *   died before it answered is taken over after CLAIM_TIMEOUT_MS, and a process dying between the
 *   write's commit and the storing of its answer lets a retry run again.
 */
import crypto from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { Database } from '../db/database.ts'
import { withTenant, type Tx } from '../db/tenant.ts'
import { ApiError, error409Conflict, invalidField } from './errors.ts'

const TTL_HOURS = 24
const CLAIM_TIMEOUT_MS = 60_000
const WAIT_MS = 15_000
const KEPT_HEADERS = ['content-type', 'etag', 'location', 'link']

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: IdempotencyClaim | null
  }
  interface FastifyContextConfig {
    /** `transaction`: the key is claimed in the write's own transaction, through `idempotent()` */
    idempotency?: 'transaction'
  }
}

interface IdempotencyClaim {
  key: string
  hash: string
  /** own: claimed before the handler; transaction: to be claimed by `idempotent()` */
  mode: 'own' | 'transaction'
  /** transaction mode: the claim and the handler's result were written in the write's transaction */
  stored: boolean
}

class ProbeFree extends Error {}

/** The single success status a route declares (its answer when the write committed). */
function successStatus (request: FastifyRequest): number {
  const codes = Object.keys((request.routeOptions.schema?.response ?? {}) as Record<string, unknown>).filter(c =>
    /^2\d\d$/.test(c)
  )
  if (codes.length !== 1) {
    throw new Error(
      `route ${request.routeOptions.url ?? ''} must declare exactly one 2xx response to claim Idempotency-Key in its transaction`
    )
  }
  return Number(codes[0])
}

const whereKey = (tenantId: string, userId: string, key: string) => ({ tenantId, userId, key })

/**
 * Runs `fn` as the write of a request whose route claims its Idempotency-Key in the transaction
 * (`config: { idempotency: 'transaction' }`): the claim is the first write, the result the last,
 * both in `trx`. Without a key it is `fn` itself.
 *
 * @example
 *   const row = await withTenant(db, auth, idempotent(request, async (trx) => { … return created }))
 */
export function idempotent<T> (request: FastifyRequest, fn: (trx: Tx) => Promise<T>): (trx: Tx) => Promise<T> {
  return async (trx) => {
    const claim = request.idempotencyClaim
    const auth = request.optionalAuth ?? null
    if (claim === null || claim.mode !== 'transaction' || auth === null) return await fn(trx)
    const k = whereKey(auth.tenantId, auth.userId, claim.key)
    // a concurrent repeat holding an uncommitted claim makes this wait until it ends
    const inserted = await trx.insertInto('idempotency_keys').values({
      tenant_id: k.tenantId,
      user_id: k.userId,
      key: k.key,
      method: request.method,
      path: request.url,
      request_hash: claim.hash,
      expires_at: sql<Date>`now() + make_interval(hours => ${TTL_HOURS})`
    }).onConflict(oc => oc.doNothing()).returning('key').executeTakeFirst()
    if (inserted === undefined) {
      throw error409Conflict(
        'a request with this Idempotency-Key was answered meanwhile; send it again to get that answer',
        [{ location: 'header.idempotency-key', message: 'answered by a concurrent request', value: claim.key }]
      )
    }
    const result = await fn(trx)
    const status = successStatus(request)
    await trx
      .updateTable('idempotency_keys')
      .set({
        status_code: status,
        response_headers: null,
        response_body: result === undefined || result === null ? '' : JSON.stringify(result)
      })
      .where('tenant_id', '=', k.tenantId)
      .where('user_id', '=', k.userId)
      .where('key', '=', k.key)
      .execute()
    claim.stored = true
    return result
  }
}

/**
 * The write of a route that claims its Idempotency-Key in the transaction: `fn` through `idempotent()`, in one
 * transaction of the caller's tenant.
 *
 * @example
 *   const row = await idempotentWrite(db, request, async (trx) => { … return created })
 */
export async function idempotentWrite<T> (
  db: Kysely<Database>,
  request: FastifyRequest,
  fn: (trx: Tx) => Promise<T>
): Promise<T> {
  return await withTenant(db, request.auth, idempotent(request, fn))
}

function requestHash (request: FastifyRequest): string {
  return crypto
    .createHash('sha256')
    .update(`${request.method} ${request.url}\n`)
    .update(
      request.body === undefined ? '' : Buffer.isBuffer(request.body) ? request.body : JSON.stringify(request.body)
    )
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
    if (request.routeOptions.config.idempotency === 'transaction') {
      const found = await probe(db, scope, request, key, hash)
      if (found === undefined) {
        request.idempotencyClaim = { key, hash, mode: 'transaction', stored: false }
        return
      }
      if (found.request_hash !== hash) throw reusedKey(key)
      if (found.status_code === null) {
        throw new ApiError(409, 'a request with this Idempotency-Key is still in progress; retry later')
      }
      return await replay(reply, found)
    }
    const deadline = Date.now() + WAIT_MS
    for (;;) {
      const claimed = await withTenant(db, scope, async (trx) => {
        await trx
          .deleteFrom('idempotency_keys')
          .where('tenant_id', '=', auth.tenantId)
          .where('user_id', '=', auth.userId)
          .where('key', '=', key)
          .where(eb =>
            eb.or([
              eb('expires_at', '<', sql<Date>`now()`),
              eb.and([
                eb('status_code', 'is', null),
                eb('created_at', '<', sql<Date>`now() - make_interval(secs => ${CLAIM_TIMEOUT_MS / 1000})`)
              ])
            ])
          )
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
        request.idempotencyClaim = { key, hash, mode: 'own', stored: false }
        return
      }
      if (claimed === undefined) continue // released between our insert and read: try again
      if (claimed.request_hash !== hash) throw reusedKey(key)
      if (claimed.status_code !== null) return await replay(reply, claimed)
      if (Date.now() > deadline) {
        throw new ApiError(409, 'a request with this Idempotency-Key is still in progress; retry later')
      }
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
    if (claim.mode === 'transaction') {
      // nothing committed (the write failed) or nothing to refine (an error after the commit keeps the stored result)
      if (!claim.stored || reply.statusCode >= 300) return payload
      // the exact answer replaces the stored result; if this fails, the stored result still answers a repeat
      await withTenant(db, scope, async trx => { await storeAnswer(trx, where, reply, payload) })
        .catch((err: unknown) => {
          request.log.warn({ err }, 'idempotency: the exact answer was not stored; a repeat gets the stored result')
        })
      return payload
    }
    await withTenant(db, scope, async (trx) => {
      if (reply.statusCode >= 500) {
        await trx
          .deleteFrom('idempotency_keys')
          .where('tenant_id', '=', where.tenant_id)
          .where('user_id', '=', where.user_id)
          .where('key', '=', where.key)
          .execute()
        return
      }
      await storeAnswer(trx, where, reply, payload)
    })
    return payload
  })
}

/** Writes the exact answer (status, kept headers, bytes) into the claim row of `where`. */
async function storeAnswer (
  trx: Tx,
  where: { tenant_id: string, user_id: string, key: string },
  reply: FastifyReply,
  payload: unknown
): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set({
      status_code: reply.statusCode,
      response_headers: JSON.stringify(keptHeaders(reply)),
      response_body: bodyText(payload)
    })
    .where('tenant_id', '=', where.tenant_id)
    .where('user_id', '=', where.user_id)
    .where('key', '=', where.key)
    .execute()
}

function keptHeaders (reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const h of KEPT_HEADERS) {
    const v = reply.getHeader(h)
    if (v !== undefined) headers[h] = String(v)
  }
  return headers
}

const bodyText = (payload: unknown): string =>
  typeof payload === 'string' ? payload : payload === null || payload === undefined ? '' : String(payload)

const reusedKey = (key: string) =>
  error409Conflict('this Idempotency-Key was used with another request', [
    { location: 'header.idempotency-key', message: 'key already used with a different body or path', value: key }
  ])

interface StoredAnswer {
  status_code: number | null
  response_headers: Record<string, string> | null
  response_body: string | null
}

/**
 * Sends a stored answer: the exact bytes and headers, or (a claim made in the write's transaction
 * whose exact answer was not stored) the stored result through the route's serializer.
 */
async function replay (reply: FastifyReply, stored: StoredAnswer): Promise<FastifyReply> {
  void reply.header('idempotent-replayed', 'true')
  const status = stored.status_code ?? 200
  if (stored.response_headers === null) {
    const body = stored.response_body ?? ''
    return await reply.code(status).send(body === '' ? null : JSON.parse(body))
  }
  for (const [k, v] of Object.entries(stored.response_headers)) void reply.header(k, v)
  return await reply.code(status).serializer((p: unknown) => p as string).send(stored.response_body ?? '')
}

/**
 * Before a route that claims in its transaction runs: waits for a concurrent request holding the
 * key (its claim is an uncommitted row: an insert of the same key waits on it) and returns the
 * committed answer, if any. Nothing is kept: the probe's own insert is rolled back.
 */
async function probe (
  db: Kysely<Database>,
  scope: { tenantId: string; userId: string },
  request: FastifyRequest,
  key: string,
  hash: string
): Promise<(StoredAnswer & { request_hash: string }) | undefined> {
  try {
    return await withTenant(db, scope, async trx => {
      await trx
        .deleteFrom('idempotency_keys')
        .where('tenant_id', '=', scope.tenantId)
        .where('user_id', '=', scope.userId)
        .where('key', '=', key)
        .where('expires_at', '<', sql<Date>`now()`)
        .execute()
      await sql`select set_config('lock_timeout', ${`${WAIT_MS}ms`}, true)`.execute(trx)
      const inserted = await trx
        .insertInto('idempotency_keys')
        .values({
          tenant_id: scope.tenantId,
          user_id: scope.userId,
          key,
          method: request.method,
          path: request.url,
          request_hash: hash,
          expires_at: sql<Date>`now()`
        })
        .onConflict(oc => oc.doNothing())
        .returning('key')
        .executeTakeFirst()
      if (inserted !== undefined) throw new ProbeFree()
      const row = await trx
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'status_code', 'response_headers', 'response_body'])
        .where('tenant_id', '=', scope.tenantId)
        .where('user_id', '=', scope.userId)
        .where('key', '=', key)
        .executeTakeFirst()
      if (row === undefined) throw new ProbeFree()
      return row
    })
  } catch (err) {
    if (err instanceof ProbeFree) return undefined
    if ((err as { code?: string }).code === '55P03') {
      throw new ApiError(409, 'a request with this Idempotency-Key is still in progress; retry later')
    }
    throw err
  }
}

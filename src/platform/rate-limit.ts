/**
 * Per-caller token bucket (caller = tenant + user, or an API key: each key its own bucket), built from two
 * rate-limiter-flexible limiters.
 * The bucket holds RATE_LIMIT_CAPACITY tokens and is whole again CAPACITY / REFILL seconds after
 * it was first drawn on; once it is empty, RATE_LIMIT_REFILL_PER_SEC tokens per second still pass
 * (the refill a client waiting on an empty bucket would see). A route declares its cost in
 * `config.cost` (1 by default; 5 for the contacts upsert). The store is memory, or Redis when
 * REDIS_URL is set so that several instances share the buckets (with a memory fallback while
 * Redis is unreachable).
 *
 * A request without a valid token (the public space page, the IdP webhook, health and documents,
 * and every request refused 401) draws on a bucket of its client address instead
 * (RATE_LIMIT_ANON_CAPACITY, RATE_LIMIT_ANON_REFILL_PER_SEC): `request.ip`, which is the socket's
 * peer unless TRUST_PROXY names the proxies whose X-Forwarded-For may be believed. A refused
 * token is counted before its 401 is sent, so guessing tokens is limited as well.
 *
 * Headers follow the IETF draft: RateLimit-Limit (the capacity), RateLimit-Remaining (tokens left
 * now), RateLimit-Reset (seconds until tokens come back); an empty bucket answers 429 with
 * Retry-After.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createRequire } from 'node:module'
import type { Redis as RedisClient } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import type { AuthContext } from './auth/verify.ts'
import { ApiError } from './http/errors.ts'
import { rateLimitRefusals } from './metrics.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** whether this request has drawn on a bucket already */
    rateLimited: boolean
  }
}

export interface RateLimitOptions {
  capacity: number
  refillPerSec: number
  redisUrl?: string | undefined
  /** key prefix, so test runs sharing one Redis do not share buckets */
  prefix?: string
}

export interface RateLimiter {
  consume (key: string, cost: number): Promise<{ allowed: boolean, remaining: number, resetSec: number, limit: number }>
  close (): Promise<void>
}

export function createRateLimiter (options: RateLimitOptions): RateLimiter {
  const prefix = options.prefix ?? 'rl'
  const burstDuration = Math.max(1, Math.ceil(options.capacity / options.refillPerSec))
  let redis: RedisClient | undefined
  let steady: RateLimiterAbstract
  let burst: RateLimiterAbstract
  if (options.redisUrl !== undefined) {
    // loaded only when configured: ioredis adds a tenth of a second to every start
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
    redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, commandTimeout: 500 })
    redis.on('error', () => {}) // insurance limiter below takes over while Redis is away
    const insurance = (points: number, duration: number) =>
      new RateLimiterMemory({ points, duration, keyPrefix: `${prefix}:ins` })
    steady = new RateLimiterRedis({
      storeClient: redis,
      points: options.refillPerSec,
      duration: 1,
      keyPrefix: `${prefix}:s`,
      insuranceLimiter: insurance(options.refillPerSec, 1)
    })
    burst = new RateLimiterRedis({
      storeClient: redis,
      points: options.capacity,
      duration: burstDuration,
      keyPrefix: `${prefix}:b`,
      insuranceLimiter: insurance(options.capacity, burstDuration)
    })
  } else {
    steady = new RateLimiterMemory({ points: options.refillPerSec, duration: 1, keyPrefix: `${prefix}:s` })
    burst = new RateLimiterMemory({ points: options.capacity, duration: burstDuration, keyPrefix: `${prefix}:b` })
  }
  const limit = options.capacity

  return {
    async consume (key, cost) {
      try {
        const b = await burst.consume(key, cost)
        return {
          allowed: true,
          remaining: Math.max(0, b.remainingPoints),
          resetSec: Math.ceil(b.msBeforeNext / 1000),
          limit
        }
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err
      }
      try {
        const s = await steady.consume(key, cost)
        return {
          allowed: true,
          remaining: Math.max(0, s.remainingPoints),
          resetSec: Math.max(1, Math.ceil(s.msBeforeNext / 1000)),
          limit
        }
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err
        return { allowed: false, remaining: 0, resetSec: Math.max(1, Math.ceil(err.msBeforeNext / 1000)), limit }
      }
    },
    async close () {
      if (redis !== undefined) redis.disconnect()
    }
  }
}

/** A limit of `points` per window of `durationSec` per key (docs/guests.md, "Abuse"). */
export interface WindowLimiter {
  /** takes one point of the key's window: whether it was there, and the seconds until the window ends */
  take (key: string): Promise<{ allowed: boolean, resetSec: number }>
  close (): Promise<void>
}

/**
 * A fixed-window limit per key (rate-limiter-flexible): in memory, or in Redis when `redisUrl` is set so that every
 * instance counts together (with a memory limit of the same size while Redis is unreachable).
 */
export function createWindowLimiter (o: {
  points: number
  durationSec: number
  prefix: string
  redisUrl?: string | undefined
}): WindowLimiter {
  let redis: RedisClient | undefined
  let limiter: RateLimiterAbstract
  const memory = (keyPrefix: string) => new RateLimiterMemory({ points: o.points, duration: o.durationSec, keyPrefix })
  if (o.redisUrl !== undefined) {
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
    redis = new Redis(o.redisUrl, { maxRetriesPerRequest: 1, commandTimeout: 500 })
    redis.on('error', () => {})
    limiter = new RateLimiterRedis({
      storeClient: redis,
      points: o.points,
      duration: o.durationSec,
      keyPrefix: o.prefix,
      insuranceLimiter: memory(`${o.prefix}:ins`)
    })
  } else limiter = memory(o.prefix)
  return {
    async take (key) {
      try {
        const r = await limiter.consume(key, 1)
        return { allowed: true, resetSec: Math.max(1, Math.ceil(r.msBeforeNext / 1000)) }
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err
        return { allowed: false, resetSec: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) }
      }
    },
    async close () {
      if (redis !== undefined) redis.disconnect()
    }
  }
}

async function charge (
  limiter: RateLimiter,
  bucket: 'caller' | 'anonymous',
  key: string,
  request: FastifyRequest,
  reply: FastifyReply
): Promise<void> {
  const cost = request.routeOptions.config.cost ?? 1
  const r = await limiter.consume(key, cost)
  void reply.header('ratelimit-limit', String(r.limit))
  void reply.header('ratelimit-remaining', String(r.remaining))
  void reply.header('ratelimit-reset', String(r.resetSec))
  if (!r.allowed) {
    rateLimitRefusals.inc({ bucket })
    throw new ApiError(
      429,
      `rate limit exceeded: this request costs ${cost} token(s); retry after ${r.resetSec} s`,
      [],
      { 'retry-after': String(r.resetSec) }
    )
  }
}

/**
 * The bucket key of a caller: tenant and user, or for a service account's API key the key itself (each key its own
 * bucket, docs/api-keys.md).
 */
export const callerKey = (auth: AuthContext): string =>
  auth.apiKey === undefined ? `${auth.tenantId}:${auth.userId}` : `${auth.tenantId}:key:${auth.apiKey.keyId}`

/** The bucket key of a request without a valid token: its client address. */
export const anonymousKey = (request: FastifyRequest): string => `ip:${request.ip}`

/**
 * Registers the limit of authenticated callers (per tenant + user) and of everything else (per
 * client address). Register after the authentication hook; `refusalCharge` is the hook the
 * authentication plugin calls before a 401 (see registerAuth).
 */
export function registerRateLimit (app: FastifyInstance, limiter: RateLimiter, anonymous: RateLimiter): void {
  app.decorateRequest('rateLimited', false)
  app.addHook('onRequest', async (request, reply) => {
    if (request.rateLimited) return
    request.rateLimited = true
    const auth = request.optionalAuth ?? null
    await charge(
      auth === null ? anonymous : limiter,
      auth === null ? 'anonymous' : 'caller',
      auth === null ? anonymousKey(request) : callerKey(auth),
      request,
      reply
    )
  })
}

/**
 * What the authentication plugin calls before refusing a token: the refusal costs the address's bucket (429 when
 * empty).
 */
export function refusalCharge (
  anonymous: RateLimiter
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    if (request.rateLimited) return
    request.rateLimited = true
    await charge(anonymous, 'anonymous', anonymousKey(request), request, reply)
  }
}

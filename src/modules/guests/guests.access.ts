/**
 * How an anonymous guest request is let in (docs/guests.md, "Abuse"): bounded per client address and per event
 * before any work, its link found by hash on the system login and then everything done in the link's tenant, and
 * every refusal a problem in the guest's language that tells nothing about anyone else (an unknown, rotated and
 * expired link read the same).
 */
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Config } from '../../config.ts'
import type { Database } from '../../platform/db/database.ts'
import { withSystem } from '../../platform/db/tenant.ts'
import { ApiError, fieldError } from '../../platform/http/errors.ts'
import { message, negotiateLocale, type Locale, type MessageKey } from '../../platform/i18n/i18n.ts'
import { createWindowLimiter, type WindowLimiter } from '../../platform/rate-limit.ts'
import { findGuestToken } from '../attendees/index.ts'

/** A problem a guest reads: its detail and its one `errors` entry in the guest's language. */
export function guestProblem (
  status: number,
  locale: Locale,
  key: MessageKey,
  location: string,
  values?: Record<string, string | number>
): ApiError {
  const text = message(locale, key, values)
  return new ApiError(status, text, [fieldError(location, text)])
}

/** The language of a request from someone the service does not know yet: its Accept-Language. */
export const requestLocale = (request: FastifyRequest, fallback: Locale): Locale =>
  negotiateLocale(request.headers['accept-language'], fallback)

/** The limits of the anonymous guest routes, per client address and per event. */
export interface GuestLimits {
  address: WindowLimiter
  event: WindowLimiter
  close (): Promise<void>
}

export function createGuestLimits (config: Pick<Config, 'guestLimits' | 'redisUrl'>): GuestLimits {
  const address = createWindowLimiter({
    points: config.guestLimits.perAddressPerHour, durationSec: 3600, prefix: 'rl:guest:ip', redisUrl: config.redisUrl
  })
  const event = createWindowLimiter({
    points: config.guestLimits.perEventPerMinute, durationSec: 60, prefix: 'rl:guest:event', redisUrl: config.redisUrl
  })
  return { address, event, async close () { await address.close(); await event.close() } }
}

/** Takes a point of `limiter` for `key`: a 429 in the guest's language, with Retry-After, when none is left. */
export async function takeOrRefuse (limiter: WindowLimiter, key: string, locale: Locale): Promise<void> {
  const r = await limiter.take(key)
  if (r.allowed) return
  const text = message(locale, 'error.too_many_requests')
  throw new ApiError(429, text, [], { 'retry-after': String(r.resetSec) })
}

/** A live link of `purpose`: its tenant and attendee; else the one problem every dead link gets (404). */
export async function resolveLink (
  db: Kysely<Database>,
  token: string,
  purpose: 'manage' | 'confirm',
  locale: Locale,
  location = 'body.token'
): Promise<{ tenantId: string, attendeeId: number, tokenId: number }> {
  const found = await withSystem(db, trx => findGuestToken(trx, token))
  if (found === undefined || found.purpose !== purpose) throw deadLink(locale, location)
  return { tenantId: found.tenant_id, attendeeId: found.attendee_id, tokenId: found.id }
}

export const deadLink = (locale: Locale, location = 'body.token'): ApiError =>
  guestProblem(404, locale, 'error.link_invalid', location)

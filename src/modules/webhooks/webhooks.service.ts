/**
 * What a schema cannot say about a subscription: its URL may be called (https; no private, loopback
 * or otherwise special address unless AUTOMATION_WEBHOOK_ALLOW lists it), and its event types are
 * topics of the outbox. Both answer a 400 naming the field. The URL is checked again, address by
 * address, at every delivery (a name may resolve elsewhere later).
 */
import dns from 'node:dns/promises'
import net from 'node:net'
import { invalidField } from '../../platform/http/errors.ts'
import { DOMAIN_TRIGGERS } from '../automation/index.ts'
import { addressAllowed, allowListed, type AllowList } from '../../platform/http/outbound.ts'

/** The topics a subscription may name, besides `*`. */
export const WEBHOOK_EVENT_TYPES: readonly string[] = DOMAIN_TRIGGERS.map(t => t.type)
const KNOWN = new Set(WEBHOOK_EVENT_TYPES)

export function checkEventTypes (types: readonly string[], at: string): string[] {
  types.forEach((type, i) => {
    if (type !== '*' && !KNOWN.has(type)) {
      throw invalidField(`${at}[${i}]`, 'expected `*` or a domain event type of GET /api/v1/automation/triggers', type)
    }
  })
  return types.includes('*') ? ['*'] : [...types]
}

/** Refuses a URL no delivery could go to; a name that does not resolve now is let through (checked when called). */
export async function checkUrl (url: string, allow: AllowList, at: string): Promise<string> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalidField(at, 'expected an absolute URL', url)
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw invalidField(at, 'expected a URL without credentials', url)
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  const listed = allow.hosts.has(host.toLowerCase()) || allowListed(host, allow)
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && listed)) {
    throw invalidField(at, 'expected an https URL', url)
  }
  if (net.isIP(host) !== 0) {
    if (!addressAllowed(host, host, allow)) {
      throw invalidField(at, 'expected a public address, not a private or reserved one', url)
    }
    return url
  }
  if (!listed) {
    const addresses = await dns.lookup(host, { all: true }).catch(() => [])
    if (addresses.some(a => !addressAllowed(a.address, host, allow))) {
      throw invalidField(at, 'expected a host that resolves to public addresses, not private or reserved ones', url)
    }
  }
  return url
}

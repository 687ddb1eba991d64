/**
 * The outbound HTTP client that automation's `webhook` action and webhook subscriptions share (a JSON POST), and the
 * calendar import's fetch of a URL (a GET, `fetchBody`): a timeout, no redirects, HTTPS unless the host is
 * allow-listed, and no connection to a private, loopback, link-local or otherwise special address unless
 * AUTOMATION_WEBHOOK_ALLOW lists it. Every spelling of an address is judged by what it reaches: IPv6 forms that carry
 * an IPv4 address (mapped, translated, NAT64, 6to4) by that address, other IPv6 only inside global unicast. The check
 * is on every address DNS resolved to, and the connection goes to that checked address (a custom `lookup`), so a name
 * that re-resolves elsewhere cannot slip through.
 */
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import { webhookDeliveries } from '../metrics.ts'

export const WEBHOOK_TIMEOUT_MS = 10_000
/** The most of a response body read (and discarded); a longer answer is cut off there. */
export const RESPONSE_CAP_BYTES = 64 * 1024

/**
 * IPv4 ranges no webhook may reach (RFC 6890 special-purpose registry): "this network",
 * private, shared (CGN), loopback, link-local, IETF protocol assignments, the documentation
 * nets, the 6to4 relay anycast, benchmarking, multicast, reserved and broadcast.
 */
const SPECIAL_V4 = new net.BlockList()
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) SPECIAL_V4.addSubnet(addr, prefix, 'ipv4')

/**
 * IPv6: only global unicast (2000::/3) may be reached, less these special parts of it: IETF
 * protocol assignments 2001::/23 (Teredo 2001::/32, benchmarking, ORCHID…), documentation
 * 2001:db8::/32 and 3fff::/20. Everything outside 2000::/3 is refused (unspecified, loopback,
 * IPv4-compatible ::/96, discard 100::/64, NAT64 local-use 64:ff9b:1::/48, unique-local fc00::/7,
 * link-local fe80::/10, site-local fec0::/10, multicast ff00::/8…) except the forms that carry an
 * IPv4 address, which are judged by that address (v4Inside).
 */
const GLOBAL_V6 = new net.BlockList()
GLOBAL_V6.addSubnet('2000::', 3, 'ipv6')
const SPECIAL_V6 = new net.BlockList()
for (const [addr, prefix] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20]
] as const) { SPECIAL_V6.addSubnet(addr, prefix, 'ipv6') }

/** The eight 16-bit groups of an IPv6 address (net.isIP(address) === 6; a zone id is ignored). */
function hextets (address: string): number[] {
  let a = address.split('%')[0] as string
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a)
  if (dotted !== null) {
    const [b0, b1, b2, b3] = dotted.slice(1).map(Number) as [number, number, number, number]
    a = `${a.slice(0, dotted.index)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`
  }
  const [head, tail] = a.split('::') as [string, string | undefined]
  const part = (s: string | undefined): number[] =>
    s === undefined || s === '' ? [] : s.split(':').map(h => parseInt(h, 16))
  const h = part(head)
  const t = part(tail)
  return tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t]
}

const v4Of = (hi: number, lo: number): string => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`

/**
 * The IPv4 address an IPv6 address stands for, when it is one of the forms that reach an IPv4
 * host: IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96 (SIIT), NAT64 64:ff9b::/96
 * (RFC 6052), and 6to4 2002::/16 (the IPv4 address in bits 16 – 48).
 */
export function v4Inside (address: string): string | undefined {
  const h = hextets(address)
  if (h.length !== 8) return undefined
  const [h0, h1, h2, h3, h4, h5, h6, h7] = h as [number, number, number, number, number, number, number, number]
  const zeros = (...xs: number[]): boolean => xs.every(x => x === 0)
  if (zeros(h0, h1, h2, h3, h4) && h5 === 0xffff) return v4Of(h6, h7)
  if (zeros(h0, h1, h2, h3, h5) && h4 === 0xffff) return v4Of(h6, h7)
  if (h0 === 0x64 && h1 === 0xff9b && zeros(h2, h3, h4, h5)) return v4Of(h6, h7)
  if (h0 === 0x2002) return v4Of(h1, h2)
  return undefined
}

/** Whether an address is private, loopback, link-local or otherwise special (any IPv4 or IPv6 spelling). */
export function isSpecialAddress (address: string): boolean {
  const family = net.isIP(address)
  if (family === 4) return SPECIAL_V4.check(address, 'ipv4')
  if (family !== 6) return true
  const v4 = v4Inside(address)
  if (v4 !== undefined) return SPECIAL_V4.check(v4, 'ipv4')
  const plain = address.split('%')[0] as string
  return !GLOBAL_V6.check(plain, 'ipv6') || SPECIAL_V6.check(plain, 'ipv6')
}

export interface AllowList {
  hosts: Set<string>
  addresses: net.BlockList
}

/** Parses AUTOMATION_WEBHOOK_ALLOW entries: host names, IP addresses, CIDR ranges. */
export function allowListOf (entries: readonly string[]): AllowList {
  const hosts = new Set<string>()
  const addresses = new net.BlockList()
  for (const e of entries) {
    const [addr, bits] = e.split('/') as [string, string | undefined]
    const family = net.isIP(addr)
    if (family === 0) { hosts.add(e.toLowerCase()); continue }
    const type = family === 4 ? 'ipv4' : 'ipv6'
    if (bits === undefined) addresses.addAddress(addr, type)
    else addresses.addSubnet(addr, Number(bits), type)
  }
  return { hosts, addresses }
}

/** Whether AUTOMATION_WEBHOOK_ALLOW lists an address, as written or as the IPv4 address it stands for. */
export function allowListed (address: string, allow: AllowList): boolean {
  const family = net.isIP(address)
  if (family === 0) return false
  const plain = address.split('%')[0] as string
  if (allow.addresses.check(plain, family === 4 ? 'ipv4' : 'ipv6')) return true
  const v4 = family === 6 ? v4Inside(plain) : undefined
  return v4 !== undefined && allow.addresses.check(v4, 'ipv4')
}

/** Whether a resolved address may be called: public, or allow-listed (by address or by host). */
export function addressAllowed (address: string, host: string, allow: AllowList): boolean {
  if (allow.hosts.has(host.toLowerCase())) return true
  if (allowListed(address, allow)) return true
  return !isSpecialAddress(address)
}

export interface WebhookResult {
  status: number
  /** the first `PostOptions.keepBytes` bytes of the answer's body (none unless asked for) */
  excerpt?: Buffer
  /** the answer's Content-Type, as sent */
  contentType?: string
}

/** How a caller of `postWebhook` counts and reads the call: the automation action takes the defaults. */
export interface PostOptions {
  /** counts the call's outcome; by default the automation action's counter (`automation_webhook_deliveries_total`) */
  count?: (outcome: 'delivered' | 'failed' | 'refused') => void
  /** keeps the first this many bytes of the answer's body (`excerpt` of the result or the error); default none */
  keepBytes?: number
}

/** Why an outbound call failed: a refused destination, a timeout, a network error, or the receiver's answer. */
export class OutboundError extends Error {
  /** the receiver's HTTP status, when it answered */
  status?: number
  /** the destination was refused (scheme, private or reserved address) before anything was sent */
  refused?: boolean
  /** the answer was longer than the caller takes (`fetchBody`) */
  tooLarge?: boolean
  /** the network error's code (`ECONNREFUSED`, `ENOTFOUND`, `ETIMEDOUT` for the timeout…), when one failed the call */
  code?: string
  /** the first bytes of an answer that failed the call (`PostOptions.keepBytes`), and its Content-Type */
  excerpt?: Buffer
  contentType?: string
}

export class WebhookError extends OutboundError {}

const answered = (status: number, message: string): WebhookError => Object.assign(new WebhookError(message), { status })

/**
 * The checked destination of an outbound call: https unless the host is allow-listed, no address literal that is
 * private or reserved, and a `lookup` that refuses a name resolving to such an address (each resolved address is
 * checked, and the connection goes to the checked one). `label` starts the messages; `make` builds the errors.
 */
function destination (
  url: string,
  allow: AllowList,
  label: string,
  make: (message: string) => OutboundError
): { target: URL, lookup: net.LookupFunction } {
  const refused = (message: string): OutboundError => Object.assign(make(message), { refused: true })
  const target = new URL(url)
  const host = target.hostname.replace(/^\[|\]$/g, '')
  const hostAllowed = allow.hosts.has(host.toLowerCase()) || allowListed(host, allow)
  if (target.protocol !== 'https:' && !(target.protocol === 'http:' && hostAllowed)) {
    throw refused(`${label} URL must use https`)
  }
  // an address literal is connected to without a lookup: check it here
  if (net.isIP(host) !== 0 && !addressAllowed(host, host, allow)) {
    throw refused(`${label} destination ${host} is a private or reserved address`)
  }
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) {
        callback(err, '', 4)
        return
      }
      const list = addresses as dns.LookupAddress[]
      const bad = list.find(a => !addressAllowed(a.address, host, allow))
      if (bad !== undefined || list.length === 0) {
        callback(
          Object.assign(refused(`${label} destination ${hostname} resolves to a private or reserved address`), {
            code: 'EADDRNOTALLOWED'
          }),
          '',
          4
        )
        return
      }
      const first = list[0] as dns.LookupAddress
      if ((options as { all?: boolean }).all === true) callback(null, list as unknown as string, first.family)
      else callback(null, first.address, first.family)
    })
  }
  return { target, lookup }
}

/**
 * POSTs `body` to `url`. Throws WebhookError on a refused destination, a timeout, a network error
 * or a status other than 2xx (a redirect counts as a failure). `options`: who counts the outcome (the automation
 * action's counter unless a caller counts its own: webhook subscriptions) and how much of the answer is kept.
 */
export async function postWebhook (
  url: string,
  body: string,
  headers: Record<string, string>,
  allow: AllowList,
  timeoutMs = WEBHOOK_TIMEOUT_MS,
  options: PostOptions = {}
): Promise<WebhookResult> {
  const count = options.count ?? (outcome => { webhookDeliveries.inc({ outcome }) })
  const keepBytes = options.keepBytes ?? 0
  let checked: ReturnType<typeof destination>
  try {
    checked = destination(url, allow, 'webhook', message => new WebhookError(message))
  } catch (err) {
    count('refused')
    throw err
  }
  const { target, lookup } = checked
  const client = target.protocol === 'https:' ? https : http
  return await new Promise<WebhookResult>((resolve, reject) => {
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'collaboration-service-automation',
          ...headers
        },
        lookup,
        // a fresh connection per call: every call resolves and checks its address, and no pooled
        // socket that the receiver has closed turns into a spurious ECONNRESET
        agent: false,
        timeout: timeoutMs
      },
      res => {
        const status = res.statusCode ?? 0
        let settled = false
        const done = (err?: Error): void => {
          if (settled) return
          settled = true
          const ok = err === undefined && status >= 200 && status < 300
          count(ok ? 'delivered' : 'failed')
          const seen = {
            ...(keepBytes > 0 ? { excerpt: Buffer.concat(kept).subarray(0, keepBytes) } : {}),
            ...(res.headers['content-type'] !== undefined ? { contentType: res.headers['content-type'] } : {})
          }
          if (ok) {
            resolve({ status, ...seen })
          } else {
            reject(Object.assign(answered(status, err === undefined
              ? `webhook answered ${status}`
              : `webhook response failed: ${err.message}`), seen))
          }
        }
        // the body is read up to RESPONSE_CAP_BYTES and discarded (but its first `keepBytes`); past it the connection
        // is closed
        let read = 0
        const kept: Buffer[] = []
        res.on('data', (chunk: Buffer) => {
          if (read < keepBytes) kept.push(chunk.subarray(0, keepBytes - read))
          read += chunk.length
          if (read > RESPONSE_CAP_BYTES && !settled) {
            done()
            req.destroy()
          }
        })
        res.on('end', () => { done() })
        res.on('error', err => { done(err) })
      }
    )
    req.on('timeout', () => {
      req.destroy(Object.assign(new WebhookError(`webhook timed out after ${timeoutMs} ms`), { code: 'ETIMEDOUT' }))
    })
    req.on('error', err => {
      const code = (err as { code?: unknown }).code
      count(code === 'EADDRNOTALLOWED' ? 'refused' : 'failed')
      reject(err instanceof WebhookError
        ? err
        : Object.assign(new WebhookError(`webhook failed: ${err.message}`), typeof code === 'string' ? { code } : {}))
    })
    req.end(body)
  })
}

export interface FetchOptions {
  /** the most of the answer's body taken: a longer one is an OutboundError with `tooLarge` */
  maxBytes: number
  /** the request's Accept header */
  accept: string
  /** what the messages call the URL ("calendar") */
  label: string
  timeoutMs?: number
}

export interface FetchedBody {
  body: Buffer
  /** the answer's Content-Type, as sent */
  contentType: string | undefined
}

/**
 * GETs `url` once, under the same rules as `postWebhook` (https unless allow-listed, no private or reserved address
 * in any spelling, checked on every address the name resolves to, no redirect followed, a timeout, a fresh
 * connection), and answers its body, read up to `maxBytes`. Throws OutboundError on a refused destination
 * (`refused`), a body over `maxBytes` (`tooLarge`: a Content-Length over it is refused before the body is read), a
 * timeout, a network error or a status other than 2xx (`status`; a redirect counts as a failure).
 *
 * @example
 *   const { body } = await fetchBody(url, allowListOf(config.automationWebhookAllow),
 *     { maxBytes: 1_048_576, accept: 'text/calendar', label: 'calendar' })
 */
export async function fetchBody (url: string, allow: AllowList, options: FetchOptions): Promise<FetchedBody> {
  const { maxBytes, accept, label, timeoutMs = WEBHOOK_TIMEOUT_MS } = options
  const { target, lookup } = destination(url, allow, label, message => new OutboundError(message))
  const client = target.protocol === 'https:' ? https : http
  return await new Promise<FetchedBody>((resolve, reject) => {
    const fail = (message: string, extra: Partial<OutboundError> = {}): void => {
      reject(Object.assign(new OutboundError(message), extra))
    }
    const req = client.request(
      target,
      {
        method: 'GET',
        headers: { accept, 'user-agent': 'collaboration-service' },
        lookup,
        agent: false,
        timeout: timeoutMs
      },
      res => {
        const status = res.statusCode ?? 0
        if (status < 200 || status >= 300) {
          fail(status >= 300 && status < 400
            ? `${label} URL answered ${status}: redirects are not followed`
            : `${label} URL answered ${status}`, { status })
          req.destroy()
          return
        }
        const tooLarge = (): void => {
          fail(`${label} is larger than ${maxBytes} bytes`, { status, tooLarge: true })
          req.destroy()
        }
        if (Number(res.headers['content-length'] ?? 0) > maxBytes) {
          tooLarge()
          return
        }
        const chunks: Buffer[] = []
        let read = 0
        res.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > maxBytes) tooLarge()
          else chunks.push(chunk)
        })
        res.on('end', () => {
          resolve({ body: Buffer.concat(chunks), contentType: res.headers['content-type'] })
        })
        res.on('error', err => { fail(`${label} answer failed: ${err.message}`, { status }) })
      }
    )
    req.on('timeout', () => {
      req.destroy(new OutboundError(`${label} URL timed out after ${timeoutMs} ms`))
    })
    req.on('error', err => {
      reject(err instanceof OutboundError ? err : new OutboundError(`${label} URL failed: ${err.message}`))
    })
    req.end()
  })
}

/**
 * Outbound webhooks of the `webhook` action: a JSON POST signed like the inbound identity webhook
 * (`t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, header `Automation-Signature`), with a
 * timeout, no redirects, HTTPS unless the host is allow-listed, and no connection to a private,
 * loopback, link-local or otherwise special address unless AUTOMATION_WEBHOOK_ALLOW lists it. The
 * check is on the address DNS resolved to, and the connection goes to that checked address (a
 * custom `lookup`), so a name that re-resolves elsewhere cannot slip through.
 */
import crypto from 'node:crypto'
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'

export const WEBHOOK_TIMEOUT_MS = 10_000
export const SIGNATURE_HEADER = 'automation-signature'

const SPECIAL = new net.BlockList()
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) SPECIAL.addSubnet(addr, prefix, 'ipv4')
for (const [addr, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) SPECIAL.addSubnet(addr, prefix, 'ipv6')

/** The signature header value for a body at a time. */
export function signBody (secret: string, body: string, nowSec: number): string {
  const t = String(Math.floor(nowSec))
  const v1 = crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.`).update(body).digest('hex')
  return `t=${t},v1=${v1}`
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

function unmapped (address: string): { address: string, type: 'ipv4' | 'ipv6' } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (m !== null) return { address: m[1] as string, type: 'ipv4' }
  return { address, type: net.isIP(address) === 4 ? 'ipv4' : 'ipv6' }
}

/** Whether a resolved address may be called: public, or allow-listed (by address or by host). */
export function addressAllowed (address: string, host: string, allow: AllowList): boolean {
  if (allow.hosts.has(host.toLowerCase())) return true
  const a = unmapped(address)
  if (allow.addresses.check(a.address, a.type)) return true
  return !SPECIAL.check(a.address, a.type)
}

export interface WebhookResult { status: number }

export class WebhookError extends Error {}

/**
 * POSTs `body` to `url`. Throws WebhookError on a refused destination, a timeout, a network error
 * or a status other than 2xx (a redirect counts as a failure).
 */
export async function postWebhook (url: string, body: string, headers: Record<string, string>, allow: AllowList, timeoutMs = WEBHOOK_TIMEOUT_MS): Promise<WebhookResult> {
  const target = new URL(url)
  const host = target.hostname.replace(/^\[|\]$/g, '')
  const hostAllowed = allow.hosts.has(host.toLowerCase()) || (net.isIP(host) !== 0 && allow.addresses.check(unmapped(host).address, unmapped(host).type))
  if (target.protocol !== 'https:' && !(target.protocol === 'http:' && hostAllowed)) throw new WebhookError('webhook URL must use https')
  // an address literal is connected to without a lookup: check it here
  if (net.isIP(host) !== 0 && !addressAllowed(host, host, allow)) throw new WebhookError(`webhook destination ${host} is a private or reserved address`)
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) { callback(err, '', 4); return }
      const list = addresses as dns.LookupAddress[]
      const bad = list.find(a => !addressAllowed(a.address, host, allow))
      if (bad !== undefined || list.length === 0) {
        callback(Object.assign(new WebhookError(`webhook destination ${hostname} resolves to a private or reserved address`), { code: 'EADDRNOTALLOWED' }), '', 4)
        return
      }
      const first = list[0] as dns.LookupAddress
      if ((options as { all?: boolean }).all === true) callback(null, list as unknown as string, first.family)
      else callback(null, first.address, first.family)
    })
  }
  const client = target.protocol === 'https:' ? https : http
  return await new Promise<WebhookResult>((resolve, reject) => {
    const req = client.request(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'collaboration-service-automation', ...headers },
      lookup,
      // a fresh connection per call: every call resolves and checks its address, and no pooled
      // socket that the receiver has closed turns into a spurious ECONNRESET
      agent: false,
      timeout: timeoutMs
    }, (res) => {
      res.resume()
      const status = res.statusCode ?? 0
      res.on('end', () => {
        if (status >= 200 && status < 300) resolve({ status })
        else reject(new WebhookError(`webhook answered ${status}`))
      })
      res.on('error', (err) => { reject(new WebhookError(`webhook response failed: ${err.message}`)) })
    })
    req.on('timeout', () => { req.destroy(new WebhookError(`webhook timed out after ${timeoutMs} ms`)) })
    req.on('error', (err) => { reject(err instanceof WebhookError ? err : new WebhookError(`webhook failed: ${err.message}`)) })
    req.end(body)
  })
}

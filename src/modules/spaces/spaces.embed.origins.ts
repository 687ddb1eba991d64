/**
 * The origins that may embed the public pages of a space's events (docs/guests.md, "Embedding the page"): each one a
 * bare origin, `https://host[:port]`, or `http://` on a loopback host while developing (`localhost`, `127.0.0.1`,
 * `[::1]`); no path, query, fragment, user name or wildcard. They become the page's CSP `frame-ancestors`, so an
 * origin is written back in the URL standard's form (lower case, no default port) and nothing else ever reaches the
 * header.
 */

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])
/** A DNS name or an IPv4 address as the URL parser writes it (lower case, punycode), or a bracketed IPv6 address */
const HOST = /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])$/

/** The origin `raw` names in its normal form, or undefined when it is not one an embedding page may have. */
export function embedOrigin (raw: string): string | undefined {
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    return undefined
  }
  const secure = url.protocol === 'https:'
  if (!secure && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) return undefined
  if (!HOST.test(url.hostname)) return undefined
  // nothing after host and port: the parser writes a bare origin with one `/`, and keeps any `?`, `#` or user name
  if (url.href !== `${url.origin}/`) return undefined
  return url.origin
}

/**
 * The CSP `frame-ancestors` source list of a page embeddable from `origins` (the lists of several spaces, joined):
 * each valid origin once, in the order met; `'none'` when there is none.
 */
export function frameAncestors (origins: Iterable<string>): string {
  const seen = new Set<string>()
  for (const raw of origins) {
    const origin = embedOrigin(raw)
    if (origin !== undefined) seen.add(origin)
  }
  return seen.size === 0 ? "'none'" : [...seen].join(' ')
}

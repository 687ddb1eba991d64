/**
 * The webhook signature (runtime contract, "Identity-provider webhook"):
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=…]`, sent as
 * `IDP-Signature` or `ZITADEL-Signature`. Any `v1` matching the current or the previous secret
 * passes; digests are compared in constant time; a `v1` that is not a hex SHA-256 digest is
 * skipped; `t` more than 300 s away from now is refused.
 */
import crypto from 'node:crypto'

export const SIGNATURE_HEADERS = ['idp-signature', 'zitadel-signature'] as const
export const TOLERANCE_SEC = 300

export type SignatureCheck =
  | { ok: true }
  | { ok: false, reason: string }

interface Parsed { t: string, v1: string[] }

/** `t=…,v1=…[,v1=…]`; other keys are ignored. Undefined when malformed. */
export function parseSignatureHeader (header: string): Parsed | undefined {
  let t: string | undefined
  const v1: string[] = []
  for (const part of header.split(',')) {
    const item = part.trim()
    if (item === '') continue
    const eq = item.indexOf('=')
    if (eq <= 0) return undefined
    const key = item.slice(0, eq).trim()
    const value = item.slice(eq + 1).trim()
    if (key === 't') {
      if (t !== undefined || !/^\d{1,12}$/.test(value)) return undefined
      t = value
    } else if (key === 'v1') {
      v1.push(value)
    }
  }
  if (t === undefined || v1.length === 0) return undefined
  return { t, v1 }
}

function digest (secret: string, t: string, raw: Buffer): Buffer {
  return crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.`).update(raw).digest()
}

/**
 * Checks the signature headers against the raw body.
 *
 * @example
 *   const check = verifySignature([req.headers['idp-signature']], raw, [secret, previous], Date.now() / 1000)
 */
export function verifySignature (
  headers: ReadonlyArray<string | undefined>,
  raw: Buffer,
  secrets: readonly string[],
  nowSec: number
): SignatureCheck {
  const present = headers.filter((h): h is string => h !== undefined)
  if (present.length === 0) return { ok: false, reason: 'missing IDP-Signature header' }
  let reason = 'malformed signature header'
  for (const header of present) {
    const parsed = parseSignatureHeader(header)
    if (parsed === undefined) continue
    if (Math.abs(nowSec - Number(parsed.t)) > TOLERANCE_SEC) {
      reason = 'signature timestamp outside the accepted window'
      continue
    }
    const expected = secrets.map(s => digest(s, parsed.t, raw))
    let match = false
    for (const candidate of parsed.v1) {
      if (!/^[0-9a-fA-F]{64}$/.test(candidate)) continue
      const given = Buffer.from(candidate, 'hex')
      for (const e of expected) {
        // every comparison runs, so the time taken does not tell which one matched
        if (crypto.timingSafeEqual(given, e)) match = true
      }
    }
    if (match) return { ok: true }
    reason = 'signature does not match'
  }
  return { ok: false, reason }
}

/** Signs a body as the provider does (tests, and the docs' curl example). */
export function signBody (secret: string, raw: Buffer | string, t: number = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${digest(secret, String(t), Buffer.isBuffer(raw) ? raw : Buffer.from(raw)).toString('hex')}`
}

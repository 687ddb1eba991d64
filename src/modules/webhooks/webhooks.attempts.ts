/**
 * What the history of attempts keeps of a receiver's answer (pure; docs/integrations.md, "Outbound webhooks"): the
 * first EXCERPT_BYTES of its body when it is text, as sent, and the kind of network error when there was no answer.
 */
import type { AttemptErrorKind } from './webhooks.table.ts'

/** The most of an answer's body an attempt keeps: enough for an error message or a problem document's start. */
export const EXCERPT_BYTES = 1024

/** What replaces a signing secret of the subscription that the receiver sent back (an echo of its own settings). */
export const REDACTED = '[redacted]'

/** The shortest start of a secret that is taken out when the excerpt's cut falls inside it. */
const SECRET_PREFIX_MIN = 8

const TEXT_TYPES = /^(text\/|application\/([a-z0-9.+-]*\+)?(json|xml|javascript|x-www-form-urlencoded)\b)/i

/**
 * The excerpt of an answer's body: null when there was none, or it is not text (a Content-Type that is not text,
 * bytes that are not valid in its charset, a NUL byte). A character cut by the limit is left out; every signing secret
 * of the subscription (`whsec_…` or its base64 key alone) is replaced by REDACTED, also the start of one at the cut.
 * Nothing else is changed: no trimming, no escaping.
 */
export function excerptOf (
  body: Buffer | undefined,
  contentType: string | undefined,
  secrets: readonly string[]
): string | null {
  if (body === undefined || body.length === 0) return null
  if (contentType !== undefined && !TEXT_TYPES.test(contentType.trim())) return null
  const charset = /;\s*charset="?([^";\s]+)"?/i.exec(contentType ?? '')?.[1] ?? 'utf-8'
  let text: string
  try {
    // stream: a multi-byte character cut at the end is held back, not an error; fatal: an invalid one in the middle is
    text = new TextDecoder(charset, { fatal: true }).decode(body.subarray(0, EXCERPT_BYTES), { stream: true })
  } catch {
    return null
  }
  if (text.includes('\u0000')) return null
  return redact(text, secrets)
}

function redact (text: string, secrets: readonly string[]): string {
  const forms = secrets.flatMap(s => [s, s.replace(/^whsec_/, '')]).sort((a, b) => b.length - a.length)
  let out = text
  for (const form of forms) out = out.replaceAll(form, REDACTED)
  for (const form of forms) {
    for (let n = Math.min(form.length - 1, out.length); n >= SECRET_PREFIX_MIN; n--) {
      if (out.endsWith(form.slice(0, n))) {
        out = out.slice(0, out.length - n) + REDACTED
        break
      }
    }
  }
  return out
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA'])
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'EPIPE'
])

/**
 * Why an attempt got no answer, from the outbound client's error (src/platform/http/outbound.ts): `refused`
 * (destination not allowed: nothing sent), `timeout`, `dns`, `connection`, `tls` or `other`; null when the receiver
 * answered (its status says the rest).
 */
export function errorKindOf (err: unknown): AttemptErrorKind | null {
  const e = err as { status?: unknown, refused?: unknown, code?: unknown }
  if (typeof e?.status === 'number') return null
  if (e?.refused === true) return 'refused'
  const code = typeof e?.code === 'string' ? e.code : ''
  if (code === 'ETIMEDOUT') return 'timeout'
  if (DNS_CODES.has(code)) return 'dns'
  if (CONNECTION_CODES.has(code)) return 'connection'
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(code)) return 'tls'
  return 'other'
}

/**
 * The signature of the `webhook` action's POST (docs/automation.md): like the inbound identity webhook,
 * `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` in the `Automation-Signature` header. The request itself goes
 * through the platform's outbound client (src/platform/http/outbound.ts).
 */
import crypto from 'node:crypto'

/** The signature header value for a body at a time. */
export function signBody (secret: string, body: string, nowSec: number): string {
  const t = String(Math.floor(nowSec))
  const v1 = crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.`).update(body).digest('hex')
  return `t=${t},v1=${v1}`
}

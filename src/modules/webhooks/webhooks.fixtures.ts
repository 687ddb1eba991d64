/**
 * A webhook receiver for tests, on 127.0.0.1 (allow-listed by the tests' AUTOMATION_WEBHOOK_ALLOW): each path answers
 * from its script, one answer per request in turn (the last repeats). A path given a secret (`verifyWith`) checks
 * every request with the Standard Webhooks library (`standardwebhooks`), as a receiver would, and answers 401 to one
 * that does not verify, whatever its script says.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before } from 'node:test'
import { Webhook } from 'standardwebhooks'

export interface ScriptedAnswer { status: number, type?: string, body: string | Buffer }

export interface ReceivedRequest {
  path: string
  headers: Record<string, string>
  body: string
  /** whether it verified with the path's secret (undefined: the path has none) */
  verified: boolean | undefined
}

export interface ScriptedReceiver {
  received: ReceivedRequest[]
  /** the answers of a path; none: 200 with an empty body */
  script: Map<string, Array<ScriptedAnswer | 'hang'>>
  /** the signing secret each request to a path must verify with */
  verifyWith: Map<string, string>
  url: (path: string) => string
}

/** Starts the receiver before the suite and stops it after. */
export function useScriptedReceiver (): ScriptedReceiver {
  const received: ReceivedRequest[] = []
  const script = new Map<string, Array<ScriptedAnswer | 'hang'>>()
  const verifyWith = new Map<string, string>()
  const seen = new Map<string, number>()
  let server: http.Server | undefined
  const answer = (path: string, body: string, headers: Record<string, string>): ScriptedAnswer | 'hang' => {
    const secret = verifyWith.get(path)
    let verified: boolean | undefined
    if (secret !== undefined) {
      try {
        new Webhook(secret).verify(body, headers)
        verified = true
      } catch {
        verified = false
      }
    }
    received.push({ path, headers, body, verified })
    if (verified === false) return { status: 401, type: 'text/plain', body: 'signature does not verify' }
    const n = seen.get(path) ?? 0
    seen.set(path, n + 1)
    const answers = script.get(path) ?? [{ status: 200, body: '' }]
    return answers[Math.min(n, answers.length - 1)] as ScriptedAnswer | 'hang'
  }
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
        const a = answer(req.url ?? '', Buffer.concat(chunks).toString('utf8'), headers)
        if (a === 'hang') return
        res.writeHead(a.status, a.type !== undefined ? { 'content-type': a.type } : {}).end(a.body)
      })
    })
    await new Promise<void>(resolve => server?.listen(0, '127.0.0.1', resolve))
  })
  after(async () => {
    server?.closeAllConnections()
    await new Promise(resolve => server?.close(resolve))
  })
  return {
    received,
    script,
    verifyWith,
    url: path => `http://127.0.0.1:${(server?.address() as AddressInfo).port}${path}`
  }
}

/**
 * The baseline: a bare `node:http` server that runs each scenario's SQL (bench/baseline-handlers.ts)
 * through `pg` (or PGlite, for the embedded runs) with no framework, no authentication, no
 * row-level security and no per-request tenant transaction. `GET|POST|PATCH /b/<scenario>?t=…&u=…&o=…`;
 * `GET /r/<scenario>` runs the scenario's reference (bench/reference-handlers.ts).
 *
 *   BENCH_DATABASE_URL=postgres://… | BENCH_PGLITE_DIR=/path  PORT=0  node --import tsx bench/baseline-server.ts
 */
import http from 'node:http'
import { HANDLERS, type Query } from './baseline-handlers.ts'
import { REFERENCES } from './reference-handlers.ts'
import { pgliteRunner, pgRunner, type SqlRunner } from './sql-runner.ts'

const url = process.env.BENCH_DATABASE_URL
const liteDir = process.env.BENCH_PGLITE_DIR
let db: SqlRunner
if (url !== undefined && url !== '') db = pgRunner(url, Number(process.env.BENCH_POOL_SIZE ?? 20))
else if (liteDir !== undefined && liteDir !== '') db = await pgliteRunner(liteDir)
else throw new Error('set BENCH_DATABASE_URL or BENCH_PGLITE_DIR')

function send (
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  json?: string
): void {
  const text = json ?? (body === undefined ? '' : JSON.stringify(body))
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers
  })
  res.end(text)
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const u = new URL(req.url ?? '/', 'http://x')
    if (u.pathname === '/health') { send(res, 200, { status: 'ok' }); return }
    // /b/<scenario>: the service's statements; /r/<scenario>: the reference (the fastest SQL for the same answer)
    const reference = u.pathname.startsWith('/r/')
    const name = u.pathname.replace(/^\/[br]\//, '')
    const handler = reference ? REFERENCES[name] : HANDLERS[name]
    if (handler === undefined) { send(res, 404, { status: 404 }); return }
    const caller = {
      tenant: u.searchParams.get('t') ?? '',
      user: u.searchParams.get('u') ?? '',
      org: u.searchParams.get('o') ?? 'org-main'
    }
    let body: unknown
    if (chunks.length > 0) {
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        send(res, 400, { status: 400 })
        return
      }
    }
    db.withClient(async (q) => await handler(q as Query, u.searchParams, caller, body))
      .then(a => { send(res, a.status, a.body, a.headers, a.json) })
      .catch((err: Error & { code?: string }) => {
        // one JSON line, as the service logs its failures (bench/run.ts counts them per scenario)
        process.stdout.write(
          `${JSON.stringify({
            level: 50, msg: `baseline ${name} failed`, err: { message: err.message, code: err.code }
          })}\n`
        )
        send(res, 500, { status: 500, detail: err.message })
      })
  })
})

server.keepAliveTimeout = 72_000
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address()
  process.stdout.write(
    `baseline listening on http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}\n`
  )
})

const stop = () => { server.close(); void db.close().finally(() => process.exit(0)) }
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

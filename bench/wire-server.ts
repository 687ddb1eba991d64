/**
 * The wire: a bare `node:http` server that answers every request with answers the service gave, from memory, in
 * turn (status, the headers that describe the body, the body's bytes), whatever the request asks (but
 * `/health`). What the machine
 * can send of those bytes with the same load generator is the ceiling a large answer (a calendar month, a feed) or a
 * refusal (401) is measured against (bench/run.ts, `wire` scenarios; docs/performance.md).
 *
 *   WIRE_SAMPLES=/path/samples.json PORT=0 node --import tsx bench/wire-server.ts
 */
import fs from 'node:fs'
import http from 'node:http'

export interface WireSample {
  status: number
  headers: Record<string, string>
  /** the body, base64 */
  body: string
}

const file = process.env.WIRE_SAMPLES
if (file === undefined || file === '') throw new Error('set WIRE_SAMPLES')
const samples = (JSON.parse(fs.readFileSync(file, 'utf8')) as WireSample[]).map(s => {
  const body = Buffer.from(s.body, 'base64')
  return { status: s.status, headers: { ...s.headers, 'content-length': String(body.length) }, body }
})
if (samples.length === 0) throw new Error(`${file}: no samples`)

let next = 0
const server = http.createServer((req, res) => {
  // the request is read to its end, as the service reads it
  req.resume()
  req.on('end', () => {
    if (req.url === '/health') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('ok'); return }
    const s = samples[next++ % samples.length]
    if (s === undefined) return
    res.writeHead(s.status, s.headers)
    res.end(s.body)
  })
})

server.keepAliveTimeout = 72_000
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address()
  process.stdout.write(`wire listening on http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}\n`)
})
const stop = () => { server.close(); process.exit(0) }
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

/**
 * Slow and never-ending requests against the real process (`src/server.ts`, which sets the HTTP
 * timeouts: headers within 10 s, a whole request within 30 s), listening on 127.0.0.1, port 0.
 *
 * Raw sockets send headers that never end, and a body that never ends; the server must cut both
 * (408 or a closed connection) while it goes on serving others. Node checks these timeouts every
 * 30 s, so this takes up to a minute: it runs with LOAD_TEST=1, like the load test.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { serverEnv, startServer, type ServerProcess } from './helpers/process.ts'

const LOAD = process.env.LOAD_TEST === '1'

/** Opens a socket, writes `data`, and resolves with what the server sent once it closes the connection. */
async function untilClosed (port: number, data: string): Promise<{ received: string }> {
  return await new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(data))
    let received = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { received += chunk })
    socket.on('error', reject)
    socket.on('close', () => resolve({ received }))
  })
}

void describe(
  'the real server cuts slow requests',
  { skip: LOAD ? false : 'set LOAD_TEST=1 to run it; takes up to a minute' },
  () => {
    let server: ServerProcess | undefined
    let port = 0
    let dataDir = ''

    before(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-timeouts-'))
      server = await startServer('timeouts', serverEnv(dataDir), 60_000)
      port = server.port
    })
    after(async () => {
      await server?.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    })

    void it(
      'closes a connection whose headers never end, and one whose body never ends, and serves others meanwhile',
      { timeout: 120_000 },
      async () => {
        const keys = await loadOrCreateDevKeys(dataDir)
        const token = await signDevToken(keys, { sub: 'slow', tenant: 'tenant-slow', roles: ['member'] })
        const slowHeaders = untilClosed(port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')
        const slowBody = untilClosed(
          port,
          [
            'POST /api/v1/contacts HTTP/1.1',
            'Host: 127.0.0.1',
            'Content-Type: application/json',
            `Authorization: Bearer ${token}`,
            'Content-Length: 100000',
            '',
            '{"first_name":"never ends'
          ].join('\r\n')
        )

        // the server keeps serving while the slow sockets hang
        const health = await fetch(`http://127.0.0.1:${port}/health`)
        assert.equal(health.status, 200)

        const [h, b] = await Promise.all([slowHeaders, slowBody])
        console.log(
          `timeouts: slow headers answered ${JSON.stringify(h.received.split('\r\n')[0] ?? '')}, ` +
          `slow body answered ${JSON.stringify(b.received.split('\r\n')[0] ?? '')}`
        )
        for (const r of [h, b]) {
          assert.ok(r.received === '' || r.received.startsWith('HTTP/1.1 408'), r.received.slice(0, 200))
        }
        // nothing of the cut body was stored
        const list = await fetch(`http://127.0.0.1:${port}/api/v1/contacts`, {
          headers: { authorization: `Bearer ${token}` }
        })
        assert.equal(((await list.json()) as { total: number }).total, 0)
        assert.equal(server?.child.exitCode, null, 'the server is still running')
      }
    )
  }
)

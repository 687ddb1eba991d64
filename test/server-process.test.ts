/**
 * The real process (`src/server.ts`) and `npm run token`, as a developer runs them:
 *
 * - `npm run --silent token` with the server's DATA_DIR prints the token alone on stdout and names
 *   the key it signed with (kid and file) on stderr; the server started with that DATA_DIR accepts it;
 * - everything the process writes, on stdout and stderr, is one JSON (pino) object per line, while
 *   contacts and spaces are listed with every sort (Kysely once printed a plain-text deprecation
 *   line for the `nulls last` sorts);
 * - OIDC_ISSUER that differs from the issuer the provider's discovery names (a trailing slash) stops
 *   the start with exit code 1 and one line naming OIDC_ISSUER and both values.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { decodeProtectedHeader } from 'jose'
import { run, serverEnv } from './helpers/process.ts'

void describe('the real server process and npm run token', () => {
  let child: ChildProcess
  let port = 0
  let dataDir = ''
  let stdout = ''
  let stderr = ''

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-process-'))
    child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: serverEnv(dataDir),
      stdio: ['ignore', 'pipe', 'pipe']
    })
    child.stdout?.on('data', (c: Buffer) => { stdout += c.toString() })
    child.stderr?.on('data', (c: Buffer) => { stderr += c.toString() })
    port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`the server did not start: ${stdout.slice(-2000)}${stderr.slice(-2000)}`))
      }, 120_000)
      const look = (): void => {
        const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)
        if (m !== null) {
          clearTimeout(timer)
          resolve(Number(m[1]))
        }
      }
      child.stdout?.on('data', look)
      child.once('exit', code => {
        reject(new Error(`the server exited with ${String(code)}: ${stdout.slice(-2000)}${stderr.slice(-2000)}`))
      })
    })
  })
  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise(resolve => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  let token = ''
  const api = async (method: string, url: string, body?: unknown): Promise<Response> =>
    await fetch(`http://127.0.0.1:${port}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {})
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })

  void it(
    'npm run token signs with the key of the DATA_DIR the server uses: stdout is the token alone, stderr names the key',
    { timeout: 60_000 },
    async () => {
      const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
      const r = await run(
        npm,
        ['run', '--silent', 'token', '--', '--sub', 'alice', '--tenant', 'acme-process', '--roles', 'admin'],
        { ...process.env, DATA_DIR: dataDir, OIDC_ISSUER: '' }
      )
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /^[\w-]+\.[\w-]+\.[\w-]+\n$/, 'stdout is the token and nothing else')
      token = r.stdout.trim()
      const kid = decodeProtectedHeader(token).kid ?? ''
      const keyFile = path.join(dataDir, 'dev-signing-key.json')
      const line = r.stderr.split('\n').find(l => l.includes('signed with'))
      assert.ok(
        line?.includes(kid) === true && line.includes(keyFile),
        `stderr names the key ${kid} and ${keyFile}: ${r.stderr}`
      )
      const kept = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as { kid: string }
      assert.equal(kept.kid, kid, 'the key the server created at start')

      const me = await api('GET', '/api/v1/auth/me')
      assert.equal(me.status, 200, await me.clone().text())
      assert.equal(((await me.json()) as { user_id: string }).user_id, 'alice')
    }
  )

  void it(
    'writes only JSON lines, while contacts and spaces are listed with every sort',
    { timeout: 60_000 },
    async () => {
      assert.notEqual(token, '', 'needs the token of the test before')
      for (const [first, last] of [
        ['Ada', 'Lovelace'],
        ['Grace', null],
        ['Edsger', 'Dijkstra']
      ] as const) {
        const res = await api('POST', '/api/v1/contacts', {
          first_name: first,
          ...(last !== null ? { last_name: last } : {}),
          email: `${first.toLowerCase()}@example.org`
        })
        assert.equal(res.status, 201, await res.text())
      }
      for (const title of ['Zeta', 'alpha', 'Mid']) {
        const res = await api('POST', '/api/v1/spaces', { title })
        assert.equal(res.status, 201, await res.text())
      }
      const spaces: Record<string, string[]> = {}
      for (const dir of ['asc', 'desc']) {
        for (const by of ['last_name', 'first_name', 'created_at']) {
          const res = await api('GET', `/api/v1/contacts?sort_by=${by}&sort_dir=${dir}`)
          assert.equal(res.status, 200, `${by} ${dir}: ${await res.clone().text()}`)
          const items = ((await res.json()) as { items: Array<{ last_name: string | null }> }).items
          assert.equal(items.length, 3)
          if (by === 'last_name') assert.equal(items.at(-1)?.last_name ?? null, null, `nulls last, ${dir}`)
        }
        for (const by of ['title', 'published_at']) {
          const res = await api('GET', `/api/v1/spaces?sort_by=${by}&sort_dir=${dir}`)
          assert.equal(res.status, 200, await res.clone().text())
          spaces[`${by} ${dir}`] = ((await res.json()) as { items: Array<{ title: string }> }).items.map(s => s.title)
        }
      }
      assert.equal(spaces['title asc']?.length, 3)
      assert.deepEqual(spaces['title desc'], [...(spaces['title asc'] ?? [])].reverse())
      assert.equal((await fetch(`http://127.0.0.1:${port}/ready`)).status, 200)

      const exited = new Promise(resolve => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
      const lines = [...stdout.split('\n'), ...stderr.split('\n')].filter(l => l.trim() !== '')
      assert.ok(lines.length > 10, `the requests were logged: ${lines.length} lines`)
      for (const line of lines) {
        let parsed: { level?: unknown; msg?: unknown } | undefined
        try {
          parsed = JSON.parse(line) as { level?: unknown; msg?: unknown }
        } catch {}
        assert.ok(parsed !== undefined && typeof parsed.level === 'number', `not a pino JSON line: ${line}`)
      }
    }
  )
})

void describe('the real server stops when the provider names another issuer', () => {
  let provider: http.Server
  let issuer = ''
  let dataDir = ''

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-issuer-'))
    provider = http.createServer((req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ issuer: `${issuer}/`, jwks_uri: `${issuer}/keys` }))
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}')
      }
    })
    await new Promise<void>(resolve => provider.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
  })
  after(async () => {
    await new Promise(resolve => provider.close(resolve))
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  void it(
    'exits 1 with one line naming OIDC_ISSUER and both values (a trailing slash)',
    { timeout: 120_000 },
    async () => {
      const r = await run(
        process.execPath,
        ['--import', 'tsx', 'src/server.ts'],
        serverEnv(dataDir, { OIDC_ISSUER: issuer })
      )
      assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`)
      const lines = r.stderr.split('\n').filter(l => l !== '')
      assert.equal(lines.length, 1, r.stderr)
      assert.ok(lines[0]?.startsWith('invalid configuration: OIDC_ISSUER '), lines[0])
      assert.ok(lines[0]?.includes(`"${issuer}"`) === true && lines[0].includes(`"${issuer}/"`), lines[0])
      assert.ok(!r.stdout.includes('listening on'), 'it never served')
    }
  )
})

/**
 * A throwaway PostgreSQL cluster for fault tests: `initdb` into a temporary directory, served on a
 * free port of 127.0.0.1 and a socket in that directory, stopped and started by the test. The
 * machine's own clusters are never touched: every `pg_ctl` call names this cluster's directory.
 *
 * initdb refuses to run as root; as root the commands run as the `postgres` user (`runuser`).
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface ThrowawayCluster {
  url: string
  port: number
  stop: (mode: 'fast' | 'immediate') => Promise<void>
  start: () => Promise<void>
  /** stops the cluster if it runs and removes its files */
  destroy: () => Promise<void>
}

/** The bin directory of the newest PostgreSQL installed the Debian way, if any. */
export function postgresBinDir (): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!fs.existsSync(root)) return undefined
  const versions = fs.readdirSync(root).filter(v => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
  for (const v of versions) {
    const bin = path.join(root, v, 'bin')
    if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) return bin
  }
  return undefined
}

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port
      srv.close(() => resolve(port))
    })
  })
}

export interface ThrowawayOptions {
  /** server settings passed at start (`-c name=value`), e.g. shared_preload_libraries */
  settings?: Record<string, string>
}

export async function createThrowawayCluster (options: ThrowawayOptions = {}): Promise<ThrowawayCluster> {
  const bin = postgresBinDir()
  if (bin === undefined) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql')
  const asRoot = process.getuid?.() === 0
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-pgfault-'))
  const data = path.join(dir, 'data')
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const uid = Number(stdout.trim())
    const { stdout: g } = await run('id', ['-g', 'postgres'])
    fs.chownSync(dir, uid, Number(g.trim()))
  }
  const pg = async (tool: string, args: string[]): Promise<void> => {
    const file = path.join(bin, tool)
    if (asRoot) await run('runuser', ['-u', 'postgres', '--', file, ...args], { cwd: dir })
    else await run(file, args, { cwd: dir })
  }
  const port = await freePort()
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'])
  const start = async (): Promise<void> => {
    const settings = { max_connections: '50', ...options.settings }
    const flags = Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`).join(' ')
    await pg('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 ${flags}`,
      'start'
    ])
  }
  const stop = async (mode: 'fast' | 'immediate'): Promise<void> => {
    await pg('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop'])
  }
  await start()
  let destroyed = false
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy: async () => {
      if (destroyed) return
      destroyed = true
      await stop('immediate').catch(() => {})
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

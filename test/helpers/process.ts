/**
 * The real processes in tests: `run` runs a command to its end and gives back its exit code and
 * output (server start-up, npm scripts); `startServer` starts the service (`src/server.ts`) and
 * gives back its port, its log and a way to stop it; `serverEnv` is the environment of one on its
 * own (PGlite), and `killAndReport` ends a suite of them.
 *
 * @example
 *   const r = await run('npm', ['run', '--silent', 'token', '--', '--sub', 'alice'], process.env)
 */
import { spawn, type ChildProcess } from 'node:child_process'

export interface Run { code: number | null, stdout: string, stderr: string }

/**
 * The environment of a server on its own: PGlite in `dataDir`, any free port on 127.0.0.1, no
 * background work, and none of the machine's databases, identity provider, Redis, S3 or SMTP
 * unless `extra` names them.
 */
export function serverEnv (dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    WORKERS: 'false',
    ...extra
  }
  for (const name of [
    'DATABASE_URL',
    'DATABASE_APP_URL',
    'DATABASE_WORKER_URL',
    'OIDC_ISSUER',
    'OIDC_JWKS_URL',
    'OIDC_AUDIENCE',
    'REDIS_URL',
    'S3_BUCKET',
    'SMTP_URL'
  ]) {
    if (!(name in extra)) delete env[name]
  }
  return env
}

export async function run (cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return await new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.once('error', reject)
    child.once('close', code => { resolve({ code, stdout, stderr }) })
  })
}

/** A real server process (`node --import tsx src/server.ts`) that has logged its listening address. */
export interface ServerProcess {
  readonly name: string
  readonly child: ChildProcess
  readonly port: number
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** everything it wrote so far, stdout and stderr interleaved */
  output (): string
  /** its log lines at pino level error (50) and fatal (60) */
  errorLines (): string[]
  /** SIGTERM, then its exit code; SIGKILL and a thrown error when it has not exited within `timeoutMs` */
  stop (timeoutMs?: number): Promise<number | null>
}

/**
 * Starts `src/server.ts` with `env` (PORT=0 and HOST=127.0.0.1 expected: the port is read from the
 * log line "listening on http://127.0.0.1:<port>"). Rejects with its output when it exits or has not
 * listened within `timeoutMs`.
 *
 * @example
 *   const a = await startServer('A', { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: url })
 *   await fetch(`${a.url}/ready`)
 *   assert.equal(await a.stop(), 0)
 */
export async function startServer (name: string, env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString() })
  child.stderr.on('data', (c: Buffer) => { out += c.toString() })
  const exited = new Promise<number | null>(resolve => { child.once('exit', code => { resolve(code) }) })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${name} did not start within ${timeoutMs} ms: ${out.slice(-3000)}`))
    }, timeoutMs)
    const look = (): void => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)
      if (m !== null) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    child.stdout.on('data', look)
    child.once('error', (err) => { clearTimeout(timer); reject(err) })
    void exited.then(code => {
      clearTimeout(timer)
      reject(new Error(`${name} exited with ${String(code)}: ${out.slice(-3000)}`))
    })
  })
  return {
    name,
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    errorLines: () => out.split('\n').filter(l => /"level":(5|6)0\b/.test(l)),
    async stop (stopTimeoutMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>(resolve => { timer = setTimeout(() => { resolve('late') }, stopTimeoutMs) })
      const code = await Promise.race([exited, late])
      clearTimeout(timer)
      if (code === 'late') {
        child.kill('SIGKILL')
        throw new Error(`${name} did not exit within ${stopTimeoutMs} ms of SIGTERM: ${out.slice(-3000)}`)
      }
      return code
    }
  }
}

/** Starts one server per name, all with `env`, at once; when one fails, the others are stopped and its error thrown. */
export async function startServers (
  names: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs?: number
): Promise<ServerProcess[]> {
  const started = await Promise.allSettled(names.map(async name => await startServer(name, env, timeoutMs)))
  const failed = started.find(s => s.status === 'rejected')
  if (failed === undefined) return started.flatMap(s => (s.status === 'fulfilled' ? [s.value] : []))
  await Promise.allSettled(
    started.map(async s => {
      if (s.status === 'fulfilled') await s.value.stop()
    })
  )
  throw failed.reason
}

/**
 * The end of a suite of real servers: kills those still running (SIGKILL) and prints what went wrong
 * inside each, the first `maxLines` of its error lines (pino level 50 and above).
 */
export function killAndReport (servers: ServerProcess[], maxLines: number): void {
  for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL')
  for (const s of servers) {
    const errors = s.errorLines()
    if (errors.length > 0) {
      const shown = errors.slice(0, maxLines).map(l => l.slice(0, 3000))
      console.log(`instance ${s.name} logged ${errors.length} error line(s):\n${shown.join('\n')}`)
    }
  }
}

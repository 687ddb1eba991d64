/**
 * Runs a command to its end and gives back its exit code and output, for tests of the real
 * processes (server start-up, npm scripts).
 *
 * @example
 *   const r = await run('npm', ['run', '--silent', 'token', '--', '--sub', 'alice'], process.env)
 */
import { spawn } from 'node:child_process'

export interface Run { code: number | null, stdout: string, stderr: string }

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

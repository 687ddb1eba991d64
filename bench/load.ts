/**
 * One measurement: autocannon against a URL for a fixed time, every response time kept (for exact
 * percentiles, autocannon's histogram has 1 ms resolution and no p95), and the resident set size of
 * the server processes sampled from /proc every 200 ms.
 */
import net from 'node:net'
import fs from 'node:fs'
import autocannon from 'autocannon'

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'
  path: string
  headers?: Record<string, string>
  body?: string
  /** called with the response, e.g. to keep an ETag */
  onResponse?: (status: number, headers: Record<string, string | string[]>) => void
}

/** Builds the next request (per request, so ids, tokens and bodies vary). */
export type RequestFactory = () => RequestSpec

export interface LoadResult {
  requests: number
  rps: number
  p50: number
  p95: number
  p99: number
  non2xx: number
  statuses: Record<string, number>
  errors: number
  peakRssMb: number
  /** CPU time of the server process per request (user + system), ms */
  cpuMsPerRequest: number
  /** CPU time of the local PostgreSQL server's processes per request, ms (undefined: not asked, e.g. PGlite) */
  dbCpuMsPerRequest?: number
}

/** user + system CPU time of a process so far, ms */
export function cpuMs (pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

/**
 * user + system CPU time so far of each process of this machine named `postgres` (the servers and
 * their backends), ms by pid: the database's work, measured beside the request count.
 */
export function postgresCpu (): Map<number, number> {
  const out = new Map<number, number>()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(Number(entry), (Number(fields[11]) + Number(fields[12])) * 10)
    } catch {}
  }
  return out
}

/**
 * The CPU time the database's processes spent since `before`; a backend that exited in between takes its time with it.
 */
export function postgresCpuSince (before: Map<number, number>): number {
  let total = 0
  for (const [pid, ms] of postgresCpu()) total += ms - (before.get(pid) ?? 0)
  return total
}

export function rssMb (pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(status)
    return m?.[1] !== undefined ? Number(m[1]) / 1024 : 0
  } catch {
    return 0
  }
}

function percentile (sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i] ?? 0
}

export async function runLoad (options: {
  url: string
  connections: number
  duration: number
  next: RequestFactory
  pid: number
  db?: boolean
}): Promise<LoadResult> {
  const latencies: number[] = []
  const statuses: Record<string, number> = {}
  let peak = rssMb(options.pid)
  const cpu0 = cpuMs(options.pid)
  const db0 = options.db === true ? postgresCpu() : new Map<number, number>()
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(options.pid))
  }, 200)
  try {
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      const instance = autocannon(
        {
          url: options.url,
          connections: options.connections,
          duration: options.duration,
          pipelining: 1,
          timeout: 30,
          requests: [
            {
              setupRequest: (req: autocannon.Request, context: Record<string, unknown>) => {
                const spec = options.next()
                context.spec = spec
                return {
                  ...req,
                  method: spec.method,
                  path: spec.path,
                  headers: { ...spec.headers },
                  body: spec.body ?? ''
                }
              },
              onResponse: (
                status: number,
                _body: string,
                context: Record<string, unknown>,
                headers?: Record<string, string | string[]>
              ) => {
                const spec = context.spec as RequestSpec | undefined
                spec?.onResponse?.(status, headers ?? {})
              }
            }
          ]
        },
        (err, res) => {
          if (err !== null && err !== undefined) reject(err)
          else resolve(res)
        }
      )
      instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
        latencies.push(responseTime)
        const key = String(statusCode)
        statuses[key] = (statuses[key] ?? 0) + 1
      })
    })
    latencies.sort((a, b) => a - b)
    const total = latencies.length
    const non2xx = Object.entries(statuses)
      .filter(([s]) => !s.startsWith('2') && s !== '304')
      .reduce((n, [, c]) => n + c, 0)
    return kept(latencies, {
      requests: total,
      rps: total / options.duration,
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      p99: percentile(latencies, 99),
      non2xx,
      statuses,
      errors: result.errors + result.timeouts,
      peakRssMb: Math.max(peak, rssMb(options.pid)),
      cpuMsPerRequest: total > 0 ? (cpuMs(options.pid) - cpu0) / total : 0,
      ...(options.db === true ? { dbCpuMsPerRequest: total > 0 ? postgresCpuSince(db0) / total : 0 } : {})
    })
  } finally {
    clearInterval(sampler)
  }
}

/** The sorted latencies of each load's result, for `mergeLoads` (kept beside the result, out of the report). */
const LATENCIES = new WeakMap<LoadResult, number[]>()

function kept (latencies: number[], result: LoadResult): LoadResult {
  LATENCIES.set(result, latencies)
  return result
}

/**
 * One result of loads of the same requests run in slices (`--rounds`, interleaved with the other sides): requests and
 * statuses added, rates over the slices' whole time, percentiles of all their latencies, CPU per request over all
 * their requests, the highest resident set.
 */
export function mergeLoads (slices: LoadResult[], seconds: number): LoadResult {
  const [first] = slices
  if (first === undefined) throw new Error('mergeLoads: no slice')
  if (slices.length === 1) return first
  const latencies = slices.flatMap(r => LATENCIES.get(r) ?? []).sort((a, b) => a - b)
  const requests = slices.reduce((n, r) => n + r.requests, 0)
  const perRequest = (of: (r: LoadResult) => number) =>
    requests > 0 ? slices.reduce((n, r) => n + of(r) * r.requests, 0) / requests : 0
  const statuses: Record<string, number> = {}
  for (const r of slices) for (const [k, n] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + n
  return kept(latencies, {
    requests,
    rps: requests / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    non2xx: slices.reduce((n, r) => n + r.non2xx, 0),
    statuses,
    errors: slices.reduce((n, r) => n + r.errors, 0),
    peakRssMb: Math.max(...slices.map(r => r.peakRssMb)),
    cpuMsPerRequest: perRequest(r => r.cpuMsPerRequest),
    ...(first.dbCpuMsPerRequest !== undefined ? { dbCpuMsPerRequest: perRequest(r => r.dbCpuMsPerRequest ?? 0) } : {})
  })
}

/** A TCP port free on 127.0.0.1 now (the kernel's pick), for a service the bench starts. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0
      srv.close(() => { resolve(port) })
    })
    srv.on('error', reject)
  })
}

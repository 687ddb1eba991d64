// The part of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string | Buffer
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request | undefined
      onResponse?: (
        status: number,
        body: string,
        context: Record<string, unknown>,
        headers?: Record<string, string | string[]>
      ) => void
    }
    interface Options {
      url: string
      connections?: number
      duration?: number
      pipelining?: number
      timeout?: number
      requests?: Request[]
    }
    interface Result {
      errors: number
      timeouts: number
      non2xx: number
    }
    interface Instance extends EventEmitter {
      stop (): void
    }
  }
  function autocannon (
    options: autocannon.Options,
    callback: (err: Error | null | undefined, result: autocannon.Result) => void
  ): autocannon.Instance
  export = autocannon
}

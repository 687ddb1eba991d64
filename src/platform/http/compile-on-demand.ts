/**
 * Schema compilation on demand. Fastify asks for a validator per route part and a serializer per
 * route and status when the app gets ready; compiling them all there (about 2 000 for the API,
 * most of them the same ErrorModel) held the first answer back by a second. Instead:
 *
 * - structurally equal schemas share one compiled function (the key is the schema's JSON);
 * - a function is compiled the first time it runs, or earlier by `compilePending()`, which the
 *   server calls right after it listens, a few schemas per turn of the event loop.
 *
 * A schema that cannot compile fails its first request (500) and `compilePending()` (a test
 * compiles every route's schemas).
 */

const pending = new Set<() => void>()

/** `compile` once, on the first call of `use` or in `compilePending()`, whichever comes first. */
export function onDemand<F> (compile: () => F): () => F {
  let fn: F | undefined
  const get = (): F => {
    if (fn === undefined) {
      pending.delete(warm)
      fn = compile()
    }
    return fn
  }
  const warm = (): void => { get() }
  pending.add(warm)
  return get
}

/** Compiles everything not compiled yet, yielding to requests between small batches. */
export async function compilePending (batch = 8): Promise<void> {
  while (pending.size > 0) {
    let n = 0
    for (const warm of pending) {
      warm()
      if (++n === batch) break
    }
    await new Promise<void>(resolve => { setImmediate(resolve) })
  }
}

/** A cache of compiled schemas keyed by their JSON (symbol keys, such as TypeBox's, do not count). */
export function structuralCache<V> (): (schema: unknown, make: () => V, prefix?: string) => V {
  const byKey = new Map<string, V>()
  return (schema, make, prefix = '') => {
    const key = prefix + JSON.stringify(schema)
    let v = byKey.get(key)
    if (v === undefined) {
      v = make()
      byKey.set(key, v)
    }
    return v
  }
}

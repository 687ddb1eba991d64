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

/** How many validators and serializers wait to be compiled. */
export const pendingCompilations = (): number => pending.size

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

/**
 * Compiles everything not compiled yet, in slices of a few milliseconds so that requests arriving
 * meanwhile wait at most one slice.
 */
export async function compilePending (sliceMs = 4): Promise<void> {
  while (pending.size > 0) {
    const until = performance.now() + sliceMs
    for (const warm of pending) {
      warm()
      if (performance.now() >= until) break
    }
    await new Promise<void>(resolve => { setImmediate(resolve) })
  }
}

/**
 * A cache of compiled schemas: by the schema object itself, then by its JSON (symbol keys, such as
 * TypeBox's, do not count), so that copies of one schema share a function too.
 */
export function structuralCache<V> (): (schema: unknown, make: () => V) => V {
  const byObject = new WeakMap<object, V>()
  const byKey = new Map<string, V>()
  return (schema, make) => {
    const obj = schema as object
    let v = byObject.get(obj)
    if (v !== undefined) return v
    const key = JSON.stringify(schema)
    v = byKey.get(key)
    if (v === undefined) {
      v = make()
      byKey.set(key, v)
    }
    byObject.set(obj, v)
    return v
  }
}

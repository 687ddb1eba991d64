/**
 * Writes this process answers, for the caches it keeps: before the answer to any request that may
 * change data (every method but GET, HEAD and OPTIONS) leaves, the listeners learn the tenant it
 * acted for (null when the request names its tenant elsewhere, as the identity provider's webhook
 * does: every tenant then). A cache drops what it holds of that tenant, so whoever wrote reads
 * their write at once from this process. Other processes are not told: their caches keep an entry
 * up to their own time limit (docs/performance.md, "Public space page").
 */
import type { FastifyInstance } from 'fastify'

export type WriteListener = (tenantId: string | null) => void

export class TenantWrites {
  private readonly listeners = new Set<WriteListener>()

  /** Calls `listener` on every write from now on; the function returned stops it. */
  on (listener: WriteListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  notify (tenantId: string | null): void {
    for (const listener of this.listeners) listener(tenantId)
  }
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Tells `writes` of every request that may have written, before its answer is sent. An answer of
 * 400 or above changed nothing (every write is one transaction), so it tells nothing either: a flood
 * of refused requests does not empty the caches.
 */
export function registerTenantWrites (app: FastifyInstance, writes: TenantWrites): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (!READS.has(request.method) && reply.statusCode < 400) writes.notify(request.optionalAuth?.tenantId ?? null)
    return payload
  })
}

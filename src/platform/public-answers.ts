/**
 * Answers that are the same for every caller without a credential (the public space page, a public space's
 * calendar feed), kept in this process for a short time (PUBLIC_PAGE_CACHE_MS). A write this process answers for a
 * tenant drops that tenant's answers before its own answer leaves (`TenantWrites`); writes elsewhere (another
 * instance, a background job) show within the time limit. At most `max` answers, the oldest dropped first.
 */
import type { TenantWrites } from './tenant-writes.ts'

interface Kept<T> { value: T, tenantId: string, expires: number }

export class KeptPublicAnswers<T> {
  private readonly entries = new Map<string, Kept<T>>()

  constructor (private readonly ttlMs: number, writes: TenantWrites, private readonly max = 1000) {
    writes.on(tenantId => { this.drop(tenantId) })
  }

  get (key: string): T | undefined {
    const hit = this.entries.get(key)
    if (hit === undefined) return undefined
    if (hit.expires > Date.now()) return hit.value
    this.entries.delete(key)
    return undefined
  }

  /** Keeps `value` itself (so that what is added to it later, such as a page's HTML, is kept too). */
  set (key: string, tenantId: string, value: T): void {
    if (this.ttlMs === 0) return
    this.entries.delete(key)
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(key, { value, tenantId, expires: Date.now() + this.ttlMs })
  }

  /** Drops the answers of a tenant (null: of every tenant). */
  drop (tenantId: string | null): void {
    if (tenantId === null) { this.entries.clear(); return }
    for (const [key, entry] of this.entries) if (entry.tenantId === tenantId) this.entries.delete(key)
  }
}

/**
 * Answers that are the same for every caller without a credential (the public space page, a public space's
 * calendar feed), kept in this process for a short time (PUBLIC_PAGE_CACHE_MS). A write this process answers for a
 * tenant drops that tenant's answers before its own answer leaves (`TenantWrites`); writes elsewhere (another
 * instance, a background job) show within the time limit. At most `max` answers, the oldest dropped first.
 *
 * An answer read before such a write and kept after it would serve the old data for the whole time limit to the
 * writer too: `set` names the `mark()` taken before its answer was read, and an answer of a tenant dropped since is
 * not kept.
 */
import type { TenantWrites } from './tenant-writes.ts'

interface Kept<T> { value: T, tenantId: string, expires: number }

/** Tenants whose last drop is remembered; past that, every answer read before the forgetting is refused. */
const DROPS_REMEMBERED = 10_000

export class KeptPublicAnswers<T> {
  private readonly entries = new Map<string, Kept<T>>()
  /** a count of the drops so far; the count at each tenant's last drop, and at the last drop of every tenant */
  private drops = 0
  private readonly droppedAt = new Map<string, number>()
  private allDroppedAt = 0

  constructor (private readonly ttlMs: number, writes: TenantWrites, private readonly max = 1000) {
    writes.on(tenantId => { this.drop(tenantId) })
  }

  /** Taken before an answer is read, for `set`. */
  mark (): number {
    return this.drops
  }

  get (key: string): T | undefined {
    const hit = this.entries.get(key)
    if (hit === undefined) return undefined
    if (hit.expires > Date.now()) return hit.value
    this.entries.delete(key)
    return undefined
  }

  /**
   * Keeps `value` itself (so that what is added to it later, such as a page's HTML, is kept too), unless its tenant's
   * answers were dropped since `mark` (taken before it was read).
   */
  set (key: string, tenantId: string, value: T, mark: number): void {
    if (this.ttlMs === 0) return
    if (this.allDroppedAt > mark || (this.droppedAt.get(tenantId) ?? 0) > mark) return
    this.entries.delete(key)
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(key, { value, tenantId, expires: Date.now() + this.ttlMs })
  }

  /** Drops the answers of a tenant (null: of every tenant). */
  drop (tenantId: string | null): void {
    this.drops++
    if (tenantId === null || this.droppedAt.size >= DROPS_REMEMBERED) {
      this.allDroppedAt = this.drops
      this.droppedAt.clear()
      if (tenantId === null) { this.entries.clear(); return }
    } else {
      this.droppedAt.set(tenantId, this.drops)
    }
    for (const [key, entry] of this.entries) if (entry.tenantId === tenantId) this.entries.delete(key)
  }
}

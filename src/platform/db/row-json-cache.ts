/**
 * JSON of database rows, kept between requests and checked against the row's version on every
 * read. The version is PostgreSQL's `xmin`, the transaction that wrote the row version a query
 * sees: a committed change, whichever code path or process wrote it, leaves a row version with
 * another `xmin`, so a cached text is used only for the very row version the request's own query
 * read. No invalidation, nothing shared between processes; a row that changed is rendered again.
 * One exception, which the caller must rule out: every row version one transaction writes has that
 * transaction's `xmin`, so a text rendered inside a transaction that has written may be outdated by
 * the same transaction under the same version. Render only in transactions that have written
 * nothing (the events' renderer checks it: src/modules/events/events.bodies.repository.ts).
 *
 * Texts are kept as UTF-8 bytes (a response assembled from buffers is written without encoding it
 * again) and evicted least recently used beyond `maxBytes`. Keys name the tenant, so one tenant's
 * text is never served for another's row, and only caller-independent texts belong here: which
 * rows a caller sees is always decided by the query that reads the versions.
 *
 * @example
 *   const cache = new RowJsonCache(16 << 20)
 *   const hit = cache.get(`${tenantId}:${row.id}`, row.version)   // undefined: render, then set
 */
export class RowJsonCache {
  private readonly entries = new Map<string, { version: string, json: Buffer }>()
  private bytes = 0

  constructor (private readonly maxBytes: number) {}

  get size (): number {
    return this.entries.size
  }

  get (key: string, version: string): Buffer | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined || entry.version !== version) return undefined
    // most recently used last
    this.entries.delete(key)
    this.entries.set(key, entry)
    return entry.json
  }

  set (key: string, version: string, json: Buffer): void {
    this.remove(key)
    if (json.length > this.maxBytes) return
    this.entries.set(key, { version, json })
    this.bytes += json.length
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break
      this.entries.delete(oldest)
      this.bytes -= entry.json.length
    }
  }

  private remove (key: string): void {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.bytes -= entry.json.length
  }
}

/**
 * A client's copy of a synced list (docs/integrations.md, "Incremental sync"), for the sync tests of every list:
 * a full read with `sync=true` the first time, deltas with `sync_token` after, rows upserted by id and tombstones
 * dropped; and a full read of the list to compare it with.
 */
import assert from 'node:assert/strict'
import type { TestApp } from './build-app.ts'

type Json = Record<string, any>

export class Replica {
  rows = new Map<string, Json>()
  token: string | undefined
  /** `path`: the list's path (`/api/v1/contacts`); `query`: its filters */
  constructor (readonly t: TestApp, readonly caller: string, readonly path: string, readonly query = '') {}

  /** One sync: a full read the first time, a delta after; `between` runs after each page but the last. */
  async sync (size = 3, between?: () => Promise<void>): Promise<void> {
    const full = this.token === undefined
    const fresh = new Map<string, Json>()
    let cursor: string | undefined
    for (;;) {
      const params = new URLSearchParams(this.query)
      params.set('size', String(size))
      if (full) params.set('sync', 'true')
      else params.set('sync_token', this.token ?? '')
      if (cursor !== undefined) params.set('cursor', cursor)
      const res = await this.t.as(this.caller, { method: 'GET', url: `${this.path}?${params.toString()}` })
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      for (const row of body.items as Json[]) (full ? fresh : this.rows).set(String(row.id), row)
      for (const gone of (body.deleted ?? []) as Json[]) {
        assert.equal(gone.deleted, true)
        this.rows.delete(String(gone.id))
      }
      if (body.next_cursor === null) {
        assert.equal(typeof body.sync_token, 'string', 'the last page carries the token')
        this.token = body.sync_token
        break
      }
      assert.equal(body.sync_token, undefined, 'only the last page carries the token')
      cursor = body.next_cursor
      await between?.()
    }
    if (full) this.rows = fresh
  }
}

/** Every row of the list as a full read answers it, by id. */
export async function fullRead (t: TestApp, caller: string, path: string, query = ''): Promise<Map<string, Json>> {
  const out = new Map<string, Json>()
  let cursor: string | undefined
  for (;;) {
    const params = new URLSearchParams(query)
    params.set('size', '100')
    if (cursor !== undefined) params.set('cursor', cursor)
    const res = await t.as(caller, { method: 'GET', url: `${path}?${params.toString()}` })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    for (const row of body.items as Json[]) out.set(String(row.id), row)
    if (body.next_cursor === null) return out
    cursor = body.next_cursor
  }
}

/** The rows of a replica or a full read, in one order, to compare. */
export const sorted = (m: Map<string, Json>): Json[] =>
  [...m.values()].sort((a, b) => String(a.id).localeCompare(String(b.id)))

/** What a sync token holds (its first part), to forge one in a test. */
export const tokenBody = (token: string): Json =>
  JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8'))

/**
 * Lists walked by cursor: from the first page of a URL (which names the page size), following
 * `next_cursor` until it is null. The tests compare what they walk with one large page, and check
 * that a cursor of another list (or filter) is refused.
 */
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { TestApp } from './build-app.ts'

type Json = Record<string, any>

/** `url` with `cursor` added to its query (the first page when `cursor` is null). */
function withCursor (url: string, cursor: string | null): string {
  if (cursor === null) return url
  return `${url}${url.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`
}

/** Every page body of a list, in order, as `token` sees it; each page must answer 200. */
export async function pagesByCursor (t: TestApp, token: string, url: string): Promise<Json[]> {
  const pages: Json[] = []
  let cursor: string | null = null
  do {
    const res = await t.as(token, { method: 'GET', url: withCursor(url, cursor) })
    assert.equal(res.statusCode, 200, res.body)
    const body: Json = res.json()
    pages.push(body)
    cursor = body.next_cursor
    assert.ok(pages.length <= 1000, `${url}: still a next page after 1000 pages`)
  } while (cursor !== null)
  return pages
}

/** Every item of a list, walked page by page by cursor. */
export async function itemsByCursor (t: TestApp, token: string, url: string): Promise<Json[]> {
  return (await pagesByCursor(t, token, url)).flatMap(p => p.items as Json[])
}

/**
 * `GET url` with a cursor another list (or filter) handed out: asserts the 400 it answers with; the
 * answer, for the caller to check where the error points.
 */
export async function refusedCursor (
  t: TestApp,
  token: string,
  url: string,
  cursor: string
): Promise<LightMyRequestResponse> {
  const res = await t.as(token, { method: 'GET', url: withCursor(url, cursor) })
  assert.equal(res.statusCode, 400, res.body)
  return res
}

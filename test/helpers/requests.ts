/**
 * Requests whose status is the check: one request (`expectStatus`), or a table of them sent in order
 * (`expectStatuses`), each row naming who sends it, what, and the status it must answer with.
 *
 * @example
 *   await expectStatuses(t, [
 *     [bob, 'PUT', `/api/v1/events/${id}/managers/ida`, 403, { permissions: ['event:edit'] }],
 *     [mallory, 'DELETE', `/api/v1/events/${id}/managers/ida`, 404],
 *     [alice, 'DELETE', `/api/v1/events/${id}/managers/ida`, 204]
 *   ])
 */
import assert from 'node:assert/strict'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import type { TestApp } from './build-app.ts'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** A request and the status it answers with: caller's token, method, URL, status, and the body of a write. */
export type StatusCase = readonly [token: string, method: Method, url: string, status: number, payload?: unknown]

/** Sends a request as `token` (with a JSON body when given), asserts its status; the response. */
export async function expectStatus (
  t: TestApp,
  token: string,
  method: Method,
  url: string,
  status: number,
  payload?: unknown
): Promise<LightMyRequestResponse> {
  const res = await t.as(token, {
    method,
    url,
    ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {})
  })
  assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`)
  return res
}

/** Sends every request of the table in order and asserts each status. */
export async function expectStatuses (t: TestApp, cases: readonly StatusCase[]): Promise<void> {
  for (const [token, method, url, status, payload] of cases) await expectStatus(t, token, method, url, status, payload)
}

/** `GET url` as `token`: asserts a 200, the JSON body. */
export async function getJson (t: TestApp, token: string, url: string): Promise<Record<string, any>> {
  return (await expectStatus(t, token, 'GET', url, 200)).json()
}

/** Sends a write as `token` that names the version it changes (`If-Match: etag`); the answer. */
export async function writeIfMatch (
  t: TestApp,
  token: string,
  method: Method,
  url: string,
  etag: string,
  payload?: unknown
): Promise<LightMyRequestResponse> {
  return await t.as(token, {
    method,
    url,
    headers: { 'if-match': etag },
    ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {})
  })
}

/** Bodies the create of a titled resource (an event, a space) refuses, with the field its error names. */
export const TITLED_BODY_REFUSALS: Array<[Record<string, unknown>, string]> = [
  [{ description: 'x' }, 'body.title'],
  [{ title: '' }, 'body.title'],
  [{ title: 'a', visibility: 15 }, 'body.visibility'],
  [{ title: 'a', timezone: 'Mars/Olympus' }, 'body.timezone'],
  [{ title: 'a', owner: 'x' }, 'body.owner']
]

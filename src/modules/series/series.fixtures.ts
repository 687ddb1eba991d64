/** Test fixtures of the series suites: an event and its series through the API. */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'
import type { Json } from '../events/events.fixtures.ts'

/** `POST /events/with-series` as `token`: asserts the 201; the answer ({ event, occurrences }). */
export async function withSeries (t: TestApp, token: string, body: Json): Promise<Json> {
  const res = await t.as(token, { method: 'POST', url: '/api/v1/events/with-series', payload: body })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/**
 * The body of a 'Standup' series of `count` daily half-hour occurrences from 2027-03-15 08:00 UTC;
 * `body` adds to it or overrides it.
 */
export function dailyStandup (count: number, body: Json = {}): Json {
  return {
    title: 'Standup',
    start_dt: '2027-03-15T08:00:00Z',
    end_dt: '2027-03-15T08:30:00Z',
    series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: count },
    ...body
  }
}

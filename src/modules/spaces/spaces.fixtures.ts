/** Test helpers of the spaces suites: build spaces through the API. */
import assert from 'node:assert/strict'
import type { TestApp } from '../../../test/helpers/build-app.ts'

type Json = Record<string, any>

export async function createSpace (t: TestApp, token: string, body: Json = {}): Promise<Json> {
  const res = await t.as(token, { method: 'POST', url: '/api/v1/spaces', payload: { title: 'Reading club', ...body } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

export async function publish (t: TestApp, token: string, id: number, body?: Json): Promise<void> {
  const res = await t.as(token, {
    method: 'POST',
    url: `/api/v1/spaces/${id}/publish`,
    ...(body !== undefined ? { payload: body } : {})
  })
  assert.equal(res.statusCode, 204, res.body)
}

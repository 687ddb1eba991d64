/** Test helpers of the spaces suites: build spaces through the API. */
import { newTenant, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'

type Json = Record<string, any>

export async function createSpace (t: TestApp, token: string, body: Json = {}): Promise<Json> {
  return (await expectStatus(t, token, 'POST', '/api/v1/spaces', 201, { title: 'Reading club', ...body })).json()
}

export async function publish (t: TestApp, token: string, id: number, body?: Json): Promise<void> {
  await expectStatus(t, token, 'POST', `/api/v1/spaces/${id}/publish`, 204, body)
}

/** A fresh tenant, its member alice, and a space of hers (created with `body`), published. */
export async function alicePublishedSpace (t: TestApp, body: Json = {}) {
  const tenant = newTenant(t)
  const alice = await tenant.user('alice')
  const s = await createSpace(t, alice, body)
  await publish(t, alice, s.id)
  return { tenant, alice, s }
}

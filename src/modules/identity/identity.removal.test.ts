/**
 * A user the identity provider removes loses their space memberships in that tenant, as they lose
 * their manager roles (issue #17); deactivation, which leaves manager roles alone, leaves
 * memberships alone too. Checked through `GET /spaces/{id}/members` (active members only).
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { idpEvent, idpWebhook } from './identity.fixtures.ts'

type Json = Record<string, any>
const SECRET = 'removal-webhook-secret'

/** Delivers an event of the identity provider about a user (added with an e-mail address and a name). */
async function deliver (
  t: TestApp,
  tenantId: string,
  userId: string,
  sequence: number,
  eventType: string
): Promise<string> {
  const added = eventType === 'user.human.added'
  const payload = added ? { email: `${userId}@example.test`, displayName: 'Grace' } : undefined
  return await idpWebhook(SECRET).deliver(t, idpEvent(tenantId, userId, sequence, eventType, payload))
}

async function space (t: TestApp, token: string, members: string[]): Promise<number> {
  const res = await t.as(token, { method: 'POST', url: '/api/v1/spaces', payload: { title: 'Team' } })
  assert.equal(res.statusCode, 201, res.body)
  const id = res.json().id as number
  for (const userId of members) {
    const add = await t.as(token, {
      method: 'POST',
      url: `/api/v1/spaces/${id}/members`,
      payload: { user_id: userId, role: 'space_member' }
    })
    assert.equal(add.statusCode, 201, add.body)
  }
  return id
}

async function members (t: TestApp, token: string, spaceId: number): Promise<string[]> {
  const res = await t.as(token, { method: 'GET', url: `/api/v1/spaces/${spaceId}/members` })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json().items as Json[]).map(m => m.user_id).sort()
}

for (const kind of databases()) {
  void describe(`${kind}: identity removal ends space memberships`, () => {
    const t = useTestApp(kind, { env: { IDP_WEBHOOK_SECRET: SECRET } })

    void it('deactivation keeps them, removal ends them in that tenant only', async () => {
      const tenant = newTenant(t, `org-${crypto.randomUUID()}`)
      const elsewhere = newTenant(t, `org-${crypto.randomUUID()}`)
      const grace = `u-${crypto.randomUUID()}`
      const alice = await tenant.user('alice', ['admin'])
      const otherAdmin = await elsewhere.user('olga', ['admin'])
      assert.equal(await deliver(t, tenant.id, grace, 1, 'user.human.added'), 'applied')
      const s1 = await space(t, alice, [grace, 'bob'])
      const s2 = await space(t, alice, [grace])
      const s3 = await space(t, otherAdmin, [grace])

      // deactivation does not revoke manager roles, so it leaves memberships as they are
      assert.equal(await deliver(t, tenant.id, grace, 2, 'user.deactivated'), 'applied')
      assert.deepEqual(await members(t, alice, s1), [grace, 'bob'].sort())
      assert.equal(await deliver(t, tenant.id, grace, 3, 'user.reactivated'), 'applied')

      assert.equal(await deliver(t, tenant.id, grace, 4, 'user.removed'), 'applied')
      assert.deepEqual(await members(t, alice, s1), ['bob'])
      assert.deepEqual(await members(t, alice, s2), [])
      // the same user id in another tenant is another user: untouched
      assert.deepEqual(await members(t, otherAdmin, s3), [grace])

      const rows = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx
          .selectFrom('space_members')
          .select(['space_id', 'is_active', 'removed_at'])
          .where('tenant_id', '=', tenant.id)
          .where('user_id', '=', grace)
          .orderBy('space_id')
          .execute()
      )
      assert.deepEqual(
        rows.map(r => [r.space_id, r.is_active, r.removed_at instanceof Date]),
        [
          [s1, false, true],
          [s2, false, true]
        ]
      )
      const removed = await withTenant(t.ctx.db, { tenantId: tenant.id }, trx =>
        trx
          .selectFrom('outbox')
          .select('payload')
          .where('tenant_id', '=', tenant.id)
          .where('topic', '=', 'user.removed')
          .where('aggregate_id', '=', grace)
          .executeTakeFirstOrThrow()
      )
      assert.deepEqual((removed.payload as Json).revoked, { space_managers: 0, event_managers: 0, space_members: 2 })

      // a space admin may add the user back later (a new membership, as for anyone who left)
      const back = await t.as(alice, {
        method: 'POST',
        url: `/api/v1/spaces/${s1}/members`,
        payload: { user_id: grace, role: 'space_member' }
      })
      assert.equal(back.statusCode, 201, back.body)
      assert.deepEqual(await members(t, alice, s1), [grace, 'bob'].sort())
    })
  })
}

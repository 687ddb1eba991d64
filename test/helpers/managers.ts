/**
 * The manager routes events and spaces share: the grants on one resource (`/api/v1/{kind}/{id}/managers`),
 * invitations by e-mail, and the invitee's pending invitations and their acceptance by token; and the
 * rule both follow for the invitee's address (shown only to who may manage the managers).
 */
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { Tenant, TestApp } from './build-app.ts'

type Json = Record<string, any>

export interface ManagerRoutes {
  /** `GET /{kind}/{id}/managers` */
  list: (token: string, id: number) => Promise<LightMyRequestResponse>
  /** `POST /{kind}/{id}/managers/invite` */
  invite: (token: string, id: number, payload: Json) => Promise<LightMyRequestResponse>
  /** `GET /{kind}/managers/pending`: the caller's pending invitations */
  pending: (token: string) => Promise<LightMyRequestResponse>
  /** `POST /{kind}/managers/accept` */
  accept: (token: string, payload: Json) => Promise<LightMyRequestResponse>
}

export function managerRoutes (t: TestApp, kind: 'events' | 'spaces'): ManagerRoutes {
  const base = `/api/v1/${kind}`
  return {
    list: async (token, id) => await t.as(token, { method: 'GET', url: `${base}/${id}/managers` }),
    invite: async (token, id, payload) =>
      await t.as(token, { method: 'POST', url: `${base}/${id}/managers/invite`, payload }),
    pending: async token => await t.as(token, { method: 'GET', url: `${base}/managers/pending` }),
    accept: async (token, payload) => await t.as(token, { method: 'POST', url: `${base}/managers/accept`, payload })
  }
}

/**
 * The scenario of `assertInvitedEmailShown`: the address invited to manage, a manager without the
 * right to manage managers and one with it, whom the test grants before the check.
 */
export const INVITEE = { email: 'quinn@example.test', withoutRight: 'ray', withRight: 'una' }

/**
 * Who sees the address of the one pending invitation of resource `id` (`INVITEE.email`): a viewer,
 * a plain member and `INVITEE.withoutRight` see null; `INVITEE.withRight`, the creator and an admin see it.
 */
export async function assertInvitedEmailShown (
  routes: ManagerRoutes,
  tenant: Tenant,
  id: number,
  creator: string
): Promise<void> {
  const emails = async (token: string) => {
    const res = await routes.list(token, id)
    assert.equal(res.statusCode, 200, res.body)
    return (res.json().items as Json[]).filter(m => m.status === 'pending').map(m => m.invited_email)
  }
  const { email, withoutRight, withRight } = INVITEE
  const callers: Array<[string, string, Array<string | null>]> = [
    ['a viewer', await tenant.user('vic', ['viewer']), [null]],
    ['a member', await tenant.user('reader'), [null]],
    [withoutRight, await tenant.user(withoutRight), [null]],
    [withRight, await tenant.user(withRight), [email]],
    ['the creator', creator, [email]],
    ['an admin', await tenant.user('root', ['admin']), [email]]
  ]
  for (const [who, token, seen] of callers) assert.deepEqual(await emails(token), seen, who)
}

/**
 * A grant (`POST` to `url` as `token`) with permissions the caller does not hold: a 403 naming
 * those, `unheld`, at body.permissions.
 */
export async function assertUnheldPermissionsRefused (
  t: TestApp,
  token: string,
  url: string,
  payload: Json,
  unheld: string[]
): Promise<void> {
  const res = await t.as(token, { method: 'POST', url, payload })
  assert.equal(res.statusCode, 403, res.body)
  assert.deepEqual(res.json().errors[0], {
    location: 'body.permissions',
    message: 'permissions the caller does not hold',
    value: unheld
  })
}

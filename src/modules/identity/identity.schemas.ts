import { Type, type Static } from '@sinclair/typebox'
import { model, StringEnum } from '../../platform/http/schema.ts'

export const AuthContext = model('AuthContext', {
  user_id: Type.String({ description: 'The caller (token sub)' }),
  tenant_id: Type.String({ description: "The caller's tenant" }),
  email: Type.String({ description: "The caller's e-mail, empty when the token has none" }),
  roles: Type.Array(Type.String(), { description: 'Roles from the token' }),
  effective_role: Type.String({ description: 'Strongest known role: admin, member, viewer, or none' }),
  permissions: Type.Array(Type.String(), { description: 'resource:action permissions derived from the roles' }),
  org_id: Type.Optional(
    Type.Union([Type.String(), Type.Null()], { description: "The caller's organization inside the tenant" })
  )
})

/** Largest webhook body accepted (413 above). A ZITADEL user event is a few KiB. */
export const IDP_WEBHOOK_BODY_LIMIT = 256 * 1024

const id = (description: string) => Type.String({ minLength: 1, maxLength: 200, description })

/**
 * A ZITADEL event as its actions (v2) target sends it. Further fields the provider adds are
 * accepted and ignored; `event_payload` is read only for the profile fields used.
 */
export const IdpEvent = Type.Object({
  aggregateID: id('The affected user'),
  aggregateType: Type.String({ maxLength: 100, description: 'Aggregate kind; `user` for user events' }),
  resourceOwner: id('The provider organization, which is our tenant'),
  instanceID: id('The provider instance'),
  version: Type.Optional(Type.String({ maxLength: 50 })),
  sequence: Type.Integer({ minimum: 0, maximum: 9_007_199_254_740_991, description: 'Increasing per aggregate' }),
  event_type: Type.String({ minLength: 1, maxLength: 200, description: 'user.human.added, user.removed, …' }),
  created_at: Type.Optional(Type.String({ maxLength: 100 })),
  userID: Type.Optional(Type.String({ maxLength: 200, description: 'Who acted (not the subject)' })),
  event_payload: Type.Optional(Type.Union([
    Type.Object({}, { additionalProperties: true }),
    Type.String({ maxLength: IDP_WEBHOOK_BODY_LIMIT, description: 'base64 of a JSON object (older releases)' }),
    Type.Null()
  ]))
}, { additionalProperties: true })
export type IdpEvent = Static<typeof IdpEvent>

const profileText = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Null()]))

/** The profile fields read from an event payload; everything else in it is ignored. */
export const IdpProfilePayload = Type.Object({
  userName: profileText(1000),
  email: profileText(1000),
  displayName: profileText(1000),
  firstName: profileText(1000),
  lastName: profileText(1000),
  name: profileText(1000)
}, { additionalProperties: true })
export type IdpProfilePayload = Static<typeof IdpProfilePayload>

export const IdpWebhookResult = model('IdpWebhookResult', {
  status: StringEnum(['applied', 'duplicate', 'stale', 'ignored'] as const, {
    description:
      'applied: recorded and applied; duplicate: seen before, nothing done; stale: older than the last applied event ' +
      'of the user; ignored: a kind without effect (or a removed user)'
  })
})

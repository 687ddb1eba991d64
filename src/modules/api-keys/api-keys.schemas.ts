/** Wire schemas of service accounts and their API keys (docs/api-keys.md). */
import { Type, type Static } from '@sinclair/typebox'
import { PERMISSIONS, ROLES } from '../../platform/auth/permissions.ts'
import {
  body, IntId, KeysetPageQuery, model, Nullable, pagedBody, StringEnum, Timestamp
} from '../../platform/http/schema.ts'

/** What a key may be limited to: the tenant permissions, and `scim` (never implied: it must be named). */
export const SCOPES = [...PERMISSIONS, 'scim'] as const
export type Scope = typeof SCOPES[number]

export const DEFAULT_EXPIRES_IN_DAYS = 90
export const DEFAULT_OVERLAP_HOURS = 24

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'What the account is for; unique in the tenant' })
const Role = StringEnum(ROLES, { description: 'The tenant role its keys act with' })
const Scopes = Nullable(Type.Array(StringEnum(SCOPES), {
  maxItems: SCOPES.length,
  uniqueItems: true,
  description: 'The permissions its keys may use, each within the role\'s (`scim` only with role admin); ' +
    'null: every permission of the role, never `scim`'
}))

export const ServiceAccount = model('ServiceAccount', {
  id: Type.Integer({ description: 'Id of the service account' }),
  user_id: Type.String({
    description: 'Who its keys act as (`sa_<id>`): the owner or creator of what they create, in the audit log'
  }),
  name: Type.String({ description: 'What the account is for' }),
  role: Role,
  scopes: Scopes,
  disabled: Type.Boolean({ description: 'A disabled account\'s keys are refused (401) until it is enabled again' }),
  disabled_at: Nullable(Timestamp('When it was disabled')),
  created_by: Type.String({ description: 'The user who created it' }),
  created_at: Timestamp(),
  updated_at: Timestamp()
}, {
  examples: [{
    id: 3,
    user_id: 'sa_3',
    name: 'CRM sync',
    role: 'member',
    scopes: ['contacts:read', 'contacts:write'],
    disabled: false,
    disabled_at: null,
    created_by: 'user-1',
    created_at: '2026-11-01T09:00:00Z',
    updated_at: '2026-11-01T09:00:00Z'
  }]
})
export type ServiceAccount = Static<typeof ServiceAccount>

export const PagedBodyServiceAccount = pagedBody(ServiceAccount, 'PagedBodyServiceAccount')

export const KEY_STATUSES = ['active', 'expired', 'revoked'] as const

const keyFields = {
  id: Type.Integer({ description: 'Id of the key' }),
  service_account_id: Type.Integer({ description: 'Its service account' }),
  prefix: Type.String({ description: 'The key\'s first 16 characters (`cbk_` and 12 more): how to recognise it' }),
  status: StringEnum(KEY_STATUSES, {
    description: 'active: accepted now; expired: past `expires_at` (a rotated key at the end of its overlap); ' +
      'revoked: refused since `revoked_at`'
  }),
  created_by: Type.String({ description: 'Who made it: a user, or `sa_<id>` for a key made with a key' }),
  created_at: Timestamp(),
  expires_at: Timestamp('When it stops being accepted (after a rotation: the end of the overlap, when sooner)'),
  revoked_at: Nullable(Timestamp('When it was revoked')),
  last_used_at: Nullable(Timestamp('When a request last used it (written at most once a minute)')),
  last_used_address: Nullable(Type.String({ description: 'The client address of that request' })),
  rotated_from: Nullable(Type.Integer({ description: 'The key this one replaced' })),
  replaced_by: Nullable(Type.Integer({ description: 'The key that replaced this one' }))
}

export const ApiKey = model('ApiKey', keyFields)
export type ApiKey = Static<typeof ApiKey>

export const CreatedApiKey = model('CreatedApiKey', {
  ...keyFields,
  secret: Type.String({
    description: 'The key, shown only in this answer: `cbk_` + 40 base62 + 6 base62 checksum; only its SHA-256 is kept'
  })
}, {
  examples: [{
    id: 12,
    service_account_id: 3,
    prefix: 'cbk_7FkQ2m9xLpA0',
    status: 'active',
    created_by: 'user-1',
    created_at: '2026-11-01T09:00:00Z',
    expires_at: '2027-01-30T09:00:00Z',
    revoked_at: null,
    last_used_at: null,
    last_used_address: null,
    rotated_from: null,
    replaced_by: null,
    secret: 'cbk_7FkQ2m9xLpA0…'
  }]
})

export const PagedBodyApiKey = pagedBody(ApiKey, 'PagedBodyApiKey')

export const CreateServiceAccountBody = body({
  name: Name,
  role: Role,
  scopes: Type.Optional(Scopes)
}, { examples: [{ name: 'CRM sync', role: 'member', scopes: ['contacts:read', 'contacts:write'] }] })
export type CreateServiceAccountBody = Static<typeof CreateServiceAccountBody>

export const PatchServiceAccountBody = body({
  name: Type.Optional(Name),
  role: Type.Optional(Role),
  scopes: Type.Optional(Scopes),
  disabled: Type.Optional(Type.Boolean({ description: 'true refuses its keys (401) until set false again' }))
}, { examples: [{ disabled: true }, { role: 'viewer', scopes: null }] })
export type PatchServiceAccountBody = Static<typeof PatchServiceAccountBody>

export const CreateApiKeyBody = body({
  expires_in_days: Type.Optional(Type.Integer({
    minimum: 1, maximum: 365, default: DEFAULT_EXPIRES_IN_DAYS, description: 'Lifetime in days (1 to 365, default 90)'
  }))
}, { examples: [{ expires_in_days: 30 }] })

export const RotateApiKeyBody = body({
  overlap_hours: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 720,
    default: DEFAULT_OVERLAP_HOURS,
    description: 'How long the old key keeps working (0 to 720 hours, default 24; never past its own expiry)'
  })),
  expires_in_days: Type.Optional(Type.Integer({
    minimum: 1, maximum: 365, default: DEFAULT_EXPIRES_IN_DAYS, description: 'Lifetime of the new key in days'
  }))
}, { examples: [{ overlap_hours: 2 }] })

export const ServiceAccountParams = Type.Object({ id: IntId })
export const ApiKeyParams = Type.Object({ id: IntId, key_id: IntId })

export const ListQuery = KeysetPageQuery

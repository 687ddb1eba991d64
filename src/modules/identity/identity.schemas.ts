import { Type } from '@sinclair/typebox'
import { model } from '../../platform/http/schema.ts'

export const AuthContext = model('AuthContext', {
  user_id: Type.String({ description: 'The caller (token sub)' }),
  tenant_id: Type.String({ description: 'The caller\'s tenant' }),
  email: Type.String({ description: 'The caller\'s e-mail, empty when the token has none' }),
  roles: Type.Array(Type.String(), { description: 'Roles from the token' }),
  effective_role: Type.String({ description: 'Strongest known role: admin, member, viewer, or none' }),
  permissions: Type.Array(Type.String(), { description: 'resource:action permissions derived from the roles' }),
  org_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'The caller\'s organization inside the tenant' }))
})

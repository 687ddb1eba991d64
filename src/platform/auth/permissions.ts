/**
 * The permission catalogue: tenant roles and the `resource:action` permissions they grant.
 * Every route declares the permission it needs with `requirePermission`, so the rule is visible
 * where the route is declared. Finer rules (ownership, visibility, event-manager permissions) live
 * in the modules and answer 404 or 403 from there.
 */
import type { onRequestAsyncHookHandler } from 'fastify'
import { error403Forbidden } from '../http/errors.ts'

/** Tenant roles, strongest first. */
export const ROLES = ['admin', 'member', 'viewer'] as const
export type Role = typeof ROLES[number]

export const PERMISSIONS = [
  'contacts:read', 'contacts:write',
  'events:read', 'events:write', 'events:publish',
  'series:read', 'series:write', 'series:publish',
  'spaces:read', 'spaces:write', 'spaces:publish',
  'automation:read', 'automation:write', 'automation:execute',
  'tenant:admin'
] as const
export type Permission = typeof PERMISSIONS[number]

const READ: Permission[] = ['contacts:read', 'events:read', 'series:read', 'spaces:read', 'automation:read']
const WRITE: Permission[] = [
  'contacts:write', 'events:write', 'events:publish', 'series:write', 'series:publish',
  'spaces:write', 'spaces:publish', 'automation:write', 'automation:execute'
]

const GRANTS: Record<Role, readonly Permission[]> = {
  viewer: READ,
  member: [...READ, ...WRITE],
  admin: [...READ, ...WRITE, 'tenant:admin']
}

/** The strongest known role, or `none` when the token carries no known role. */
export function effectiveRole (roles: readonly string[]): Role | 'none' {
  return ROLES.find(r => roles.includes(r)) ?? 'none'
}

export function permissionsOf (roles: readonly string[]): Permission[] {
  const role = effectiveRole(roles)
  return role === 'none' ? [] : [...GRANTS[role]]
}

/**
 * A route onRequest hook that answers 403 unless the caller holds `permission`. It runs right
 * after authentication, before the body is parsed or validated, so a caller without the
 * permission learns nothing about the input rules.
 *
 * `policy` names the row of the authorization policy (`kind:action`, src/modules/policy/policy.ts)
 * the route enforces; routes pass it through `requirePolicy`, which derives the permission from it.
 *
 * @example
 *   app.post('/api/v1/contacts', { onRequest: requirePermission('contacts:write') }, handler)
 */
export function requirePermission (permission: Permission, policy?: string): onRequestAsyncHookHandler {
  const handler: onRequestAsyncHookHandler = async (request) => {
    if (!request.auth.permissions.has(permission)) throw error403Forbidden(`missing permission ${permission}`)
  }
  Object.defineProperty(handler, 'permission', { value: permission })
  if (policy !== undefined) Object.defineProperty(handler, 'policy', { value: policy })
  return handler
}

/** What the hooks of a route declared under `key` (first found), read back for the route table. */
function declared<T> (onRequest: unknown, key: 'permission' | 'policy'): T | undefined {
  const list = Array.isArray(onRequest) ? onRequest : [onRequest]
  for (const h of list) {
    const value = (h as Record<string, T | undefined> | undefined)?.[key]
    if (value !== undefined) return value
  }
  return undefined
}

/** The permission a route declared, read back for the route table (OpenAPI, route matrix). */
export const declaredPermission = (onRequest: unknown): Permission | undefined =>
  declared<Permission>(onRequest, 'permission')

/** The policy row (`kind:action`) a route declared, read back for the route table. */
export const declaredPolicy = (onRequest: unknown): string | undefined => declared<string>(onRequest, 'policy')

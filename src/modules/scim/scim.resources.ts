/**
 * SCIM resources as pure values (RFC 7643): a user's row rendered as a SCIM User, a group as a SCIM Group, and the
 * other way round, a SCIM body (POST, PUT, or the result of a PATCH) read into the values to store. Attribute names
 * are case-insensitive (RFC 7643 §2.1): a body's keys are read whatever their case. Attributes this service does not
 * keep are ignored (an identity provider sends many: title, addresses, the enterprise extension).
 */
import { digestEtag } from '../../platform/http/conditional.ts'
import { invalidSyntax, invalidValue } from './scim.errors.ts'
import type { ScimRole } from './scim.table.ts'

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User'
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group'
/** This service's extension of a Group: the tenant role its members hold. */
export const GROUP_EXTENSION = 'urn:collab:params:scim:schemas:extension:collab:2.0:Group'
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
export const ROLES: readonly ScimRole[] = ['admin', 'member', 'viewer']

type Json = Record<string, unknown>

/** What the routes render a user from: the identity module's row and SCIM's own columns. */
export interface UserSource {
  id: string
  username: string | null
  email: string | null
  display_name: string | null
  first_name: string | null
  last_name: string | null
  state: string
  external_id: string | null
  created_at: Date
  updated_at: Date
}

export interface GroupSource {
  id: number
  display_name: string
  external_id: string | null
  role: ScimRole | null
  revision: number
  created_at: Date
  updated_at: Date
}

export interface MemberSource { user_id: string, display: string | null }

/** The userName of a user: the username, else the e-mail address, else the id (users the webhook recorded). */
export const userNameOf = (u: Pick<UserSource, 'username' | 'email' | 'id'>): string => u.username ?? u.email ?? u.id

/** The weak ETag of a user: a digest of every value the resource shows (any writer changes it). */
export function userVersion (u: UserSource): string {
  return `W/${digestEtag([u.id, u.username, u.email, u.display_name, u.first_name, u.last_name, u.state,
    u.external_id])}`
}

export const groupVersion = (g: Pick<GroupSource, 'revision'>): string => `W/"${g.revision}"`

const later = (a: Date, b: Date): Date => a.getTime() >= b.getTime() ? a : b

export function renderUser (u: UserSource, base: string, lastModified: Date = u.updated_at) {
  const name = {
    ...(u.first_name !== null ? { givenName: u.first_name } : {}),
    ...(u.last_name !== null ? { familyName: u.last_name } : {})
  }
  return {
    schemas: [USER_SCHEMA],
    id: u.id,
    ...(u.external_id !== null ? { externalId: u.external_id } : {}),
    userName: userNameOf(u),
    ...(Object.keys(name).length > 0 ? { name } : {}),
    ...(u.display_name !== null ? { displayName: u.display_name } : {}),
    ...(u.email !== null ? { emails: [{ value: u.email, type: 'work', primary: true }] } : {}),
    active: u.state === 'active',
    meta: {
      resourceType: 'User',
      created: u.created_at,
      lastModified: later(lastModified, u.created_at),
      location: `${base}/Users/${encodeURIComponent(u.id)}`,
      version: userVersion(u)
    }
  }
}
export type ScimUser = ReturnType<typeof renderUser>

export function renderGroup (g: GroupSource, members: readonly MemberSource[] | undefined, base: string) {
  return {
    schemas: g.role !== null ? [GROUP_SCHEMA, GROUP_EXTENSION] : [GROUP_SCHEMA],
    id: String(g.id),
    ...(g.external_id !== null ? { externalId: g.external_id } : {}),
    displayName: g.display_name,
    ...(members !== undefined
      ? {
          members: members.map(m => ({
            value: m.user_id,
            $ref: `${base}/Users/${encodeURIComponent(m.user_id)}`,
            type: 'User',
            ...(m.display !== null ? { display: m.display } : {})
          }))
        }
      : {}),
    ...(g.role !== null ? { [GROUP_EXTENSION]: { role: g.role } } : {}),
    meta: {
      resourceType: 'Group',
      created: g.created_at,
      lastModified: g.updated_at,
      location: `${base}/Groups/${g.id}`,
      version: groupVersion(g)
    }
  }
}
export type ScimGroup = ReturnType<typeof renderGroup>

/** The role a group gives its members: its own, else the role its display name names (`Admin`), else none. */
export function groupRole (g: { role: ScimRole | null, display_name: string }): ScimRole | null {
  if (g.role !== null) return g.role
  const named = g.display_name.trim().toLowerCase()
  return ROLES.find(r => r === named) ?? null
}

// ---- reading bodies ----

/** The value of `key` in `obj`, whatever the case of the key (RFC 7643 §2.1). */
export function attr (obj: Json, key: string): unknown {
  if (key in obj) return obj[key]
  const lower = key.toLowerCase()
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === lower) return v
  return undefined
}

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v)

/** A string attribute: absent or null → null; anything but a string → 400 invalidValue. */
function text (obj: Json, key: string, where: string, max = 256): string | null {
  const v = attr(obj, key)
  if (v === undefined || v === null) return null
  if (typeof v !== 'string') throw invalidValue(`${where} must be a string`)
  const trimmed = v.trim()
  if (trimmed.length > max) throw invalidValue(`${where} is longer than ${max} characters`)
  return trimmed === '' ? null : trimmed
}

/** A boolean, as JSON or as the strings some providers send (`"True"`, `"False"`). */
function bool (obj: Json, key: string, where: string): boolean | undefined {
  const v = attr(obj, key)
  if (v === undefined || v === null) return undefined
  if (typeof v === 'boolean') return v
  if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true'
  throw invalidValue(`${where} must be a boolean`)
}

function schemasOf (body: Json, required: string): void {
  const schemas = attr(body, 'schemas')
  if (schemas === undefined) return
  if (!Array.isArray(schemas) || !schemas.every(s => typeof s === 'string')) {
    throw invalidValue('schemas must be an array of schema URIs')
  }
  if (!schemas.some(s => s.toLowerCase() === required.toLowerCase())) {
    throw invalidValue(`schemas must include ${required}`)
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/

/** The values of a user that a SCIM body sets (every attribute this service keeps; absent ones are null). */
export interface UserValues {
  username: string
  email: string | null
  display_name: string | null
  first_name: string | null
  last_name: string | null
  /** undefined: the body does not say (a new user is active, a replaced one keeps its state) */
  active: boolean | undefined
  external_id: string | null
}

/**
 * Reads a User body: userName required; the e-mail address is the primary one of `emails` (else the first), or the
 * userName when `emails` is absent and the userName is an address.
 */
export function readUser (body: unknown): UserValues {
  if (!isObject(body)) throw invalidSyntax('the body must be a JSON object')
  schemasOf(body, USER_SCHEMA)
  const username = text(body, 'userName', 'userName')
  if (username === null) throw invalidValue('userName is required')
  const name = attr(body, 'name')
  if (name !== undefined && name !== null && !isObject(name)) throw invalidValue('name must be an object')
  const emails = attr(body, 'emails')
  let email: string | null = null
  if (emails !== undefined && emails !== null) {
    if (!Array.isArray(emails)) throw invalidValue('emails must be an array')
    const values = emails.map((e: unknown, i) => {
      if (!isObject(e)) throw invalidValue(`emails[${i}] must be an object`)
      const value = text(e, 'value', `emails[${i}].value`, 320)
      if (value !== null && !EMAIL.test(value)) throw invalidValue(`emails[${i}].value is not an e-mail address`)
      return { value, primary: bool(e, 'primary', `emails[${i}].primary`) === true }
    }).filter(e => e.value !== null)
    email = (values.find(e => e.primary) ?? values[0])?.value ?? null
  } else if (EMAIL.test(username)) {
    email = username
  }
  return {
    username,
    email,
    display_name: text(body, 'displayName', 'displayName'),
    first_name: isObject(name) ? text(name, 'givenName', 'name.givenName') : null,
    last_name: isObject(name) ? text(name, 'familyName', 'name.familyName') : null,
    active: bool(body, 'active', 'active'),
    external_id: text(body, 'externalId', 'externalId')
  }
}

export interface GroupValues {
  display_name: string
  external_id: string | null
  role: ScimRole | null
  /** the members' user ids (undefined: the body has no `members`) */
  members: string[] | undefined
}

function readRole (body: Json): ScimRole | null {
  const ext = attr(body, GROUP_EXTENSION)
  if (ext === undefined || ext === null) return null
  if (!isObject(ext)) throw invalidValue(`${GROUP_EXTENSION} must be an object`)
  const role = text(ext, 'role', `${GROUP_EXTENSION}:role`)
  if (role === null) return null
  const found = ROLES.find(r => r === role.toLowerCase())
  if (found === undefined) throw invalidValue(`${GROUP_EXTENSION}:role must be one of ${ROLES.join(', ')}`)
  return found
}

export function readGroup (body: unknown): GroupValues {
  if (!isObject(body)) throw invalidSyntax('the body must be a JSON object')
  schemasOf(body, GROUP_SCHEMA)
  const displayName = text(body, 'displayName', 'displayName')
  if (displayName === null) throw invalidValue('displayName is required')
  const members = attr(body, 'members')
  let ids: string[] | undefined
  if (members !== undefined && members !== null) {
    if (!Array.isArray(members)) throw invalidValue('members must be an array')
    ids = [...new Set(members.map((m: unknown, i) => {
      if (!isObject(m)) throw invalidValue(`members[${i}] must be an object`)
      const type = text(m, 'type', `members[${i}].type`)
      if (type !== null && type !== 'User') throw invalidValue(`members[${i}].type: only users may be members`)
      const value = text(m, 'value', `members[${i}].value`)
      if (value === null) throw invalidValue(`members[${i}].value is required`)
      return value
    }))]
  }
  return {
    display_name: displayName,
    external_id: text(body, 'externalId', 'externalId'),
    role: readRole(body),
    members: ids
  }
}

// ---- PATCH ----

/** The attribute names this service knows, by lower case: a PATCH's paths and values are written in their case. */
const KNOWN = new Map([
  'schemas', 'id', 'externalId', 'userName', 'name', 'givenName', 'familyName', 'formatted', 'displayName', 'emails',
  'value', 'type', 'primary', 'display', 'active', 'members', 'meta', '$ref', 'role', GROUP_EXTENSION, USER_SCHEMA,
  GROUP_SCHEMA
].map(n => [n.toLowerCase(), n]))

const known = (name: string): string => KNOWN.get(name.toLowerCase()) ?? name

/** A value with the known attribute names in their own case (recursively). */
export function canonicalValue (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalValue)
  if (!isObject(value)) return value
  const out: Json = {}
  for (const [k, v] of Object.entries(value)) out[known(k)] = canonicalValue(v)
  return out
}

/**
 * A PATCH path with the known attribute names in their own case: `Name.GivenName` → `name.givenName`,
 * `Members[Value eq "x"]` → `members[value eq "x"]`; a core schema prefix (`urn:…:User:userName`) is dropped. Quoted
 * values are left as they are.
 */
export function canonicalPath (path: string): string {
  let p = path.trim()
  for (const urn of [USER_SCHEMA, GROUP_SCHEMA]) {
    if (p.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) p = p.slice(urn.length + 1)
  }
  if (p.toLowerCase().startsWith(`${GROUP_EXTENSION.toLowerCase()}:`)) {
    return `${GROUP_EXTENSION}:${canonicalPath(p.slice(GROUP_EXTENSION.length + 1))}`
  }
  // names outside quotes: letters, digits, `$`, `_`, `-`
  const token = /("(?:[^"\\]|\\.)*")|([A-Za-z$][\w$-]*)/g
  return p.replace(token, (m, quoted: string | undefined, name: string | undefined) =>
    quoted !== undefined ? m : known(name ?? m))
}

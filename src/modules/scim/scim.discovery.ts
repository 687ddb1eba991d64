/**
 * The discovery documents (RFC 7644 §4): what this service provider supports (ServiceProviderConfig), its resource
 * types and the schemas of their attributes, as far as it keeps them (RFC 7643 §5–§7). Pure values of the base URL.
 */
import { GROUP_EXTENSION, GROUP_SCHEMA, LIST_SCHEMA, USER_SCHEMA } from './scim.resources.ts'

const CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType'
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema'

export const MAX_COUNT = 200
export const DEFAULT_COUNT = 100

export function serviceProviderConfig (base: string) {
  return {
    schemas: [CONFIG_SCHEMA],
    documentationUri: 'https://datatracker.ietf.org/doc/html/rfc7644',
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [{
      type: 'oauthbearertoken',
      name: 'API key',
      description: 'Authorization: Bearer cbk_… — the key of a service account whose scopes include scim',
      primary: true
    }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` }
  }
}

export function resourceTypes (base: string) {
  return [
    {
      schemas: [RESOURCE_TYPE_SCHEMA],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A user of the tenant (the token\'s subject)',
      schema: USER_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` }
    },
    {
      schemas: [RESOURCE_TYPE_SCHEMA],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'A group of users; its role is a tenant role its members hold',
      schema: GROUP_SCHEMA,
      schemaExtensions: [{ schema: GROUP_EXTENSION, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` }
    }
  ]
}

interface Attribute {
  name: string
  type: 'string' | 'boolean' | 'complex' | 'reference'
  multiValued: boolean
  description: string
  required: boolean
  caseExact: boolean
  mutability: 'readOnly' | 'readWrite' | 'immutable'
  returned: 'default' | 'always'
  uniqueness: 'none' | 'server'
  subAttributes?: Attribute[]
  canonicalValues?: string[]
  referenceTypes?: string[]
}

const attribute = (name: string, description: string, o: Partial<Attribute> = {}): Attribute => ({
  name,
  type: 'string',
  multiValued: false,
  description,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...o
})

const USER_ATTRIBUTES: Attribute[] = [
  attribute('userName', 'Unique identifier of the user in the tenant (case-insensitive)',
    { required: true, uniqueness: 'server' }),
  attribute('name', 'The user\'s name', {
    type: 'complex',
    subAttributes: [attribute('givenName', 'Given name'), attribute('familyName', 'Family name')]
  }),
  attribute('displayName', 'The name shown to others'),
  attribute('emails', 'E-mail addresses; the primary one (else the first) is kept', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', 'The address'),
      attribute('type', 'Its kind', { canonicalValues: ['work', 'home', 'other'] }),
      attribute('primary', 'The primary address', { type: 'boolean' })
    ]
  }),
  attribute('active', 'false: the user\'s tokens are refused (401)', { type: 'boolean' })
]

const GROUP_ATTRIBUTES: Attribute[] = [
  attribute('displayName', 'The group\'s name, unique in the tenant (case-insensitive); a role name gives that role',
    { required: true, uniqueness: 'server' }),
  attribute('members', 'The users of the group', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', 'The user\'s id', { mutability: 'immutable', caseExact: true }),
      attribute('$ref', 'The user\'s URI', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
      attribute('type', 'User', { canonicalValues: ['User'], mutability: 'immutable' }),
      attribute('display', 'The user\'s name', { mutability: 'readOnly' })
    ]
  })
]

const EXTENSION_ATTRIBUTES: Attribute[] = [
  attribute('role', 'The tenant role the members hold: the strongest of it and their token\'s roles applies',
    { canonicalValues: ['admin', 'member', 'viewer'], caseExact: true })
]

export function schemas (base: string) {
  const schema = (id: string, name: string, description: string, attributes: Attribute[]) => ({
    schemas: [SCHEMA_SCHEMA],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` }
  })
  return [
    schema(USER_SCHEMA, 'User', 'User Account', USER_ATTRIBUTES),
    schema(GROUP_SCHEMA, 'Group', 'Group', GROUP_ATTRIBUTES),
    schema(GROUP_EXTENSION, 'CollabGroup', 'The tenant role of a group', EXTENSION_ATTRIBUTES)
  ]
}

/** A ListResponse of documents (all of them: a discovery list has no paging). */
export function documentList<T> (items: T[]) {
  const n = items.length
  return { schemas: [LIST_SCHEMA], totalResults: n, startIndex: 1, itemsPerPage: n, Resources: items }
}

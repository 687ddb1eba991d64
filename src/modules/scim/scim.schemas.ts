/**
 * The wire schemas of the SCIM routes (RFC 7643 §4, RFC 7644 §3.4.2, §3.5.2). Request bodies are open objects: a
 * provider sends attributes this service does not keep, in any case (RFC 7643 §2.1), so the service reads them itself
 * (scim.resources.ts) and answers a wrong value with SCIM's 400 `invalidValue`. Responses declare what is sent.
 */
import { Type, type TSchema } from '@sinclair/typebox'
import { Timestamp } from '../../platform/http/schema.ts'
import { GROUP_EXTENSION } from './scim.resources.ts'

const Meta = Type.Object({
  resourceType: Type.String(),
  created: Timestamp(),
  lastModified: Timestamp(),
  location: Type.String(),
  version: Type.String({ description: 'The weak entity tag, as ETag sends it' })
})

export const ScimUser = Type.Object({
  schemas: Type.Array(Type.String()),
  id: Type.String(),
  externalId: Type.Optional(Type.String()),
  userName: Type.String(),
  name: Type.Optional(Type.Object({
    givenName: Type.Optional(Type.String()), familyName: Type.Optional(Type.String())
  })),
  displayName: Type.Optional(Type.String()),
  emails: Type.Optional(Type.Array(Type.Object({
    value: Type.String(), type: Type.String(), primary: Type.Boolean()
  }))),
  active: Type.Boolean(),
  meta: Meta
}, { $id: 'ScimUser', description: 'A SCIM User (urn:ietf:params:scim:schemas:core:2.0:User)' })

export const ScimGroup = Type.Object({
  schemas: Type.Array(Type.String()),
  id: Type.String(),
  externalId: Type.Optional(Type.String()),
  displayName: Type.String(),
  // `$ref` (the member's URI) cannot be a declared property: OpenAPI tooling reads a key `$ref` as a reference
  members: Type.Optional(Type.Array(Type.Object({
    value: Type.String(),
    type: Type.String(),
    display: Type.Optional(Type.String())
  }, { additionalProperties: true, description: 'A member; `$ref` is the URI of the user' }))),
  [GROUP_EXTENSION]: Type.Optional(Type.Object({
    role: Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')])
  }, { description: 'The tenant role the members hold' })),
  meta: Meta
}, { $id: 'ScimGroup', description: 'A SCIM Group (urn:ietf:params:scim:schemas:core:2.0:Group)' })

const listOf = (item: TSchema, name: string) => Type.Object({
  schemas: Type.Array(Type.String()),
  totalResults: Type.Integer(),
  startIndex: Type.Integer(),
  itemsPerPage: Type.Integer(),
  Resources: Type.Array(item)
}, { $id: name })

export const ScimUserList = listOf(ScimUser, 'ScimUserList')
export const ScimGroupList = listOf(ScimGroup, 'ScimGroupList')

/** A document of the discovery endpoints, sent as it is. */
export const ScimDocument = Type.Object({}, { additionalProperties: true, $id: 'ScimDocument' })
export const ScimDocumentList = Type.Object({
  schemas: Type.Array(Type.String()),
  totalResults: Type.Integer(),
  startIndex: Type.Integer(),
  itemsPerPage: Type.Integer(),
  Resources: Type.Array(Type.Object({}, { additionalProperties: true }))
}, { $id: 'ScimDocumentList' })

/** A SCIM request body: read by the service, whatever its attributes' case. */
export const ScimBody = Type.Object({
  schemas: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 10 }))
}, { additionalProperties: true, description: 'A SCIM resource or PatchOp message (RFC 7644)' })

export const ScimListQuery = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: 1000, description: 'eq comparisons joined by and (docs/scim.md)' })),
  startIndex: Type.Optional(Type.Integer({ description: '1-based index of the first result; below 1 is 1' })),
  count: Type.Optional(Type.Integer({ description: 'results per page: 100 by default, at most 200; below 0 is 0' })),
  attributes: Type.Optional(Type.String({ maxLength: 1000, description: 'accepted; every attribute is returned' })),
  excludedAttributes: Type.Optional(Type.String({ maxLength: 1000, description: '`members` leaves out members' })),
  sortBy: Type.Optional(Type.String({ maxLength: 200, description: 'not supported: ignored (creation order)' })),
  sortOrder: Type.Optional(Type.String({ maxLength: 20, description: 'not supported: ignored' }))
})

export const ScimReadQuery = Type.Object({
  attributes: ScimListQuery.properties.attributes,
  excludedAttributes: ScimListQuery.properties.excludedAttributes
})

export const ScimIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) })
export const ScimNameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) })

/**
 * The SCIM use cases (docs/scim.md). A user's profile and state change only through the identity module's
 * `applyUserChange`, the code path of the identity provider's webhook: the same domain events, the same revocation of
 * manager grants and space memberships on removal, the same token refusal of an inactive user. PATCH is applied by
 * `scim-patch` to the resource as it is rendered, and the result read as a replacement, so a PATCH can set nothing a
 * PUT could not. Every check (If-Match, uniqueness, members, values) comes before the first write: an error changes
 * nothing.
 */
import {
  scimPatch, patchBodyValidation, ScimError as PatchError, type ScimPatch, type ScimResource
} from 'scim-patch'
import { recordAudit } from '../../platform/audit.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatchTag } from '../../platform/http/conditional.ts'
import { applyUserChange, lockUser } from '../identity/index.ts'
import { invalidSyntax, invalidValue, notFound, ScimError, uniqueness, type ScimType } from './scim.errors.ts'
import * as repo from './scim.repository.ts'
import {
  canonicalPath, canonicalValue, groupRole, groupVersion, readGroup, readUser, renderGroup, renderUser, userVersion,
  PATCH_SCHEMA, type GroupSource, type GroupValues, type UserSource, type UserValues
} from './scim.resources.ts'

/** Who makes a change: the tenant and the service account of the key. */
export interface ScimCaller { readonly tenantId: string, readonly userId: string }

/** What a write changed: the resource, and the users whose tenant role or state may have changed (the gate's cache). */
export interface Written<T> { resource: T, users: string[] }

const bare = (version: string): string => version.replace(/^W\//, '')

// ---- PATCH ----

const PATCH_TYPES = new Set<ScimType>(['invalidFilter', 'invalidSyntax', 'invalidPath', 'noTarget', 'invalidValue'])

/** Applies a PatchOp body to a rendered resource (scim-patch); its errors become 400s with their scimType. */
function patched<T extends ScimResource> (resource: T, body: unknown): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidSyntax('the body must be a PatchOp message')
  }
  const raw = body as { schemas?: unknown, Operations?: unknown, operations?: unknown }
  const operations = raw.Operations ?? raw.operations
  if (!Array.isArray(raw.schemas) || !raw.schemas.includes(PATCH_SCHEMA)) {
    throw invalidSyntax(`schemas must be ["${PATCH_SCHEMA}"]`)
  }
  if (!Array.isArray(operations) || operations.length === 0) throw invalidSyntax('Operations must be a non-empty array')
  if (operations.length > 1000) throw invalidValue('at most 1000 operations')
  const ops = operations.map((o: unknown, i) => {
    if (o === null || typeof o !== 'object' || Array.isArray(o)) {
      throw invalidSyntax(`Operations[${i}] must be an object`)
    }
    const op = o as { op?: unknown, path?: unknown, value?: unknown }
    if (typeof op.op !== 'string') throw invalidSyntax(`Operations[${i}].op must be add, remove or replace`)
    if (op.path !== undefined && typeof op.path !== 'string') {
      throw new ScimError(400, 'invalidPath', `Operations[${i}].path must be a string`)
    }
    return {
      op: op.op.toLowerCase(),
      ...(typeof op.path === 'string' ? { path: canonicalPath(op.path) } : {}),
      ...(op.value !== undefined ? { value: canonicalValue(op.value) } : {})
    }
  })
  const message = { schemas: [PATCH_SCHEMA], Operations: ops } as unknown as ScimPatch
  try {
    patchBodyValidation(message)
    return scimPatch(resource, message.Operations, { mutateDocument: false, treatMissingAsAdd: true })
  } catch (err) {
    if (!(err instanceof PatchError) && !(err instanceof TypeError)) throw err
    const code = (err as PatchError).scimCode as ScimType | undefined
    const detail = err.message.replace(/^Invalid SCIM Patch: /, '')
    throw new ScimError(400, code !== undefined && PATCH_TYPES.has(code) ? code : 'invalidValue', detail)
  }
}

// ---- users ----

async function lockedUser (trx: Tx, tenantId: string, id: string, ifMatch: string | undefined): Promise<UserSource> {
  await lockUser(trx, tenantId, id)
  const user = await repo.findUser(trx, tenantId, id)
  if (user === undefined) throw notFound(`user ${id} not found`)
  checkIfMatchTag(ifMatch, bare(userVersion(user)))
  return user
}

/** Stores a user's values through the identity module's path, then their externalId; the user as stored. */
async function writeUser (
  trx: Tx, caller: ScimCaller, id: string, current: UserSource | undefined, values: UserValues
): Promise<UserSource> {
  const { tenantId } = caller
  await repo.lockNames(trx, tenantId, 'user', values.username)
  if (await repo.userNameTaken(trx, tenantId, values.username, id)) {
    throw uniqueness(`userName "${values.username}" is already taken`)
  }
  const state = values.active === undefined
    ? (current === undefined ? 'active' : undefined)
    : values.active ? 'active' : 'inactive'
  const outcome = await applyUserChange(trx, {
    tenantId,
    userId: id,
    profile: {
      username: values.username,
      email: values.email,
      display_name: values.display_name,
      first_name: values.first_name,
      last_name: values.last_name
    },
    state,
    sequence: undefined,
    actorId: caller.userId,
    source: 'scim'
  })
  // a removed user is final (the identity provider's rule): not a SCIM resource any more
  if (outcome.outcome !== 'applied') throw notFound(`user ${id} not found`)
  if ((current?.external_id ?? null) !== values.external_id || current === undefined) {
    await repo.saveExternalId(trx, tenantId, id, values.external_id)
    if ((current?.external_id ?? null) !== values.external_id) {
      await recordAudit(trx, {
        tenantId,
        action: current === undefined ? 'scim.user.created' : 'scim.user.updated',
        resourceType: 'user',
        resourceId: id,
        fields: { fields: ['externalId'] }
      })
    }
  }
  const user = await repo.findUser(trx, tenantId, id)
  if (user === undefined) throw notFound(`user ${id} not found`)
  return user
}

export async function createUser (trx: Tx, caller: ScimCaller, body: unknown, id: string): Promise<UserSource> {
  return await writeUser(trx, caller, id, undefined, readUser(body))
}

export async function replaceUser (
  trx: Tx, caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined
): Promise<UserSource> {
  const values = readUser(body)
  const current = await lockedUser(trx, caller.tenantId, id, ifMatch)
  return await writeUser(trx, caller, id, current, values)
}

export async function patchUser (
  trx: Tx, caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined, base: string
): Promise<UserSource> {
  const current = await lockedUser(trx, caller.tenantId, id, ifMatch)
  const result = patched(renderUser(current, base), body)
  return await writeUser(trx, caller, id, current, readUser(result))
}

/**
 * Removes a user as the identity provider's `user.removed` does (applyUserChange: manager grants and pending invites
 * revoked, space memberships ended, the row kept as removed), and ends their group memberships.
 */
export async function deleteUser (trx: Tx, caller: ScimCaller, id: string, ifMatch: string | undefined) {
  await lockedUser(trx, caller.tenantId, id, ifMatch)
  await applyUserChange(trx, {
    tenantId: caller.tenantId,
    userId: id,
    profile: {},
    state: 'removed',
    sequence: undefined,
    actorId: caller.userId,
    source: 'scim'
  })
  const groups = await repo.leaveAllGroups(trx, caller.tenantId, id)
  if (groups.length > 0) {
    await recordAudit(trx, groups.map(g => ({
      tenantId: caller.tenantId,
      action: 'scim.group.updated',
      resourceType: 'scim_group',
      resourceId: g,
      fields: { fields: ['members'], removed_user_ids: [id] }
    })))
  }
}

// ---- groups ----

const groupId = (id: string): number => {
  if (!/^\d{1,15}$/.test(id)) throw notFound(`group ${id} not found`)
  return Number(id)
}

async function lockedGroup (trx: Tx, tenantId: string, id: string, ifMatch: string | undefined): Promise<GroupSource> {
  const group = await repo.lockGroup(trx, tenantId, groupId(id))
  if (group === undefined) throw notFound(`group ${id} not found`)
  checkIfMatchTag(ifMatch, bare(groupVersion(group)))
  return group
}

/** Checks the name and the members of a group's new values (every check before any write). */
async function checkGroup (trx: Tx, tenantId: string, values: GroupValues, except: number | null): Promise<void> {
  await repo.lockNames(trx, tenantId, 'group', values.display_name)
  if (await repo.groupNameTaken(trx, tenantId, values.display_name, except)) {
    throw uniqueness(`displayName "${values.display_name}" is already taken`)
  }
  const ids = values.members ?? []
  const found = await repo.existingUsers(trx, tenantId, ids)
  const unknown = ids.filter(m => !found.has(m))
  if (unknown.length > 0) throw invalidValue(`members: no such user ${unknown.slice(0, 5).join(', ')}`)
}

/** The changed attribute names of a group, for the audit log. */
function changedFields (before: GroupSource | undefined, after: GroupValues, added: number, removed: number) {
  return [
    ...(before?.display_name !== after.display_name ? ['displayName'] : []),
    ...((before?.external_id ?? null) !== after.external_id ? ['externalId'] : []),
    ...((before?.role ?? null) !== after.role ? ['role'] : []),
    ...(added + removed > 0 ? ['members'] : [])
  ]
}

export async function createGroup (trx: Tx, caller: ScimCaller, body: unknown): Promise<Written<GroupSource>> {
  const values = readGroup(body)
  await checkGroup(trx, caller.tenantId, values, null)
  const group = await repo.insertGroup(trx, caller.tenantId, {
    display_name: values.display_name, external_id: values.external_id, role: values.role
  })
  const members = values.members ?? []
  await repo.changeMembers(trx, caller.tenantId, group.id, members, [])
  await recordAudit(trx, {
    tenantId: caller.tenantId,
    action: 'scim.group.created',
    resourceType: 'scim_group',
    resourceId: group.id,
    fields: {
      fields: changedFields(undefined, values, members.length, 0), role: groupRole(group), added_user_ids: members
    }
  })
  return { resource: group, users: members }
}

/** Sets a group's values and members (a PUT, or a PATCH's result). */
async function writeGroup (
  trx: Tx, caller: ScimCaller, current: GroupSource, values: GroupValues
): Promise<Written<GroupSource>> {
  const { tenantId } = caller
  await checkGroup(trx, tenantId, values, current.id)
  const before = await repo.memberIds(trx, tenantId, current.id)
  const after = values.members ?? []
  const add = after.filter(m => !before.includes(m))
  const remove = before.filter(m => !after.includes(m))
  const fields = changedFields(current, values, add.length, remove.length)
  if (fields.length === 0) return { resource: current, users: [] }
  const group = await repo.updateGroup(trx, tenantId, current.id, {
    display_name: values.display_name, external_id: values.external_id, role: values.role
  })
  await repo.changeMembers(trx, tenantId, current.id, add, remove)
  await recordAudit(trx, {
    tenantId,
    action: 'scim.group.updated',
    resourceType: 'scim_group',
    resourceId: current.id,
    fields: { fields, role: groupRole(group), added_user_ids: add, removed_user_ids: remove }
  })
  // a change of the role (or of the name that gives it) reaches every member; a change of members, those who moved
  const roleChanged = groupRole(current) !== groupRole(group)
  return { resource: group, users: roleChanged ? [...new Set([...before, ...after])] : [...add, ...remove] }
}

export async function replaceGroup (
  trx: Tx, caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined
): Promise<Written<GroupSource>> {
  const values = readGroup(body)
  const current = await lockedGroup(trx, caller.tenantId, id, ifMatch)
  return await writeGroup(trx, caller, current, values)
}

export async function patchGroup (
  trx: Tx, caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined, base: string
): Promise<Written<GroupSource>> {
  const current = await lockedGroup(trx, caller.tenantId, id, ifMatch)
  const members = (await repo.membersOf(trx, caller.tenantId, [current.id])).get(current.id) ?? []
  // members as a provider names them, `{value}` only: a removal by value (`[{"value": id}]`) matches them whole
  const rendered = renderGroup(current, members, base)
  const result = patched({ ...rendered, members: members.map(m => ({ value: m.user_id })) }, body)
  return await writeGroup(trx, caller, current, readGroup(result))
}

export async function deleteGroup (
  trx: Tx, caller: ScimCaller, id: string, ifMatch: string | undefined
): Promise<Written<null>> {
  const current = await lockedGroup(trx, caller.tenantId, id, ifMatch)
  const members = await repo.memberIds(trx, caller.tenantId, current.id)
  await repo.deleteGroup(trx, caller.tenantId, current.id)
  await recordAudit(trx, {
    tenantId: caller.tenantId,
    action: 'scim.group.deleted',
    resourceType: 'scim_group',
    resourceId: current.id,
    fields: { fields: ['members'], role: groupRole(current), removed_user_ids: members }
  })
  return { resource: null, users: members }
}

/**
 * The `filter` of a list (RFC 7644 §3.4.2.2), parsed by `scim2-parse-filter`, then narrowed to what this service
 * answers: `eq` comparisons of the attributes below, joined by `and` (attribute names case-insensitive, with or
 * without the core schema's URI). Anything else is refused 400 `invalidFilter`, never answered with a wrong list.
 */
import { parse, type Filter } from 'scim2-parse-filter'
import { invalidFilter } from './scim.errors.ts'
import { GROUP_SCHEMA, USER_SCHEMA } from './scim.resources.ts'

export type UserAttribute = 'id' | 'userName' | 'externalId' | 'displayName' | 'emails' | 'active'
export type GroupAttribute = 'id' | 'displayName' | 'externalId' | 'members'

/** One `attribute eq value` of the filter (all of them must hold). */
export interface Condition<A extends string> { attribute: A, value: string | boolean }

const USER_ATTRIBUTES: Record<string, UserAttribute> = {
  id: 'id',
  username: 'userName',
  externalid: 'externalId',
  displayname: 'displayName',
  emails: 'emails',
  'emails.value': 'emails',
  active: 'active'
}
const GROUP_ATTRIBUTES: Record<string, GroupAttribute> = {
  id: 'id',
  displayname: 'displayName',
  externalid: 'externalId',
  members: 'members',
  'members.value': 'members'
}

const MAX_FILTER = 1000
const MAX_CONDITIONS = 10

function conjuncts (f: Filter, out: Filter[]): Filter[] {
  if (f.op === 'and') for (const g of f.filters) conjuncts(g, out)
  else out.push(f)
  return out
}

function parseConditions<A extends string> (
  filter: string, schema: string, attributes: Record<string, A>
): Array<Condition<A>> {
  if (filter.length > MAX_FILTER) throw invalidFilter(`the filter is longer than ${MAX_FILTER} characters`)
  let tree: Filter
  try {
    tree = parse(filter)
  } catch (err) {
    throw invalidFilter(`the filter cannot be parsed: ${(err as Error).message}`)
  }
  const found = conjuncts(tree, [])
  if (found.length > MAX_CONDITIONS) throw invalidFilter(`at most ${MAX_CONDITIONS} conditions`)
  const prefix = `${schema.toLowerCase()}:`
  return found.map(f => {
    // `members[value eq "…"]`: the same as `members.value eq "…"`
    if (f.op === '[]' && f.valFilter.op === 'eq' && f.valFilter.attrPath.toLowerCase() === 'value') {
      f = { op: 'eq', attrPath: `${f.attrPath}.value`, compValue: f.valFilter.compValue }
    }
    if (f.op !== 'eq') {
      throw invalidFilter(`only "eq" comparisons joined by "and" are supported (found "${f.op}")`)
    }
    let path = f.attrPath.toLowerCase()
    if (path.startsWith(prefix)) path = path.slice(prefix.length)
    const attribute = attributes[path]
    if (attribute === undefined) {
      throw invalidFilter(`filtering on "${f.attrPath}" is not supported (${Object.keys(attributes).join(', ')})`)
    }
    const value = f.compValue
    if (attribute === 'active' ? typeof value !== 'boolean' : typeof value !== 'string') {
      throw invalidFilter(`"${f.attrPath}" is compared with a ${attribute === 'active' ? 'boolean' : 'string'}`)
    }
    return { attribute, value: value as string | boolean }
  })
}

/** The conditions of a Users filter; no filter: none. */
export function userFilter (filter: string | undefined): Array<Condition<UserAttribute>> {
  return filter === undefined || filter.trim() === '' ? [] : parseConditions(filter, USER_SCHEMA, USER_ATTRIBUTES)
}

/** The conditions of a Groups filter; no filter: none. */
export function groupFilter (filter: string | undefined): Array<Condition<GroupAttribute>> {
  return filter === undefined || filter.trim() === '' ? [] : parseConditions(filter, GROUP_SCHEMA, GROUP_ATTRIBUTES)
}

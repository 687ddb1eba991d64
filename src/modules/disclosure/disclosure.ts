/**
 * The outbound rule (docs/security.md, "What leaves the service"): every channel that hands a domain event, or what
 * one says, to a reader other than through the resource's own GET — automation trigger matching and the history of
 * its runs, outbound webhook subscriptions, a contact's timeline — asks `mayLearnOf` as that reader is now. One row
 * per topic of the catalogue says what the topic names and what a reader needs to be told of it; the checks are the
 * resource's own visibility functions (the same as its GET), never a copy.
 *
 * The table is generated into docs/authorization.md ("Who is told of what"), and a test fails when a topic of the
 * catalogue has no row.
 *
 * @example
 *   if (!(await mayLearnOf(trx, subjectOf(rule, null), row.topic, row.payload, cache))) continue
 */
import { effectiveRole, permissionsOf, ROLES } from '../../platform/auth/permissions.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { ApiError } from '../../platform/http/errors.ts'
import {
  type EventPermission, type EventRow, findEventForRead, hasEventPermission, isTenantAdmin
} from '../events/index.ts'
import { accountNow, scopedPermissions, type AccountNow } from '../api-keys/index.ts'
import { findUser, latestClaims } from '../identity/index.ts'
import { findVisibleSpace } from '../spaces/index.ts'
import { deletedEventCreator, seesContact, seesSeries, spaceCreator } from './disclosure.repository.ts'

type Json = Record<string, unknown>

/** What a topic names, and what its reader needs (the words of docs/authorization.md). */
export type Audience =
  | { of: 'event', needs?: EventPermission }
  | { of: 'series' }
  | { of: 'space', also?: 'contact' | 'event' }
  | { of: 'contact' }
  | { of: 'user' }
  | { of: 'rule' }

const event = (needs?: EventPermission): Audience => needs === undefined ? { of: 'event' } : { of: 'event', needs }
const ATTENDEES: Audience = event('attendees:read')
const SPACE: Audience = { of: 'space' }

/** Every topic of the catalogue (automation.catalogue.ts, DOMAIN_TRIGGERS) → who may be told of it. */
export const TOPIC_AUDIENCE: Record<string, Audience> = {
  'event.created': event(),
  'event.updated': event(),
  'event.published': event(),
  'event.unpublished': event(),
  'event.archived': event(),
  'event.deleted': event(),
  'event.cancelled': event(),
  'event.transitioned': event(),
  'event.activity_added': event(),
  'event.draft_started': event(),
  'event.draft_discarded': event(),
  'event.space_added': event(),
  'event.space_removed': event(),
  'event.cover_updated': event(),
  'event.document_linked': event(),
  'event.document_unlinked': event(),
  'event.link_added': event(),
  'event.link_removed': event(),
  'event.manager_added': event(),
  // the invitee's e-mail address: what GET …/managers shows only to who manages them
  'event.manager_invited': event('managers:manage'),
  'event.manager_updated': event(),
  'event.manager_removed': event(),
  'attendee.added': ATTENDEES,
  'attendee.status_changed': ATTENDEES,
  'attendee.answers_changed': ATTENDEES,
  'attendee.promoted': ATTENDEES,
  'attendee.checked_in': ATTENDEES,
  'attendee.check_in_undone': ATTENDEES,
  'attendee.checked_out': ATTENDEES,
  'attendee.removed': ATTENDEES,
  'milestone.added': event(),
  'milestone.updated': event(),
  'milestone.status_changed': event(),
  'milestone.removed': event(),
  'attachment.added': event(),
  // an attachment of a whole series names no event: its series then
  'attachment.removed': event(),
  'series.created': { of: 'series' },
  'series.updated': { of: 'series' },
  'series.published': { of: 'series' },
  'series.split': { of: 'series' },
  'series.occurrences_deleted': { of: 'series' },
  'space.created': SPACE,
  'space.updated': SPACE,
  'space.published': SPACE,
  'space.unpublished': SPACE,
  'space.archived': SPACE,
  'space.deleted': SPACE,
  'space.member_added': SPACE,
  'space.member_removed': SPACE,
  'space.member_updated': SPACE,
  'space.manager_added': SPACE,
  'space.manager_removed': SPACE,
  'space.contact_added': { of: 'space', also: 'contact' },
  'space.contact_removed': { of: 'space', also: 'contact' },
  'space.event_added': { of: 'space', also: 'event' },
  'space.event_removed': { of: 'space', also: 'event' },
  'contact.created': { of: 'contact' },
  'contact.updated': { of: 'contact' },
  'contact.deleted': { of: 'contact' },
  'contact.merged': { of: 'contact' },
  'user.added': { of: 'user' },
  'user.changed': { of: 'user' },
  'user.removed': { of: 'user' },
  'user.deactivated': { of: 'user' },
  'user.reactivated': { of: 'user' },
  'automation.rule_disabled': { of: 'rule' }
}

/** The words of an audience, for docs/authorization.md. */
function audienceText (a: Audience): string {
  switch (a.of) {
    case 'event': return a.needs === undefined
      ? 'sees the event (a deleted one: its creator, tenant admins)'
      : `\`${a.needs}\` on the event`
    case 'series': return 'sees an occurrence of the series'
    case 'space': return a.also === undefined
      ? 'sees the space (a deleted one: its creator, tenant admins)'
      : `sees the space and the ${a.also}`
    case 'contact': return 'sees the contact (a deleted one: as it was when it went)'
    case 'user': return '`tenant:admin` (a member is not told of other users)'
    case 'rule': return "the rule's creator, tenant admins"
  }
}

/** The table as Markdown (docs/authorization.md, "Who is told of what"). */
export function disclosureMarkdown (): string {
  const lines = ['| topic | names | the reader needs |', '|---|---|---|']
  for (const [topic, a] of Object.entries(TOPIC_AUDIENCE)) {
    const names = a.of === 'space' && a.also !== undefined ? `space, ${a.also}` : a.of
    lines.push(`| \`${topic}\` | ${names} | ${audienceText(a)} |`)
  }
  return lines.join('\n')
}

/** The rank of a role list: its effective role's place in ROLES (admin 0, member 1, viewer 2, none 3). */
const rank = (roles: readonly string[]): number => {
  const role = effectiveRole(roles)
  return role === 'none' ? ROLES.length : ROLES.indexOf(role)
}

/**
 * A stored reader (a rule's writer, a subscription's creator, a feed token's user) as they are now: in the
 * organization their latest token carried (`user_claims`, recorded by the user gate), with the lesser of the roles
 * stored and the roles that token carried (a demotion narrows what they are told; a promotion never widens what a
 * thing written before it does). A user no token of whom was seen since keeps what was stored. `cache` keeps one
 * answer per user for a pass over many rows.
 */
export async function asTheyAreNow (
  trx: Tx,
  reader: AuthContext,
  cache?: Map<string, AuthContext>
): Promise<AuthContext> {
  const key = `${reader.tenantId}\u0000${reader.userId}\u0000${reader.orgId ?? ''}\u0000${reader.roles.join(',')}`
  const kept = cache?.get(key)
  if (kept !== undefined) return kept
  const account = await accountNow(trx, reader.tenantId, reader.userId)
  const claims = account === undefined ? await latestClaims(trx, reader.tenantId, reader.userId) : undefined
  let now = reader
  if (account !== undefined) {
    now = accountAsItIsNow(reader, account)
  } else if (claims !== undefined) {
    const roles = rank(claims.roles) > rank(reader.roles) ? [...claims.roles] : [...reader.roles]
    now = {
      ...reader,
      orgId: claims.org_id,
      roles,
      effectiveRole: effectiveRole(roles),
      permissions: new Set(permissionsOf(roles))
    }
  }
  cache?.set(key, now)
  return now
}

/**
 * A service account's reader with the lesser of the role stored and its role now, within its scopes now; none at all
 * once it is disabled or deleted (the callers refuse it by `actorRefused` first; this keeps a missed check closed).
 */
function accountAsItIsNow (reader: AuthContext, account: AccountNow): AuthContext {
  const lesser = rank([account.role]) > rank(reader.roles) ? [account.role] : [...reader.roles]
  const roles = account.state === 'active' ? lesser : []
  const role = effectiveRole(roles)
  return {
    ...reader,
    roles,
    effectiveRole: role,
    permissions: new Set(role === 'none' ? [] : scopedPermissions(role, account.scopes))
  }
}

/** How whoever a stored thing acts as was refused; `actorRefused`. */
export type Refusal = 'removed' | 'deactivated' | 'disabled' | 'deleted'

/**
 * Whether whoever a stored thing acts as (a feed token's user, a rule's writer, a webhook subscription's creator) is
 * refused now, and how: a user the identity provider removed or deactivated, a service account disabled or deleted
 * (its things were made with one of its keys: docs/api-keys.md). A user the provider never told of is not refused.
 */
export async function actorRefused (trx: Tx, tenantId: string, userId: string): Promise<Refusal | undefined> {
  const account = await accountNow(trx, tenantId, userId)
  if (account !== undefined) return account.state === 'active' ? undefined : account.state
  const user = await findUser(trx, tenantId, userId)
  return user?.state === 'removed' ? 'removed' : user?.state === 'inactive' ? 'deactivated' : undefined
}

const idOf = (raw: unknown): number | undefined => {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^[0-9]{1,16}$/.test(raw) ? Number(raw) : NaN
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const uuidOf = (raw: unknown): string | undefined => typeof raw === 'string' && UUID.test(raw) ? raw : undefined

/** The event as the reader sees it now, or undefined (404 from its resolver). */
async function readEvent (trx: Tx, reader: AuthContext, id: number): Promise<EventRow | undefined> {
  return await findEventForRead(trx, reader, id, { includeDraftClones: true }).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return undefined
    throw err
  })
}

async function seesEvent (trx: Tx, reader: AuthContext, id: number, needs?: EventPermission): Promise<boolean> {
  const row = await readEvent(trx, reader, id)
  if (row === undefined) {
    // a deleted event is told of to its creator and tenant admins (as GET of it told them before)
    if (needs !== undefined) return false
    const creator = await deletedEventCreator(trx, reader.tenantId, id)
    return creator !== undefined && (isTenantAdmin(reader) || creator === reader.userId)
  }
  return needs === undefined || await hasEventPermission(trx, reader, row, needs)
}

async function seesSpace (trx: Tx, reader: AuthContext, id: number, topic: string): Promise<boolean> {
  if ((await findVisibleSpace(trx, reader, id)) !== undefined) return true
  if (topic !== 'space.deleted') return false
  const creator = await spaceCreator(trx, reader.tenantId, id)
  return creator !== undefined && (isTenantAdmin(reader) || creator === reader.userId)
}

/**
 * Whether `reader`, as they are now, may be told of a domain event of `topic` with `payload`: false for a topic
 * without a row (fail closed) and for a payload that does not name what its row needs. `cache` (optional) keeps
 * answers for one pass over many rows: keyed by reader, topic's audience and the ids it names.
 */
export async function mayLearnOf (
  trx: Tx,
  reader: AuthContext,
  topic: string,
  payload: Json,
  cache?: Map<string, boolean>
): Promise<boolean> {
  const audience = TOPIC_AUDIENCE[topic]
  if (audience === undefined) return false
  const key = [reader.tenantId, reader.userId, reader.orgId ?? '', [...reader.permissions].sort().join(','),
    JSON.stringify(audience), topic === 'space.deleted' ? 'deleted' : '', String(payload.event_id),
    String(payload.series_id), String(payload.space_id), String(payload.contact_id), String(payload.creator_id)]
    .join('\u0000')
  const cached = cache?.get(key)
  if (cached !== undefined) return cached
  const answer = await decide(trx, reader, topic, audience, payload)
  cache?.set(key, answer)
  return answer
}

async function decide (trx: Tx, reader: AuthContext, topic: string, a: Audience, p: Json): Promise<boolean> {
  switch (a.of) {
    case 'event': {
      const eventId = idOf(p.event_id)
      if (eventId !== undefined) return await seesEvent(trx, reader, eventId, a.needs)
      const seriesId = idOf(p.series_id)
      return a.needs === undefined && seriesId !== undefined && await seesSeries(trx, reader, seriesId)
    }
    case 'series': {
      const seriesId = idOf(p.series_id)
      return seriesId !== undefined && await seesSeries(trx, reader, seriesId)
    }
    case 'space': {
      const spaceId = idOf(p.space_id)
      if (spaceId === undefined || !(await seesSpace(trx, reader, spaceId, topic))) return false
      if (a.also === 'contact') {
        const contactId = uuidOf(p.contact_id)
        return contactId !== undefined && await seesContact(trx, reader, contactId)
      }
      if (a.also === 'event') {
        const eventId = idOf(p.event_id)
        return eventId !== undefined && await seesEvent(trx, reader, eventId)
      }
      return true
    }
    case 'contact': {
      const contactId = uuidOf(p.contact_id)
      return contactId !== undefined && await seesContact(trx, reader, contactId)
    }
    case 'user': return isTenantAdmin(reader)
    case 'rule': return isTenantAdmin(reader) || (typeof p.creator_id === 'string' && p.creator_id === reader.userId)
  }
}

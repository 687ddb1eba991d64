/**
 * The authorization policy: may this subject do this action on this resource. One table says it for
 * every resource kind (`POLICY`). Routes declare their row with `requirePolicy(kind, action)`, which
 * checks the row's tenant permission before the body is read; the grant on the resource is then checked
 * by the module's own resolvers (`lockEventForWrite` / `findEventForRead`, `canManageSpace`, the
 * contact owner rule, the series-level check, the rule checks) before anything changes. Services, bulk
 * operations, series cascades and the automation engine call the same resolvers with the same subject
 * type: an automation rule acts as its creator (`runAs`), never as the system. `docs/authorization.md`
 * is this table, and a test keeps the two equal.
 *
 * Two layers, always both:
 * - the **tenant permission** of the subject's role (`src/platform/auth/permissions.ts`): viewers
 *   read, members and admins write, admins hold `tenant:admin`;
 * - the **grant on the resource**: ownership (contacts), being the creator or holding an event
 *   manager permission (events and what hangs off them), a series-level grant (series-wide changes),
 *   being the creator or holding a space manager permission (spaces). Tenant admins hold every grant.
 *
 * A resource the subject cannot see answers 404; one they see but hold no grant on answers 403.
 *
 * The table is data: it names the permission catalogues of the platform (`src/platform/auth/`) and no module, so
 * every module may declare its rows with it. What re-checks a row on a resource from outside a route (an
 * Idempotency-Key replay) is the replay-checks module's.
 */
import type { onRequestAsyncHookHandler } from 'fastify'
import type { EventPermission, SpaceManagerPermission } from '../../platform/auth/manager-permissions.ts'
import { requirePermission, type Permission } from '../../platform/auth/permissions.ts'

export const RESOURCE_KINDS = [
  'contact',
  'event',
  'draft',
  'series',
  'space',
  'rule',
  'execution',
  'attendee',
  'manager',
  'cover',
  'link',
  'notification',
  'webhook',
  'feed',
  'guest',
  'audit',
  'service_account',
  'user'
] as const
export type ResourceKind = typeof RESOURCE_KINDS[number]

/** What holds the grant on the resource, besides tenant admins (who hold every grant). */
export type Grant =
  | { on: 'contact', who: 'owner' | 'visible' }
  | { on: 'event', permission: EventPermission | 'see' }
  | { on: 'series', permission: EventPermission }
  | { on: 'space', permission: SpaceManagerPermission | 'see' }
  | { on: 'rule', permission: 'see' | 'manage' }
  | { on: 'invite' }
  | { on: 'none' }

export interface PolicyRow {
  /** the tenant-role permission (declared on the route, checked before the body is read) */
  tenant: Permission
  /** the grant on the resource itself */
  grant: Grant
  /** rules beyond the grant, in words (shown in docs/authorization.md) */
  also?: string
}

/** A row of the policy; one constructor per kind of grant below. */
const row = (tenant: Permission, grant: Grant, also?: string): PolicyRow =>
  ({ tenant, grant, ...(also !== undefined ? { also } : {}) })
const contact = (tenant: Permission, who: 'owner' | 'visible', also?: string): PolicyRow =>
  row(tenant, { on: 'contact', who }, also)
const event = (tenant: Permission, permission: EventPermission | 'see', also?: string): PolicyRow =>
  row(tenant, { on: 'event', permission }, also)
/** A series-level grant: the series creator, or an event permission held on the whole series. */
const series = (tenant: Permission, permission: EventPermission, also?: string): PolicyRow =>
  row(tenant, { on: 'series', permission }, also)
const space = (tenant: Permission, permission: SpaceManagerPermission | 'see', also?: string): PolicyRow =>
  row(tenant, { on: 'space', permission }, also)
const rule = (tenant: Permission, permission: 'see' | 'manage', also?: string): PolicyRow =>
  row(tenant, { on: 'rule', permission }, also)
/** The addressee of an invite. */
const invitee = (tenant: Permission, also?: string): PolicyRow => row(tenant, { on: 'invite' }, also)
/** No grant on a resource: the tenant permission alone (creations, lists, catalogues). */
const tenantOnly = (tenant: Permission, also?: string): PolicyRow => row(tenant, { on: 'none' }, also)

/**
 * The policy: resource kind → action → what it takes. Sub-resources of an event (attendees,
 * managers, cover, links, drafts) are judged on the published event they hang off; a draft clone is
 * judged by its published row.
 */
export const POLICY = {
  contact: {
    read: contact(
      'contacts:read',
      'visible',
      'visible: the owner; an organization contact also to every caller of that organization'
    ),
    write: contact('contacts:write', 'owner',
      'PUT, PATCH, favorite, DELETE, every contact the upsert matches and every contact a merge names'),
    create: tenantOnly('contacts:write', 'the caller becomes the owner'),
    export: contact('contacts:read', 'owner',
      'every trace naming the contact (GDPR article 15), to who may change it: its owner, admins for organization ' +
      'contacts'),
    erase: contact('contacts:write', 'owner',
      'as DELETE, everywhere it is held (GDPR article 17); its attendances stay anonymous; a second erase answers ' +
      'the same report to who erased it and admins')
  },
  event: {
    create: tenantOnly('events:write', 'the caller becomes the creator; spaces named need `space:events`'),
    read: event('events:read', 'see', 'visibility 10–40, the creator, the managers of the event or its series'),
    list: tenantOnly(
      'events:read',
      'lists, searches and the calendar show only the events the caller sees; the template catalogue'
    ),
    edit: event('events:write', 'event:edit', 'PUT, PATCH, transition, activity, starting a draft'),
    publish: event('events:publish', 'event:publish'),
    unpublish: event(
      'events:publish',
      'event:publish',
      'back to draft: off public pages, public registration and feeds (or kept there as cancelled); attendees stay'
    ),
    clone: event(
      'events:write',
      'see',
      'the caller becomes the creator of a new draft; copying the managers (the default) needs `managers:manage`'
    ),
    archive: event('events:write', 'event:publish'),
    delete: event('events:write', 'event:delete'),
    cancel: event(
      'events:write',
      'event:edit',
      'scopes `future` and `all`: `event:edit` at series level; every attendee is told once'
    ),
    link_space: event(
      'events:write',
      'event:edit',
      'and `space:events` on the space (404 when the space is not visible to the caller)'
    ),
    automate: event('automation:write', 'automations:manage', 'event automations and EVENT-scoped rules')
  },
  draft: {
    read: event('events:read', 'see', "judged by the published event, never by the draft's own visibility"),
    edit: event('events:write', 'event:edit', 'edit, discard; publishing the draft needs `event:publish`')
  },
  series: {
    read: event('series:read', 'see', 'the series of an event the caller sees, and the occurrences they see'),
    edit_one: event('series:write', 'event:edit', 'scope `this`: the addressed occurrence only'),
    edit_all: series(
      'series:write',
      'event:edit',
      'scopes `following` and `all`, series links and attachments: series creator or series manager'
    ),
    delete_all: series('series:write', 'event:delete', 'scopes `following` and `all`'),
    publish: series('series:publish', 'event:publish'),
    managers: series(
      'series:write',
      'managers:manage',
      "the granted permissions within the granter's own at series level"
    ),
    links: series('series:write', 'links:manage', 'series links and attachments'),
    create: event(
      'series:write',
      'event:edit',
      'bounded: occurrences and window are limited before anything is written'
    )
  },
  space: {
    create: tenantOnly('spaces:write', 'the caller becomes the creator'),
    list: tenantOnly(
      'spaces:read',
      'lists and the tree show only the spaces the caller sees; the manager permission catalogue'
    ),
    read: space(
      'spaces:read',
      'see',
      'published spaces by visibility; drafts to the creator and managers; also members, managers, events, contacts, ' +
      'activity, analytics'
    ),
    edit: space('spaces:write', 'space:edit', 'PUT, PATCH, edit/discard, archive, delete, parents (on the parent)'),
    embed: space(
      'spaces:write',
      'space:edit',
      'the origins that may frame the public pages of its events (https, or http on localhost; at most 20)'
    ),
    publish: space('spaces:publish', 'space:publish'),
    unpublish: space(
      'spaces:publish',
      'space:publish',
      'back to draft: off the public directory (page and anonymous feed); seen again only by who manages it'
    ),
    members: space('spaces:write', 'space:members'),
    managers: space(
      'spaces:write',
      'space:managers',
      "a grant never exceeds the granter's own; nobody changes their own grant"
    ),
    events: space('spaces:write', 'space:events', 'and `event:edit` on every event linked or unlinked'),
    contacts: space('spaces:write', 'space:contacts', 'and the contact visible to the caller'),
    import_calendar: space(
      'events:write',
      'space:events',
      'an iCalendar file made into events and series linked to the space; `event:edit` on every event it updates (on ' +
        'the whole series for a series); `series:write` when it has recurring events'
    ),
    accept: invitee('spaces:read', "the caller's e-mail (token or stored profile) equal to the invited one")
  },
  rule: {
    create: tenantOnly(
      'automation:write',
      'an EVENT scope needs `automations:manage` on the event; the rule runs as its creator'
    ),
    catalogue: tenantOnly('automation:read', 'trigger and action types'),
    read: rule(
      'automation:read',
      'see',
      'EVENT rules only to who sees the event; webhook addresses in full only to who may manage the rule'
    ),
    write: rule('automation:write', 'manage', 'EVENT rules need `automations:manage` on the event'),
    execute: rule(
      'automation:execute',
      'manage',
      "the run targets the rule's own scope; the caller and the creator must both hold the action's grant"
    ),
    // what each automation action needs of the rule's creator (last writer) on the target event: the
    // same as the route doing the same thing (docs/automation.md, "Whom a rule acts as")
    act_transition: event('events:write', 'event:edit', 'action `transition`, as POST /events/{id}/transition'),
    act_activity: event('events:write', 'event:edit', 'action `activity`, as POST /events/{id}/activity'),
    act_attendee_status: event(
      'events:write',
      'attendees:write',
      'actions `set_attendee_status` and `mark_no_shows`, as PATCH /events/{id}/attendees and POST …/no-shows'
    ),
    act_notify_attendees: event(
      'events:read',
      'attendees:read',
      'action `notify` to attendees (their addresses are read)'
    ),
    act_notify: event('events:read', 'see', 'action `notify` to the managers or the creator'),
    act_invite: event(
      'events:write',
      'attendees:write',
      'action `send_invitations`, as POST /events/{id}/invitations'
    )
  },
  execution: {
    read: rule('automation:read', 'see', 'trigger payloads and results only to who may manage the rule'),
    retry: rule(
      'automation:execute',
      'manage',
      'failed executions only, each once; as a manual run, the caller must see the target event and hold the grants ' +
      'of the actions of the version it runs'
    )
  },
  attendee: {
    read: event('events:read', 'attendees:read'),
    write: event('events:write', 'attendees:write', 'add, change, remove, bulk: every row of a bulk request'),
    checkin: event('events:write', 'attendees:checkin'),
    invite: event(
      'events:write',
      'attendees:write',
      "invitation mails to invited attendees, a guest's new link; the link itself only ever leaves by mail"
    )
  },
  manager: {
    catalogue: tenantOnly('events:read', 'the event manager permissions and role bundles'),
    pending: invitee('events:read', "the caller's own pending invitations (events and spaces)"),
    read: event('events:read', 'see', 'invitee e-mails only to holders of `managers:manage`'),
    grant: event(
      'events:write',
      'managers:manage',
      "a grant never exceeds the granter's own; nobody changes their own grant; " +
      'series-level grants need series-level rights'
    ),
    accept: invitee('events:read', "the caller's e-mail (token or stored profile) equal to the invited one")
  },
  cover: {
    read: event(
      'events:read',
      'see',
      "served with nosniff and a sandboxing CSP; keys are the service's own, checked against tenant and event"
    ),
    write: event(
      'events:write',
      'event:edit',
      'never a storage key from a client; an object still referred to is never deleted'
    )
  },
  link: {
    read: event('events:read', 'see', 'links, milestones, documents, attachments, activity'),
    write: event(
      'events:write',
      'links:manage',
      'milestones `milestones:manage`, documents `documents:manage`, attachments `attachments:manage`'
    )
  },
  notification: {
    read: tenantOnly(
      'tenant:admin',
      "the tenant's notification outbox: status, recipient, subject and the reason of a failure, never the text"
    )
  },
  webhook: {
    read: tenantOnly('tenant:admin', 'subscriptions and their delivery log; never a secret after creation or rotation'),
    write: tenantOnly(
      'tenant:admin',
      'create, change, delete, rotate the secret, ping, redeliver; the URL must be https and public unless ' +
      'AUTOMATION_WEBHOOK_ALLOW lists it'
    )
  },
  // calendar feed tokens: the caller's own (another's answers 404); a feed read with one sees what its user sees
  feed: {
    create: tenantOnly(
      'events:read',
      'a space token needs the caller to see the space; the feed re-checks it at every fetch, as its user sees it now'
    ),
    read: tenantOnly('events:read', "the caller's own live tokens, never the token itself"),
    revoke: tenantOnly('events:read', "the caller's own tokens (404 otherwise)"),
    rotate: tenantOnly('events:read', "the caller's own tokens (404 otherwise); the old token stops at once")
  },
  // the tenant's guest settings; what a guest does with their own link is no member's action (docs/guests.md)
  guest: {
    settings: tenantOnly('events:read', "the tenant's default language of guest texts"),
    configure: tenantOnly('tenant:admin', "sets the tenant's default language of guest texts")
  },
  // machines' accounts and their API keys (docs/api-keys.md); a key acts with its account's role within its scopes
  service_account: {
    read: tenantOnly('tenant:admin', 'service accounts and their keys; never a key itself after creation or rotation'),
    write: tenantOnly(
      'tenant:admin',
      'create, change (name, role, scopes, disabled), delete (revokes every key); scopes within the role'
    ),
    keys: tenantOnly(
      'tenant:admin',
      'create (shown once), rotate (the old key works until the overlap ends), revoke (refused at once)'
    )
  },
  // the tenant audit log (docs/audit.md): written by every change, read by tenant admins only
  audit: {
    read: tenantOnly('tenant:admin', 'every entry of the tenant, with filters; values of personal data only as hashes'),
    export: tenantOnly('tenant:admin', 'the same entries as JSON Lines or CSV, streamed'),
    verify: tenantOnly('tenant:admin', 'walks the hash chain from its start to its head')
  },
  // a user of the tenant as a data subject (docs/privacy.md)
  user: {
    export: tenantOnly('events:read', 'what the service holds about a user (GDPR article 15): the user themself or a ' +
      'tenant admin (404 for another user)')
  }
} as const satisfies Record<ResourceKind, Record<string, PolicyRow>>

export type ActionOf<K extends ResourceKind> = keyof typeof POLICY[K] & string

/** The policy row of an action; throws on an unknown pair, so a typo cannot silently allow. */
export function policyOf<K extends ResourceKind> (kind: K, action: ActionOf<K>): PolicyRow {
  const row = (POLICY[kind] as Record<string, PolicyRow | undefined>)[action]
  if (row === undefined) throw new Error(`no policy for ${kind}:${action}`)
  return row
}

/**
 * The route hook of a policy row: checks the row's tenant permission before the body is read, and
 * names the row in the route table (`x-policy` in OpenAPI), so every write says what it enforces.
 *
 * @example
 *   app.patch('/api/v1/events/:id', operation('patch-event', 'Merge-patch an event', {
 *     params: EventParams, body: PatchEventBody, response: { 200: Event }
 *   }, requirePolicy('event', 'edit')), handler)
 */
export function requirePolicy<K extends ResourceKind> (kind: K, action: ActionOf<K>): onRequestAsyncHookHandler {
  return requirePermission(policyOf(kind, action).tenant, `${kind}:${action}`)
}

function grantText (g: Grant): string {
  switch (g.on) {
    case 'contact': return g.who === 'owner' ? 'owner' : 'sees the contact'
    case 'event': return g.permission === 'see' ? 'sees the event' : `\`${g.permission}\` on the event`
    case 'series': return `\`${g.permission}\` on the series`
    case 'space': return g.permission === 'see' ? 'sees the space' : `\`${g.permission}\` on the space`
    case 'rule': return g.permission === 'see' ? 'sees the rule' : 'may manage the rule'
    case 'invite': return 'holds the invite token'
    case 'none': return '—'
  }
}

/** The policy as the Markdown table of docs/authorization.md. */
export function policyMarkdown (): string {
  const lines = [
    '| resource | action | tenant permission | grant on the resource (or tenant admin) | also |',
    '|---|---|---|---|---|'
  ]
  for (const kind of RESOURCE_KINDS) {
    for (const [action, row] of Object.entries(POLICY[kind]) as Array<[string, PolicyRow]>) {
      lines.push(`| ${kind} | ${action} | \`${row.tenant}\` | ${grantText(row.grant)} | ${row.also ?? ''} |`)
    }
  }
  return lines.join('\n')
}

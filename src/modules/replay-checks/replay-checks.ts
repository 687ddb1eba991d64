/**
 * How an `Idempotency-Key` replay re-checks its caller (src/platform/http/idempotency.ts, which is given
 * `replayCheckOf`): a POST claiming the key in a transaction of its own re-checks its policy row (`requirePolicy`):
 * the tenant permission, then the grant on the resource its path names, with that resource's own resolvers (404 when
 * the caller no longer sees it, 403 when they see it without the grant). A POST whose policy this cannot re-check is
 * refused when it is registered.
 */
import type { RouteOptions } from 'fastify'
import { declaredPolicy } from '../../platform/auth/permissions.ts'
import { routeAuthMode } from '../../platform/auth/plugin.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import type { ReplayCheck } from '../../platform/http/idempotency.ts'
import { eventRuleForRun, findRuleForRead, findRuleForRun } from '../automation/index.ts'
import { canManage as ownsContact, findVisible as findVisibleContact } from '../contacts/index.ts'
import { type EventPermission, findEventForRead, hasEventPermission } from '../events/index.ts'
import { hasSeriesPermission, seriesOfRow } from '../series/index.ts'
import { canManageSpace, findVisibleSpace } from '../spaces/index.ts'
import { policyOf, type Grant, type ResourceKind } from '../policy/index.ts'

/**
 * POSTs whose policy grants on a resource their path does not name (the body names it, or the request creates
 * it): their replay re-checks the tenant permission, and here is why that is enough. A new route of that kind is
 * refused at registration until it is listed here.
 */
const NAMED_BY_BODY: Readonly<Record<string, string>> = {
  '/api/v1/events/with-series': 'it creates the event and its series, whose creator the caller is, for good',
  '/api/v1/contacts/upsert': 'the body names the contacts: the answer holds the rows the caller wrote, as written then',
  '/api/v1/contacts/import': 'the body names the contacts: the answer holds the rows the caller wrote, as written then'
}

/**
 * Rows whose routes ask for the event permission of their sub-resource rather than the one the row names
 * (link:write: milestones, documents, attachments and links each have theirs): a replay accepts any of them, so
 * it never refuses what the route allows.
 */
const EVENT_PERMISSIONS_OF: Readonly<Record<string, readonly EventPermission[]>> = {
  'link:write': ['links:manage', 'milestones:manage', 'documents:manage', 'attachments:manage']
}

type ResourceGrant = Exclude<Grant, { on: 'none' | 'invite' }>

/** The path parameter naming the resource a grant is on (the event of `/events/{id}/…`), if the path has it. */
function resourceParam (url: string, on: ResourceGrant['on']): string | undefined {
  switch (on) {
    case 'event':
    case 'series':
      return /^\/api\/v1\/events\/:event_id\//.test(url)
        ? 'event_id'
        : /^\/api\/v1\/events\/:id(\/|$)/.test(url) ? 'id' : undefined
    case 'space': return /^\/api\/v1\/spaces\/:id(\/|$)/.test(url) ? 'id' : undefined
    case 'contact': return /^\/api\/v1\/contacts\/:id(\/|$)/.test(url) ? 'id' : undefined
    case 'rule': return /\/:rule_id(\/|$)/.test(url) ? 'rule_id' : undefined
  }
}

/**
 * The grant of a policy row, checked on the resource of the path as the module's resolvers check it: 404 when
 * the caller no longer sees it, 403 when they see it without the grant. Read only: nothing is locked.
 */
function grantCheck (policy: string, grant: ResourceGrant, url: string, param: string): ReplayCheck {
  switch (grant.on) {
    case 'event': {
      const any = grant.permission === 'see' ? [] : EVENT_PERMISSIONS_OF[policy] ?? [grant.permission]
      return async (trx, auth, params) => {
        const event = await findEventForRead(trx, auth, Number(params[param]), { includeDraftClones: true })
        for (const p of any) if (await hasEventPermission(trx, auth, event, p)) return
        if (any.length > 0) throw error403Forbidden(`missing event permission ${any.join(' or ')}`)
      }
    }
    case 'series': {
      const permission = grant.permission
      return async (trx, auth, params) => {
        const row = await findEventForRead(trx, auth, Number(params[param]), { includeDraftClones: true })
        const occurrence = row.published_id === null ? row : await findEventForRead(trx, auth, row.published_id)
        const series = await seriesOfRow(trx, auth.tenantId, occurrence, false)
        if (!(await hasEventPermission(trx, auth, row, permission)) ||
          !(await hasSeriesPermission(trx, auth, series, permission))) {
          throw error403Forbidden(`missing series permission ${permission}`)
        }
      }
    }
    case 'space': {
      const permission = grant.permission
      return async (trx, auth, params) => {
        const space = await findVisibleSpace(trx, auth, Number(params[param]))
        if (space === undefined) throw error404NotFound('space not found')
        if (permission !== 'see' && !(await canManageSpace(trx, auth, space, permission))) {
          throw error403Forbidden(`missing space permission ${permission}`)
        }
      }
    }
    case 'contact': {
      const who = grant.who
      return async (trx, auth, params) => {
        const contact = await findVisibleContact(trx, auth, String(params[param]))
        if (contact === undefined) throw error404NotFound('contact not found')
        if (who === 'owner' && !ownsContact(contact, auth)) {
          throw error403Forbidden('only the owner or an admin may change this contact')
        }
      }
    }
    case 'rule': {
      // the resolvers of the rule routes: an event's automation, or a rule the caller may see (and run)
      const ofEvent = /^\/api\/v1\/events\/:id\//.test(url)
      const permission = grant.permission
      return async (trx, auth, params) => {
        const ruleId = String(params[param])
        if (ofEvent) await eventRuleForRun(trx, auth, Number(params.id), ruleId)
        else if (permission === 'manage') await findRuleForRun(trx, auth, ruleId)
        else await findRuleForRead(trx, auth, ruleId)
      }
    }
  }
}

/**
 * The re-check of a replay of a POST claiming in a transaction of its own, from its policy hook (`requirePolicy`):
 * the row's tenant permission, then its grant on the resource the path names. Throws (refusing the route) when
 * the route declares no policy, or when its grant is on a resource its path does not name and NAMED_BY_BODY
 * does not say why the tenant permission is enough.
 */
export function replayCheckOf (route: RouteOptions): ReplayCheck {
  const url = route.url
  const policy = declaredPolicy(route.onRequest)
  if (policy === undefined) {
    // no caller, so no key is ever claimed (the identity provider's webhook)
    if (routeAuthMode(url, route.config?.auth) === 'none') return async () => {}
    throw new Error(
      `POST ${url} declares no policy (requirePolicy): an Idempotency-Key replay could not re-check its caller`
    )
  }
  const [kind = '', action = ''] = policy.split(':')
  const row = policyOf(kind as ResourceKind, action as never)
  const tenant: ReplayCheck = async (_trx, auth) => {
    if (!auth.permissions.has(row.tenant)) throw error403Forbidden(`missing permission ${row.tenant}`)
  }
  const grant = row.grant
  if (grant.on === 'none' || grant.on === 'invite') return tenant
  const param = resourceParam(url, grant.on)
  if (param === undefined) {
    if (NAMED_BY_BODY[url] !== undefined) return tenant
    throw new Error(
      `POST ${url} (${policy}): its path names no ${grant.on} whose grant an Idempotency-Key replay could re-check; ` +
      'name it in the path, claim the key in the transaction, or say in NAMED_BY_BODY ' +
      '(replay-checks/replay-checks.ts) why the ' +
      'tenant permission is enough'
    )
  }
  const resource = grantCheck(policy, grant, url, param)
  return async (trx, auth, params) => {
    await tenant(trx, auth, params)
    await resource(trx, auth, params)
  }
}

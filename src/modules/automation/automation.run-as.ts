/**
 * Whom automation acts as (docs/automation.md, "Whom a rule acts as"): a rule acts with the rights
 * of its last writer, never with the service's rights over the tenant. This file builds that
 * subject (an `AuthContext` as a request would have), maps each action to the event permission
 * it needs, and decides who may see a rule's secrets and execution details.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import { effectiveRole, permissionsOf, ROLES, type Permission } from '../../platform/auth/permissions.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { type EventPermission, findEventForRead, hasEventPermission, isTenantAdmin } from '../events/index.ts'
import type { RuleWriter } from './automation.repository.ts'
import { type ActionOf, policyOf } from '../policy/index.ts'
import type { ExecutionRow, RuleAction, RuleRow } from './automation.table.ts'

/** The writer of a rule, stored on it: the rule then acts as them. Only known role names are kept. */
export function writerOf (auth: AuthContext): RuleWriter {
  return {
    kind: 'user',
    id: auth.userId,
    orgId: auth.orgId,
    roles: (ROLES as readonly string[]).filter(r => auth.roles.includes(r))
  }
}

/** The subject a rule acts as: its creator (last writer) with the roles and organization stored on the rule. */
export function subjectOf (
  rule: Pick<RuleRow, 'tenant_id' | 'creator_id' | 'creator_roles' | 'org_id'>,
  email: string | null
): AuthContext {
  const roles = [...rule.creator_roles]
  return {
    userId: rule.creator_id,
    tenantId: rule.tenant_id,
    email,
    orgId: rule.org_id,
    roles,
    effectiveRole: effectiveRole(roles),
    permissions: new Set(permissionsOf(roles)),
    exp: 0
  }
}

export interface ActionNeeds {
  /** the tenant permission a request doing the same would need */
  tenant: Permission
  /** the event permission on the target event; undefined = seeing the event is enough */
  event?: EventPermission
  /** what the action does, for "the rule's creator may not …" */
  verb: string
}

/** The policy row of each event action (src/modules/policy/policy.ts); webhooks name no event. */
const ACTION_POLICY: Record<string, { action: ActionOf<'rule'>, verb: string } | undefined> = {
  transition: { action: 'act_transition', verb: 'change the state of' },
  activity: { action: 'act_activity', verb: 'add activity to' },
  set_attendee_status: { action: 'act_attendee_status', verb: 'change attendees of' },
  mark_no_shows: { action: 'act_attendee_status', verb: 'mark the no-shows of' },
  send_invitations: { action: 'act_invite', verb: 'send the invitations of' }
}

/**
 * What an action needs of the subject on its target event, read from the policy table: the tenant
 * permission and the event permission (undefined = seeing the event is enough).
 */
export function actionNeeds (a: RuleAction): ActionNeeds | undefined {
  const entry =
    a.type === 'notify'
      ? a.to === 'attendees'
        ? { action: 'act_notify_attendees' as const, verb: 'notify the attendees of' }
        : { action: 'act_notify' as const, verb: 'notify about' }
      : ACTION_POLICY[a.type]
  if (entry === undefined) return undefined
  const row = policyOf('rule', entry.action)
  if (row.grant.on !== 'event') throw new Error(`policy rule:${entry.action} must name an event grant`)
  return {
    tenant: row.tenant,
    ...(row.grant.permission !== 'see' ? { event: row.grant.permission } : {}),
    verb: entry.verb
  }
}

/**
 * Whether the caller may manage a rule, and so see its webhook URLs and execution details: tenant
 * admins, the rule's creator (last writer), and for EVENT rules holders of `automations:manage` on
 * the event.
 */
export async function canManageRule (
  trx: Tx,
  auth: AuthContext,
  rule: Pick<RuleRow, 'creator_id' | 'scope' | 'scope_id'>
): Promise<boolean> {
  if (isTenantAdmin(auth) || rule.creator_id === auth.userId) return true
  if (rule.scope !== 'EVENT' || rule.scope_id === null) return false
  const event = await findEventForRead(trx, auth, Number(rule.scope_id)).catch(() => undefined)
  return event !== undefined && (await hasEventPermission(trx, auth, event, 'automations:manage'))
}

/**
 * The wire shape of an execution; without `full`, the trigger payload, condition and action results and the error are
 * withheld.
 */
export function executionView (row: ExecutionRow, full: boolean) {
  const base = {
    ...row,
    trigger: row.trigger_payload,
    condition_results: row.condition_results as Array<Record<string, unknown>> | null,
    action_results: row.action_results as Array<Record<string, unknown>> | null,
    redacted: !full
  }
  if (full) return base
  return { ...base, trigger: {}, conditions_met: null, condition_results: null, action_results: null, error: null }
}

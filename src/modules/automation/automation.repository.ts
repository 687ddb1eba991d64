/**
 * All SQL of automation rules: the rules, their version snapshots, the rules the dispatcher and the
 * scheduler look for, and the scheduler's last fired cron slot. Every query names its tenant, except
 * the scheduler's, which read every tenant's rules (system transaction). Executions:
 * automation.executions.repository.ts; the outbox, events, attendees and contacts the engine reads
 * and changes: automation.outbox.repository.ts, automation.targets.repository.ts; the job queue's
 * own statements: automation.queue.repository.ts.
 */
import { sql, type Insertable, type Updateable } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { eventVisibleTo } from '../events/index.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listPage } from '../../platform/db/list-page.ts'
import { selectRows } from '../../platform/db/match.ts'
import { listScope, pageWindow, type KeyColumn, type PageParams } from '../../platform/http/cursor.ts'
import { CRON_TRIGGER, RELATIVE_TRIGGERS } from './automation.catalogue.ts'
import type {
  AutomationRulesTable, RuleAction, RuleRow, RuleSchedule, RuleScope, RuleVersionRow
} from './automation.table.ts'

const jsonb = (v: unknown) => JSON.stringify(v)

export interface RuleValues {
  name: string
  description: string | null
  enabled: boolean
  priority: number
  scope: RuleScope
  scope_id: string | null
  schedule: RuleSchedule
  conditions: Record<string, unknown>
  actions: RuleAction[]
}

function toColumns (v: Partial<RuleValues>): Updateable<AutomationRulesTable> {
  const out: Updateable<AutomationRulesTable> = {}
  if (v.name !== undefined) out.name = v.name
  if (v.description !== undefined) out.description = v.description
  if (v.enabled !== undefined) out.enabled = v.enabled
  if (v.priority !== undefined) out.priority = v.priority
  if (v.scope !== undefined) out.scope = v.scope
  if (v.scope_id !== undefined) out.scope_id = v.scope_id
  if (v.schedule !== undefined) { out.schedule = jsonb(v.schedule); out.event_type = v.schedule.event_type }
  if (v.conditions !== undefined) out.conditions = jsonb(v.conditions)
  if (v.actions !== undefined) out.actions = jsonb(v.actions)
  return out
}

/** Whom a rule acts as: its last writer (docs/automation.md, "Whom a rule acts as"). */
export interface RuleWriter { kind: string, id: string, orgId: string | null, roles: string[] }

export async function insertRule (trx: Tx, tenantId: string, creator: RuleWriter, v: RuleValues): Promise<RuleRow> {
  const values = {
    ...toColumns(v),
    tenant_id: tenantId,
    org_id: creator.orgId,
    created_by_kind: creator.kind,
    creator_id: creator.id,
    creator_roles: creator.roles
  } as Insertable<AutomationRulesTable>
  const row = await trx.insertInto('automation_rules').values(values).returningAll().executeTakeFirstOrThrow()
  await snapshotRules(trx, tenantId, [row.id])
  return row
}

/**
 * Keeps the current version of each rule `ids` names as an immutable snapshot (what it runs, whom it acts as). Every
 * statement that creates a version of a rule calls it in the same transaction. The rules are read, then written as
 * multi-row VALUES: an INSERT … SELECT is a COPY into the shards on Citus, which row-level security refuses.
 */
export async function snapshotRules (trx: Tx, tenantId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  const rules = await trx.selectFrom('automation_rules')
    .select(['id', 'version', 'name', 'event_type', 'schedule', 'conditions', 'actions', 'scope', 'scope_id',
      'created_by_kind', 'creator_id', 'creator_roles', 'org_id'])
    .where('tenant_id', '=', tenantId).where(sql<boolean>`id = any(${[...ids]}::uuid[])`)
    .orderBy('id')
    .execute()
  for (const chunk of rowChunks(rules, 14)) {
    await trx.insertInto('automation_rule_versions')
      .values(chunk.map(r => ({
        tenant_id: tenantId,
        rule_id: r.id,
        version: r.version,
        name: r.name,
        event_type: r.event_type,
        // JSON as text: an array would otherwise travel as a PostgreSQL array
        schedule: JSON.stringify(r.schedule),
        conditions: JSON.stringify(r.conditions),
        actions: JSON.stringify(r.actions),
        scope: r.scope,
        scope_id: r.scope_id,
        created_by_kind: r.created_by_kind,
        creator_id: r.creator_id,
        creator_roles: r.creator_roles,
        org_id: r.org_id
      })))
      .onConflict(oc => oc.columns(['tenant_id', 'rule_id', 'version']).doNothing())
      .execute()
  }
}

/** The snapshot of one version of a rule. */
export async function findRuleVersion (
  trx: Tx,
  tenantId: string,
  ruleId: string,
  version: number
): Promise<RuleVersionRow | undefined> {
  return await selectRows(trx, 'automation_rule_versions', { tenant_id: tenantId, rule_id: ruleId, version })
    .selectAll()
    .executeTakeFirst()
}

/** Replaces the given fields; the rule then acts as `writer`. Enabling it clears `disabled_reason`. */
export async function updateRule (
  trx: Tx,
  tenantId: string,
  id: string,
  v: Partial<RuleValues>,
  writer: RuleWriter
): Promise<RuleRow> {
  const row = await trx
    .updateTable('automation_rules')
    .set({
      ...toColumns(v),
      org_id: writer.orgId,
      created_by_kind: writer.kind,
      creator_id: writer.id,
      creator_roles: writer.roles,
      ...(v.enabled === true ? { disabled_reason: null } : {}),
      version: sql`version + 1`,
      updated_at: sql`now()`
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
  await snapshotRules(trx, tenantId, [id])
  return row
}

/**
 * Disables a rule, saying why (its creator may no longer act; it failed too often). Only an
 * enabled rule is changed: answers whether this call disabled it.
 */
export async function disableRule (trx: Tx, tenantId: string, id: string, reason: string): Promise<boolean> {
  const changed = await trx.updateTable('automation_rules')
    .set({ enabled: false, disabled_reason: reason, version: sql`version + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId).where('id', '=', id).where('enabled', '=', true)
    .returning('id').executeTakeFirst()
  if (changed !== undefined) await snapshotRules(trx, tenantId, [id])
  return changed !== undefined
}

export async function findRule (trx: Tx, tenantId: string, id: string, lock = false): Promise<RuleRow | undefined> {
  return await trx.selectFrom('automation_rules').selectAll()
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .$if(lock, qb => qb.forUpdate())
    .executeTakeFirst()
}

export async function deleteRule (trx: Tx, tenantId: string, id: string): Promise<void> {
  await trx.deleteFrom('automation_rules').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

export interface RuleFilter {
  scope?: RuleScope | undefined
  scopeId?: string | undefined
  eventType?: string | undefined
  enabled?: boolean | undefined
}

const RULE_KEYS: KeyColumn[] = [{ ref: 'created_at', dir: 'desc', type: 'time' },
  { ref: 'id', dir: 'asc', type: 'uuid' }]

/**
 * Rules of a tenant, newest first. With `auth`, rules of events the caller cannot see are left
 * out (tenant admins see all).
 */
export async function listRules (trx: Tx, tenantId: string, f: RuleFilter, q: PageParams, auth?: AuthContext) {
  const window = pageWindow(q, listScope('rules', { ...f }), RULE_KEYS)
  const base = trx
    .selectFrom('automation_rules')
    .where('tenant_id', '=', tenantId)
    .$if(auth !== undefined, qb =>
      qb.where(eb =>
        eb.or([
          eb('scope', '!=', 'EVENT'),
          eb('scope_id', 'is', null),
          eb(
            'scope_id',
            'in',
            eb
              .selectFrom('events')
              .select(sql<string>`events.id::text`.as('id'))
              .where(e => eventVisibleTo(e, auth as AuthContext))
          )
        ])
      )
    )
    .$if(f.scope !== undefined, qb => qb.where('scope', '=', f.scope ?? 'GLOBAL'))
    .$if(f.scopeId !== undefined, qb => qb.where('scope_id', '=', f.scopeId ?? ''))
    .$if(f.eventType !== undefined, qb => qb.where('event_type', '=', f.eventType ?? ''))
    .$if(f.enabled !== undefined, qb => qb.where('enabled', '=', f.enabled ?? true))
  return await listPage(trx, base, qb => qb.selectAll(), RULE_KEYS, window)
}

// ---- the dispatcher's and the scheduler's rules

/** A tenant's enabled rules that one of the trigger types fires, in the order they run. */
export async function enabledRulesOfTypes (trx: Tx, tenantId: string, types: string[]): Promise<RuleRow[]> {
  return await selectRows(trx, 'automation_rules', { tenant_id: tenantId, enabled: true })
    .selectAll()
    .where('event_type', 'in', types)
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .orderBy('id')
    .execute()
}

/** Every tenant's enabled cron rules, each with the last slot it fired (null before the first). */
export async function enabledCronRules (trx: Tx) {
  return await trx
    .selectFrom('automation_rules as r')
    .leftJoin('automation_schedule_state as s', join =>
      join.onRef('s.tenant_id', '=', 'r.tenant_id').onRef('s.rule_id', '=', 'r.id')
    )
    .selectAll('r')
    .select('s.last_slot')
    .where('r.enabled', '=', true)
    .where('r.event_type', '=', CRON_TRIGGER)
    .execute()
}

/** Records the cron slot a rule last fired. */
export async function saveLastSlot (trx: Tx, tenantId: string, ruleId: string, slot: Date): Promise<void> {
  // the SET takes the inserted row's values (`excluded`), no function: Citus refuses now() there
  await trx
    .insertInto('automation_schedule_state')
    .values({ tenant_id: tenantId, rule_id: ruleId, last_slot: slot, updated_at: sql`now()` })
    .onConflict(oc =>
      oc
        .columns(['tenant_id', 'rule_id'])
        .doUpdateSet(eb => ({ last_slot: eb.ref('excluded.last_slot'), updated_at: eb.ref('excluded.updated_at') }))
    )
    .execute()
}

/** Every tenant's enabled rules of times relative to events (event.starts_in, event.ends_in). */
export async function enabledRelativeRules (trx: Tx): Promise<RuleRow[]> {
  return await trx.selectFrom('automation_rules').selectAll()
    .where('enabled', '=', true).where('event_type', 'in', [...RELATIVE_TRIGGERS])
    .execute()
}

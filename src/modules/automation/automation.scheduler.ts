/**
 * The scheduler of the automation engine: cron slots and times relative to events → executions and their jobs.
 */
import { Cron } from 'croner'
import { withSystem } from '../../platform/db/tenant.ts'
import { RELATIVE_GRACE_MINUTES } from '../../platform/retention.ts'
import { CRON_TRIGGER } from './automation.catalogue.ts'
import * as repo from './automation.repository.ts'
import * as targets from './automation.targets.repository.ts'
import { subjectOf } from './automation.run-as.ts'
import { asTheyAreNow } from '../disclosure/index.ts'
import type { RuleSchedule } from './automation.table.ts'
import { type Engine, enqueueExecution } from './automation.engine.ts'

/** The latest cron slot in (after, now], or undefined. */
export function latestSlot (schedule: RuleSchedule, after: Date, now: Date): Date | undefined {
  const cron = new Cron(schedule.cron_expression ?? '', { timezone: schedule.timezone ?? 'UTC', paused: true })
  try {
    let slot = cron.nextRun(after)
    if (slot === null || slot > now) return undefined
    // skip ahead over missed slots: only the latest fires
    for (let i = 0; i < 10_000; i++) {
      const next = cron.nextRun(slot)
      if (next === null || next > now) return slot
      slot = next
    }
    return cron.nextRun(new Date(now.getTime() - 60_000 * 60 * 24 * 366)) ?? undefined
  } finally {
    cron.stop()
  }
}

export interface ScheduleResult { cron: number, relative: number }

/**
 * Fires due time triggers at `now`: for each enabled schedule.cron rule, the latest slot since
 * the last one fired (or since the rule was created); for each event.starts_in / event.ends_in
 * rule, every published event of its scope whose start (end) minus the offset has come, until an
 * hour after the start (end) itself. Idempotent per (rule, slot or event moment).
 */
export async function tickSchedules (engine: Engine, now: Date = engine.now()): Promise<ScheduleResult> {
  await engine.queue.ready()
  return await withSystem(engine.db, async (trx) => {
    const result: ScheduleResult = { cron: 0, relative: 0 }
    const cronRules = await repo.enabledCronRules(trx)
    for (const rule of cronRules) {
      const slot = latestSlot(rule.schedule, rule.last_slot ?? rule.created_at, now)
      if (slot === undefined) continue
      const created = await enqueueExecution(trx, engine, rule.tenant_id, rule, {
        triggerKey: `cron:${slot.toISOString()}`,
        triggerType: CRON_TRIGGER,
        payload: {
          rule_id: rule.id,
          scheduled_for: slot.toISOString(),
          cron_expression: rule.schedule.cron_expression,
          timezone: rule.schedule.timezone,
          ...(rule.scope === 'EVENT' && rule.scope_id !== null ? { event_id: Number(rule.scope_id) } : {})
        },
        depth: 0
      })
      await repo.saveLastSlot(trx, rule.tenant_id, rule.id, slot)
      if (created !== undefined) result.cron++
    }

    for (const rule of await repo.enabledRelativeRules(trx)) {
      const column = rule.event_type === 'event.starts_in' ? 'start_dt' : 'end_dt'
      const offset = rule.schedule.offset_minutes ?? 0
      const events = await targets.dueEvents(trx, {
        rule,
        subject: await asTheyAreNow(trx, subjectOf(rule, null)),
        column,
        offsetMinutes: offset,
        graceMinutes: RELATIVE_GRACE_MINUTES,
        now
      })
      for (const e of events) {
        const at = (column === 'start_dt' ? e.start_dt : e.end_dt) as Date
        const created = await enqueueExecution(trx, engine, rule.tenant_id, rule, {
          triggerKey:
            `${rule.event_type === 'event.starts_in' ? 'starts_in' : 'ends_in'}:${e.id}:${at.toISOString()}:${offset}`,
          triggerType: rule.event_type,
          payload: {
            event_id: e.id,
            template: e.template,
            template_version: e.template_version,
            state: e.state,
            title: e.title,
            status: e.status,
            [column]: at.toISOString(),
            offset_minutes: offset
          },
          depth: 0
        })
        if (created !== undefined) result.relative++
      }
    }
    return result
  })
}

// ---- runner

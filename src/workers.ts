/**
 * Every background loop of the service, started from here and only when `config.workers` (WORKERS) is true:
 *
 * 1. automation: the job queue's workers (runs of rules) and the dispatcher and scheduler beside them
 *    (`startWorkers` of automation.workers.ts), tried again every WORKER_RETRY_MS while the database is away;
 * 2. webhook subscriptions: dispatch and delivery (`startWebhookWorker` of webhooks.delivery.ts);
 * 3. notifications: delivery of the notification outbox (src/platform/notifications/delivery.ts);
 * 4. series: the rolling windows of series that never end (`startSeriesWindows` of series.service.ts);
 * 5. the audit log: new entries sealed into their tenant's hash chain (src/platform/audit-chain.ts);
 * 6. retention: old rows pruned (src/platform/retention.ts), then the upkeep steps the modules register here.
 *
 * The engines the loops drive live in the app context (`ctx.engines`, made in app.ts), so tests drive them step by
 * step without starting any loop. Each loop stops when the app closes; retention is registered last, so it stops
 * before the database closes. docs/architecture.md, "Where background work starts".
 */
import type { FastifyInstance } from 'fastify'
import type { AppContext } from './platform/app-context.ts'
import { startNotificationDelivery } from './platform/notifications/delivery.ts'
import { startRetention, type UpkeepStep } from './platform/retention.ts'
import { pruneAudit, startAuditSealer } from './platform/audit-chain.ts'
import { startWorkers as startAutomationWorkers } from './modules/automation/index.ts'
import { readUnreadPhones } from './modules/contacts/index.ts'
import { compactListCounts } from './modules/events/index.ts'
import { startSeriesWindows } from './modules/series/index.ts'
import { startWebhookWorker } from './modules/webhooks/index.ts'

const WORKER_RETRY_MS = 5_000

/** The modules' upkeep steps, run after each retention pass. */
function upkeepSteps (ctx: AppContext): UpkeepStep[] {
  return [
    {
      // the event list's kept counts: their delta rows folded, so that a count reads one row per bucket
      done: 'retention: event list counts folded',
      unit: 'tenants',
      run: async (db, signal) => await compactListCounts(db, signal)
    },
    {
      // the tenant audit log's entries older than RETENTION_AUDIT, from the start of each chain (docs/audit.md)
      done: 'retention: audit entries deleted',
      unit: 'entries',
      run: async (db, signal) => {
        const keep = ctx.config.retention.audit
        return keep === null ? 0 : await pruneAudit(db, new Date(Date.now() - keep), signal)
      }
    },
    {
      // contacts written before their phone numbers were read (migration 0028)
      done: 'upkeep: phone numbers of older contacts read',
      unit: 'contacts',
      run: async (db, signal) => await readUnreadPhones(db, ctx.config.phoneDefaultRegion, signal)
    }
  ]
}

/** Starts every background loop of the app when `ctx.config.workers`; each stops when the app closes. */
export function startBackgroundWork (app: FastifyInstance, ctx: AppContext): void {
  if (!ctx.config.workers) return
  const log = app.log

  // 1. automation: the database may be away when the process starts; the API serves (and /ready says 503) while
  // the workers keep trying to start
  let stopAutomation: (() => Promise<void>) | undefined
  let retry: NodeJS.Timeout | undefined
  let closing = false
  const start = async (): Promise<void> => {
    try {
      stopAutomation = await startAutomationWorkers(ctx.engines.automation, log)
    } catch (err) {
      if (closing) return
      log.warn({ err }, `automation workers could not start; retrying in ${WORKER_RETRY_MS / 1000} s`)
      retry = setTimeout(() => { void start() }, WORKER_RETRY_MS)
    }
  }
  app.addHook('onReady', async () => { void start() })
  app.addHook('onClose', async () => {
    closing = true
    clearTimeout(retry)
    await stopAutomation?.()
  })

  // 2. webhook subscriptions
  const stopWebhooks = startWebhookWorker(ctx.engines.webhooks, log)
  app.addHook('onClose', async () => { await stopWebhooks() })

  // 3. notifications
  const notifications = startNotificationDelivery(ctx, { log })
  app.addHook('onClose', async () => { await notifications.stop() })

  // 4. series windows
  const stopSeries = startSeriesWindows(ctx.db, log)
  app.addHook('onClose', async () => { await stopSeries() })

  // 5. the audit log's chain: new entries sealed every few seconds
  const stopSealer = startAuditSealer(ctx.db, log)
  app.addHook('onClose', async () => { await stopSealer() })

  // 6. retention and upkeep, last
  const retention = startRetention(ctx.db, ctx.config.retention, log, undefined, upkeepSteps(ctx))
  app.addHook('onClose', async () => { await retention.stop() })
}

/**
 * The delivery loop of the notification outbox: every `intervalMs` it delivers what is due
 * (`deliverPendingNotifications`). Started by src/workers.ts when
 * `config.workers` is true and stopped when the app closes.
 */
import type { AppContext } from '../app-context.ts'
import type { FastifyBaseLogger } from 'fastify'
import { deliverPendingNotifications, type DeliveryResult, type NotificationSender } from './notifications.ts'
import { createNotificationSender } from './senders.ts'
import { countNotificationDeliveries } from '../metrics.ts'
import { TenantWorkError } from '../tenant-batches.ts'

export interface DeliveryLoop {
  readonly sender: NotificationSender
  /** one delivery pass now (also what the timer runs) */
  tick (): Promise<void>
  stop (): Promise<void>
}

export interface DeliveryOptions {
  log: FastifyBaseLogger
  sender?: NotificationSender
  intervalMs?: number
}

export function startNotificationDelivery (ctx: AppContext, options: DeliveryOptions): DeliveryLoop {
  const sender = options.sender ?? createNotificationSender(ctx.config, options.log)
  const intervalMs = options.intervalMs ?? 5_000
  let running: Promise<void> | undefined
  let stopped = false
  const isStopped = (): boolean => stopped
  const tick = async (): Promise<void> => {
    if (stopped || running !== undefined) return await running
    running = (async () => {
      try {
        // drain: keep going while full batches come back
        for (let i = 0; i < 20; i++) {
          const r = await deliverPendingNotifications(ctx.db, sender, { log: options.log })
          countNotificationDeliveries(r)
          if (r.sent + r.retried + r.failed + r.undeliverable < 50 || isStopped()) break
        }
      } catch (err) {
        // some tenant's transaction failed: the other tenants' deliveries were made and are counted
        if (err instanceof TenantWorkError) countNotificationDeliveries(err.result as DeliveryResult)
        options.log.error({ err }, 'notification delivery failed')
      } finally {
        running = undefined
      }
    })()
    await running
  }
  const timer = setInterval(() => { void tick() }, intervalMs)
  timer.unref()
  return {
    sender,
    tick,
    async stop () {
      stopped = true
      clearInterval(timer)
      await running
      await sender.close?.()
    }
  }
}

/**
 * The background workers of the automation engine, started by src/workers.ts: the job queue's workers run
 * executions; the dispatcher, the scheduler and the sweep of stale claims run every POLL_MS.
 */
import { TenantWorkError } from '../../platform/tenant-batches.ts'
import { QUEUE, type ExecutionJob } from './automation.queue.ts'
import { type Engine } from './automation.engine.ts'
import { type DispatchResult, dispatchOutbox } from './automation.dispatcher.ts'
import { tickSchedules } from './automation.scheduler.ts'
import { handleJob, sweepExecutions } from './automation.runner.ts'

export const POLL_MS = 2000

/** Starts the job worker, the outbox dispatcher and the scheduler; returns a stop function. */
export async function startWorkers (
  engine: Engine,
  log: { error: (obj: unknown, msg: string) => void }
): Promise<() => Promise<void>> {
  const boss = await engine.queue.ready()
  await boss.work<ExecutionJob>(QUEUE, { batchSize: 1, pollingIntervalSeconds: 2 }, async ([job]) => {
    if (job !== undefined) await handleJob(engine, job.data)
  })
  let busy = false
  let stopped = false
  let ticks = 0
  const timer = setInterval(() => {
    if (busy || stopped) return
    busy = true
    void (async () => {
      try {
        // rounds while dispatches find work; a tenant whose dispatch fails holds up neither the
        // other tenants (dispatchOutbox goes on without it) nor the scheduler
        for (let round = 0; round < 50; round++) {
          if (stopped) break
          let events: number
          try {
            events = (await dispatchOutbox(engine)).events
          } catch (err) {
            log.error({ err }, 'automation dispatch failed')
            events = err instanceof TenantWorkError ? (err.result as DispatchResult).events : 0
          }
          if (events === 0) break
        }
        if (!stopped) await tickSchedules(engine, engine.now())
        // pg-boss maintenance (expiring jobs of dead workers, archiving) and the sweep, about once a minute
        if (!stopped && ticks++ % 30 === 0) {
          await boss.maintain()
          await sweepExecutions(engine)
        }
      } catch (err) {
        log.error({ err }, 'automation scheduling failed')
      } finally {
        busy = false
      }
    })()
  }, POLL_MS)
  return async () => {
    stopped = true
    clearInterval(timer)
    await boss.offWork(QUEUE)
  }
}

/**
 * The domain events of an event and what hangs on it (milestones, attachments, covers, activity) written outside
 * the events service's `record` (src/platform/outbox.ts): aggregate type `event`, the caller as actor.
 */
import { domainEvents } from '../../platform/outbox.ts'

export const eventEvent = domainEvents<`event.${string}` | `milestone.${string}` | `attachment.${string}`>('event')

/** The same for what hangs on a whole series (series links): aggregate type `series`. */
export const seriesEvent = domainEvents<`series.${string}`>('series')

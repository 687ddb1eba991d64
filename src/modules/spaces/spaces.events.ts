/** The domain events of spaces (src/platform/outbox.ts): aggregate type `space`, the caller as actor. */
import { domainEvents } from '../../platform/outbox.ts'

export const spaceEvent = domainEvents<`space.${string}`>('space')

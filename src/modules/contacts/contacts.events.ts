/** The domain events of contacts (src/platform/outbox.ts): aggregate type `contact`, the caller as actor. */
import { domainEvents } from '../../platform/outbox.ts'

export const contactEvent =
  domainEvents<'contact.created' | 'contact.updated' | 'contact.deleted' | 'contact.merged'>('contact')

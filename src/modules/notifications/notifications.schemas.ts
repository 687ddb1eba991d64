import { Type, type Static } from '@sinclair/typebox'
import {
  DateTimeInput, model, Nullable, KeysetPageQuery, pagedBody, StringEnum, Timestamp
} from '../../platform/http/schema.ts'
import { NOTIFICATION_CHANNELS, NOTIFICATION_STATUSES } from '../../platform/notifications/notifications.ts'

/** A row of the notification outbox as an administrator sees it: never its text (it may hold an invite token). */
export const Notification = model('Notification', {
  id: Type.Integer({ description: 'Notification id' }),
  channel: Type.String({ description: 'email, push or sms' }),
  recipient: Type.String({
    description:
      'The address (email), the user id (push, sms), or `user:<id>` / `contact:<id>` when no address was known; ' +
      '`withheld` for the address of a contact the caller may not read (docs/security.md)'
  }),
  subject: Type.String(),
  kind: Nullable(
    Type.String({
      description:
        'What it is about: event.published, space.manager_invited, automation.message… (null for rows without one)'
    })
  ),
  priority: Type.String({ description: 'normal or high' }),
  status: StringEnum(NOTIFICATION_STATUSES, {
    description:
      'pending (waiting, or waiting for a retry), sent, failed (retries used up, ' +
      'or refused for good by the mail server), undeliverable (no address: never retried)'
  }),
  attempts: Type.Integer({ description: 'Delivery attempts so far' }),
  last_error: Nullable(
    Type.String({ description: 'Why the last attempt failed, or why the notification is undeliverable' })
  ),
  created_at: Timestamp(),
  sent_at: Nullable(Timestamp()),
  next_attempt_at: Nullable(Timestamp('When a pending notification whose attempt failed is tried again'))
})

export const PagedBodyNotification = pagedBody(Notification, 'PagedBodyNotification')

export const ListNotificationsQuery = Type.Intersect([KeysetPageQuery, Type.Object({
  status: Type.Optional(StringEnum(NOTIFICATION_STATUSES, { description: 'Only notifications in this status' })),
  channel: Type.Optional(StringEnum(NOTIFICATION_CHANNELS, { description: 'Only notifications of this channel' })),
  created_after: Type.Optional(DateTimeInput('Only notifications queued at or after this time')),
  created_before: Type.Optional(DateTimeInput('Only notifications queued before this time'))
})])
export type ListNotificationsQuery = Static<typeof ListNotificationsQuery>

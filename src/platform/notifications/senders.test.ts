import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { backoffSeconds, type Notification } from './notifications.ts'
import { createNotificationSender } from './senders.ts'

/** A notification to hand a sender, an e-mail unless `over` says otherwise. */
const notification = (over: Partial<Notification>): Notification => ({
  id: 1,
  tenantId: 't',
  channel: 'email',
  recipient: 'a@example.test',
  subject: 'Hi',
  body: 'x',
  priority: 'normal',
  payload: {},
  attempts: 0,
  ...over
})

void describe('notification senders', () => {
  const log = { lines: [] as object[], info (obj: object) { this.lines.push(obj) } }

  void it('logs by default and picks SMTP when SMTP_URL is set', async () => {
    const logging = createNotificationSender({ smtpUrl: undefined, baseUrl: 'https://collab.example.test' }, log)
    assert.equal(logging.name, 'log')
    await logging.send(notification({ body: 'secret token' }))
    assert.deepEqual(log.lines.at(-1), {
      notification_id: 1,
      tenant_id: 't',
      channel: 'email',
      recipient: 'a@example.test',
      subject: 'Hi',
      priority: 'normal'
    })
    const smtp = createNotificationSender(
      { smtpUrl: 'smtp://127.0.0.1:1', baseUrl: 'https://collab.example.test' },
      log
    )
    assert.equal(smtp.name, 'smtp')
    // channels without a provider go to the log, not to SMTP
    await smtp.send(notification({ id: 2, channel: 'sms', recipient: '+100', priority: 'high' }))
    assert.equal((log.lines.at(-1) as { channel: string }).channel, 'sms')
    await smtp.close?.()
  })

  void it('backs off 30 s, 2 min, 8 min, 32 min', () => {
    assert.deepEqual([1, 2, 3, 4].map(backoffSeconds), [30, 120, 480, 1920])
  })
})

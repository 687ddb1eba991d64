import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { backoffSeconds } from './notifications.ts'
import { createNotificationSender } from './senders.ts'

void describe('notification senders', () => {
  const log = { lines: [] as object[], info (obj: object) { this.lines.push(obj) } }

  void it('logs by default and picks SMTP when SMTP_URL is set', async () => {
    const logging = createNotificationSender({ smtpUrl: undefined, baseUrl: 'https://collab.example.test' }, log)
    assert.equal(logging.name, 'log')
    await logging.send({
      id: 1,
      tenantId: 't',
      channel: 'email',
      recipient: 'a@example.test',
      subject: 'Hi',
      body: 'secret token',
      priority: 'normal',
      payload: {},
      attempts: 0
    })
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
    await smtp.send({
      id: 2,
      tenantId: 't',
      channel: 'sms',
      recipient: '+100',
      subject: 'Hi',
      body: 'x',
      priority: 'high',
      payload: {},
      attempts: 0
    })
    assert.equal((log.lines.at(-1) as { channel: string }).channel, 'sms')
    await smtp.close?.()
  })

  void it('backs off 30 s, 2 min, 8 min, 32 min', () => {
    assert.deepEqual([1, 2, 3, 4].map(backoffSeconds), [30, 120, 480, 1920])
  })
})

/**
 * Notification senders: a logging sender (the default: development and tests), and an SMTP sender
 * (nodemailer) used when SMTP_URL is set. The SMTP sender delivers the `email` channel as a
 * plain-text and an HTML part (`renderMessage`, templates.ts), from SMTP_FROM, with links into
 * APP_URL; a calendar invitation as nodemailer's `icalEvent` (a `text/calendar; method=…` alternative,
 * which Outlook and Gmail read, and the same as an `invite.ics` attachment, which others read), an
 * unsubscribe link as the List-Unsubscribe header (no List-Unsubscribe-Post: the link opens a page of
 * the web app, it is no one-click endpoint); other channels (`push`, `sms`) have no provider yet
 * and are logged, so they do not pile up as pending.
 */
import { createRequire } from 'node:module'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config.ts'
import type { Notification, NotificationSender } from './notifications.ts'
import { renderMessage } from './templates.ts'

interface Log { info (obj: object, msg: string): void }

/** Writes each notification to the log (no content beyond subject and recipient). */
export function loggingSender (log: Log): NotificationSender {
  return {
    name: 'log',
    async send (n: Notification) {
      log.info(
        {
          notification_id: n.id,
          tenant_id: n.tenantId,
          channel: n.channel,
          recipient: n.recipient,
          subject: n.subject,
          priority: n.priority
        },
        'notification (logging sender)'
      )
    }
  }
}

export interface SmtpSenderOptions {
  /** smtp:// or smtps:// connection URL */
  url: string
  /** From address (SMTP_FROM; default no-reply@<host of BASE_URL>) */
  from: string
  /** the web app's public address that links point at (APP_URL; default BASE_URL) */
  appUrl: string
  /** for channels other than email */
  fallback: NotificationSender
}

export function smtpSender (options: SmtpSenderOptions): NotificationSender {
  // loaded only when SMTP is configured (it costs every start some 40 ms otherwise)
  const nodemailer = createRequire(import.meta.url)('nodemailer') as typeof import('nodemailer')
  const transport = nodemailer.createTransport(options.url)
  return {
    name: 'smtp',
    async send (n: Notification) {
      if (n.channel !== 'email') { await options.fallback.send(n); return }
      const mail = renderMessage(n, options.appUrl)
      await transport.sendMail({
        from: options.from,
        to: n.recipient,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        ...(mail.calendar !== undefined
          ? { icalEvent: { method: mail.calendar.method, content: mail.calendar.ics, filename: 'invite.ics' } }
          : {}),
        ...(mail.unsubscribeUrl !== undefined ? { list: { unsubscribe: mail.unsubscribeUrl } } : {}),
        ...(n.priority === 'high' ? { priority: 'high' as const } : {})
      })
    },
    async close () { transport.close() }
  }
}

/** The sender of a configuration: SMTP when SMTP_URL is set, the logging sender otherwise. */
export function createNotificationSender (
  config: Pick<Config, 'smtpUrl' | 'baseUrl'> & Partial<Pick<Config, 'appUrl' | 'smtpFrom'>>,
  log: FastifyBaseLogger | Log
): NotificationSender {
  const logging = loggingSender(log)
  if (config.smtpUrl === undefined) return logging
  const from = config.smtpFrom ?? `no-reply@${new URL(config.baseUrl).hostname}`
  return smtpSender({ url: config.smtpUrl, from, appUrl: config.appUrl ?? config.baseUrl, fallback: logging })
}

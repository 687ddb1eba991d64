/**
 * A real SMTP server for tests (smtp-server, on 127.0.0.1 and a free port, no TLS, no login) that keeps
 * every message it accepts, parsed (mailparser), with its envelope. For services in other processes:
 * give them `url` as SMTP_URL and look at `received`. It refuses the mailbox `refused@…` (550) and
 * any message to `spam@…` (554), for tests of refusals.
 *
 * @example
 *   const smtp = await startSmtpServer()
 *   … env SMTP_URL: smtp.url …
 *   await waitFor(() => smtp.to('kim@example.test').length > 0)
 *   await smtp.close()
 */
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export interface ReceivedMail {
  /** the envelope's MAIL FROM */
  from: string
  /** the envelope's RCPT TO addresses */
  to: string[]
  mail: ParsedMail
  receivedAt: number
}

export interface SmtpCatcher {
  /** `smtp://127.0.0.1:<port>` */
  readonly url: string
  /** every accepted message, in the order received */
  readonly received: ReceivedMail[]
  /** the messages whose envelope names `address` as a recipient */
  to (address: string): ReceivedMail[]
  close (): Promise<void>
}

export async function startSmtpServer (): Promise<SmtpCatcher> {
  const received: ReceivedMail[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo (address, _session, callback) {
      if (address.address.startsWith('refused@')) {
        callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 })); return
      }
      callback()
    },
    onData (stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        if (session.envelope.rcptTo.some(r => r.address.startsWith('spam@'))) {
          callback(Object.assign(new Error('message refused as spam'), { responseCode: 554 })); return
        }
        simpleParser(Buffer.concat(chunks)).then((mail) => {
          received.push({
            from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
            to: session.envelope.rcptTo.map(r => r.address),
            mail,
            receivedAt: Date.now()
          })
          callback()
        }, callback)
      })
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      resolve()
    })
  })
  const address = server.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    to: address => received.filter(r => r.to.includes(address)),
    close: async () => { await new Promise<void>(resolve => { server.close(() => { resolve() }) }) }
  }
}

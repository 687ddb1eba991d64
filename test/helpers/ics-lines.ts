/**
 * The line structure RFC 5545 (3.1) asks of every iCalendar text we write, checked on its bytes: every content line
 * ends with CRLF, the last one too; no LF or CR stands alone; no line is longer than 75 octets (folded lines go on
 * after CRLF and one space).
 */
import assert from 'node:assert/strict'

/** Asserts the line structure of an iCalendar text (a string or its bytes); its lines, unfolded. */
export function assertIcsLines (ics: string | Buffer): string[] {
  const bytes = typeof ics === 'string' ? Buffer.from(ics, 'utf8') : ics
  const text = bytes.toString('utf8')
  assert.ok(text.endsWith('END:VCALENDAR\r\n'), `ends with CRLF: ${JSON.stringify(text.slice(-30))}`)
  const bare = text.match(/.{0,30}(?:[^\r]\n|\r[^\n])/s)
  assert.equal(bare, null, `no bare LF or CR: ${JSON.stringify(bare?.[0])}`)
  const lines = text.slice(0, -2).split('\r\n')
  for (const line of lines) {
    assert.ok(Buffer.byteLength(line, 'utf8') <= 75, `a line of ${Buffer.byteLength(line, 'utf8')} octets: ${line}`)
  }
  return text.replace(/\r\n[ \t]/g, '').slice(0, -2).split('\r\n')
}

/**
 * The SSRF filter of outbound webhooks, table-driven: every spelling of a private, loopback,
 * link-local or otherwise special address is refused (IPv4 in its URL spellings, IPv4-mapped,
 * -translated and -compatible IPv6, NAT64, 6to4, Teredo, unique-local, multicast, documentation,
 * unspecified); names that resolve to such an address are refused; public addresses pass; the
 * allow list opens what it names; redirects are not followed.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import {
  addressAllowed, allowListOf, fetchBody, isSpecialAddress, OutboundError, postWebhook, v4Inside, WebhookError
} from './outbound.ts'
import { signBody } from '../../modules/automation/automation.signature.ts'

const none = allowListOf([])

/** [address, special?] */
const ADDRESSES: Array<[string, boolean]> = [
  // IPv4
  ['0.0.0.0', true],
  ['0.1.2.3', true],
  ['10.0.0.1', true],
  ['100.64.0.1', true],
  ['100.127.255.254', true],
  ['127.0.0.1', true],
  ['127.255.255.255', true],
  ['169.254.169.254', true],
  ['172.16.0.1', true],
  ['172.31.255.255', true],
  ['192.0.0.8', true],
  ['192.0.2.1', true],
  ['192.88.99.1', true],
  ['192.168.1.1', true],
  ['198.18.0.1', true],
  ['198.19.255.255', true],
  ['198.51.100.7', true],
  ['203.0.113.9', true],
  ['224.0.0.251', true],
  ['239.255.255.250', true],
  ['240.0.0.1', true],
  ['255.255.255.255', true],
  ['8.8.8.8', false],
  ['1.1.1.1', false],
  ['172.32.0.1', false],
  ['100.128.0.1', false],
  ['192.169.0.1', false],
  ['93.184.215.14', false],
  // IPv6: unspecified, loopback, IPv4-compatible ::/96
  ['::', true],
  ['::1', true],
  ['::0:1', true],
  ['0:0:0:0:0:0:0:1', true],
  ['::7f00:1', true],
  ['::127.0.0.1', true],
  ['::808:808', true],
  ['::8.8.8.8', true],
  // IPv4-mapped ::ffff:0:0/96
  ['::ffff:127.0.0.1', true],
  ['::ffff:7f00:1', true],
  ['::FFFF:7F00:0001', true],
  ['0:0:0:0:0:ffff:a00:1', true],
  ['::ffff:169.254.169.254', true],
  ['::ffff:8.8.8.8', false],
  ['::ffff:808:808', false],
  // IPv4-translated ::ffff:0:0:0/96
  ['::ffff:0:7f00:1', true],
  ['::ffff:0:127.0.0.1', true],
  ['::ffff:0:a9fe:a9fe', true],
  ['::ffff:0:808:808', false],
  // NAT64 64:ff9b::/96 by the embedded address; local-use 64:ff9b:1::/48 refused
  ['64:ff9b::7f00:1', true],
  ['64:ff9b::127.0.0.1', true],
  ['64:ff9b::a00:1', true],
  ['64:ff9b::808:808', false],
  ['64:ff9b:1::7f00:1', true],
  ['64:ff9b:1::808:808', true],
  ['64:ff9b:1:ffff::1', true],
  // 6to4 2002::/16 by the embedded address
  ['2002:7f00:1::', true],
  ['2002:7f00:0001::1', true],
  ['2002:a9fe:a9fe::1', true],
  ['2002:c0a8:101::1', true],
  ['2002:808:808::1', false],
  // Teredo 2001::/32 and the rest of 2001::/23
  ['2001::1', true],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true],
  ['2001:2::1', true],
  ['2001:10::1', true],
  ['2001:1ff:ffff::1', true],
  // documentation
  ['2001:db8::1', true],
  ['2001:db8:ffff::', true],
  ['3fff::1', true],
  ['3fff:fff::1', true],
  // link-local, site-local, unique-local, multicast, discard, others outside 2000::/3
  ['fe80::1', true],
  ['fe80::1%lo', true],
  ['febf::1', true],
  ['fec0::1', true],
  ['fc00::1', true],
  ['fd12:3456::1', true],
  ['ff02::1', true],
  ['ff05::1:3', true],
  ['100::1', true],
  ['4000::1', true],
  ['1000::1', true],
  // public IPv6
  ['2606:4700:4700::1111', false],
  ['2a00:1450:4001::200e', false],
  ['2001:200::1', false],
  ['2620:fe::fe', false],
  ['3ffe::1', false],
  // not an address at all
  ['localhost', true],
  ['', true]
]

void describe('automation webhooks: address filter', () => {
  void it('classifies every spelling of an address by what it reaches', () => {
    const wrong = ADDRESSES.filter(([a, special]) => isSpecialAddress(a) !== special).map(
      ([a, special]) => `${a}: expected ${special ? 'special' : 'public'}`
    )
    assert.deepEqual(wrong, [])
    for (const [a, special] of ADDRESSES) assert.equal(addressAllowed(a, 'hooks.example.test', none), !special, a)
  })

  void it('reads the IPv4 address inside mapped, translated, NAT64 and 6to4 addresses', () => {
    assert.equal(v4Inside('::ffff:0:7f00:1'), '127.0.0.1')
    assert.equal(v4Inside('::ffff:10.1.2.3'), '10.1.2.3')
    assert.equal(v4Inside('64:ff9b::c0a8:101'), '192.168.1.1')
    assert.equal(v4Inside('2002:a00:1::5'), '10.0.0.1')
    assert.equal(v4Inside('2606:4700::1'), undefined)
  })

  void it('opens only what the allow list names, in every spelling of the address', () => {
    const allow = allowListOf(['127.0.0.1', '10.0.0.0/8', 'fd00::/8', 'hooks.internal'])
    assert.equal(addressAllowed('127.0.0.1', 'x', allow), true)
    assert.equal(addressAllowed('::ffff:127.0.0.1', 'x', allow), true)
    assert.equal(addressAllowed('::ffff:0:7f00:1', 'x', allow), true)
    assert.equal(addressAllowed('10.9.9.9', 'x', allow), true)
    assert.equal(addressAllowed('fd00::5', 'x', allow), true)
    assert.equal(addressAllowed('127.0.0.2', 'x', allow), false)
    assert.equal(addressAllowed('::1', 'x', allow), false)
    assert.equal(addressAllowed('192.168.0.1', 'hooks.internal', allow), true)
  })

  /** URLs refused before any connection; every one would otherwise reach this machine or a private network. */
  const REFUSED_URLS = [
    'https://127.0.0.1/',
    'https://127.1/',
    'https://2130706433/',
    'https://0x7f.0.0.1/',
    'https://0177.0.0.1/',
    'https://0x7f000001/',
    'https://0/',
    'https://10.1/',
    'https://[::1]/',
    'https://[::]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'https://[::ffff:0:7f00:1]/',
    'https://[::127.0.0.1]/',
    'https://[64:ff9b::7f00:1]/',
    'https://[64:ff9b:1::a00:1]/',
    'https://[2002:7f00:1::1]/',
    'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
    'https://[fe80::1]/',
    'https://[fd00::1]/',
    'https://[ff02::1]/',
    'https://[2001:db8::1]/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::ffff:a9fe:a9fe]/'
  ]

  void it('refuses URLs whose host is such an address, in any URL spelling, before connecting', async () => {
    const accepted: string[] = []
    for (const url of REFUSED_URLS) {
      try {
        await postWebhook(url, '{}', {}, none, 2000)
        accepted.push(`${url}: answered`)
      } catch (err) {
        if (!(err instanceof WebhookError) || !/private or reserved/.test(err.message)) {
          accepted.push(`${url}: ${String(err)}`)
        }
      }
    }
    assert.deepEqual(accepted, [])
  })

  void it('refuses a name that resolves to a private or loopback address', async () => {
    await assert.rejects(
      postWebhook('https://localhost/hook', '{}', {}, none, 2000),
      (err: unknown) => err instanceof WebhookError && /resolves to a private or reserved address/.test(err.message)
    )
    await assert.rejects(
      postWebhook('http://localhost/hook', '{}', {}, none, 2000),
      (err: unknown) => err instanceof WebhookError && /https/.test(err.message)
    )
  })

  void describe('against a local receiver (allow-listed)', () => {
    let server: http.Server
    let port = 0
    const seen: string[] = []
    before(async () => {
      server = http.createServer((req, res) => {
        seen.push(`${req.method ?? ''} ${req.url ?? ''}`)
        req.resume()
        if (req.url === '/redirect') {
          res.writeHead(302, { location: `http://127.0.0.1:${port}/target` }).end()
        } else if (req.url === '/calendar.ics') {
          res.writeHead(200, { 'content-type': 'text/calendar' }).end('BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n')
        } else if (req.url === '/big') {
          res.writeHead(200)
          res.write('x'.repeat(600))
          res.end('x'.repeat(600))
        } else {
          res.writeHead(204).end()
        }
      })
      await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as AddressInfo).port
    })
    after(async () => { await new Promise(resolve => server.close(resolve)) })

    void it('calls an allow-listed address and does not follow a redirect', async () => {
      const allow = allowListOf(['127.0.0.1'])
      const body = '{"a":1}'
      assert.deepEqual(
        await postWebhook(
          `http://127.0.0.1:${port}/ok`,
          body,
          { 'automation-signature': signBody('s', body, 1) },
          allow
        ),
        { status: 204 }
      )
      await assert.rejects(
        postWebhook(`http://127.0.0.1:${port}/redirect`, body, {}, allow),
        (err: unknown) => err instanceof WebhookError && /302/.test(err.message)
      )
      assert.deepEqual(seen, ['POST /ok', 'POST /redirect'])
      // the same receiver by name, not allow-listed: refused at resolution
      await assert.rejects(postWebhook(`https://localhost:${port}/ok`, body, {}, none), WebhookError)
      assert.equal(seen.length, 2)
    })

    void it('GETs a body under the same rules (the calendar import): read up to its bound, no redirect, ' +
      'private addresses refused before connecting', async () => {
      const allow = allowListOf(['127.0.0.1'])
      seen.length = 0
      const options = { maxBytes: 1000, accept: 'text/calendar', label: 'calendar' }
      const got = await fetchBody(`http://127.0.0.1:${port}/calendar.ics`, allow, options)
      assert.equal(got.body.toString(), 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n')
      assert.equal(got.contentType, 'text/calendar')
      const refusal = (test: (e: OutboundError) => boolean) => (err: unknown) =>
        err instanceof OutboundError && test(err)
      await assert.rejects(fetchBody(`http://127.0.0.1:${port}/big`, allow, options),
        refusal(e => e.tooLarge === true && /larger than 1000 bytes/.test(e.message)))
      await assert.rejects(fetchBody(`http://127.0.0.1:${port}/redirect`, allow, options),
        refusal(e => e.status === 302 && /redirects are not followed/.test(e.message)))
      assert.deepEqual(seen, ['GET /calendar.ics', 'GET /big', 'GET /redirect'])
      for (const url of REFUSED_URLS) {
        await assert.rejects(fetchBody(url, none, options), refusal(e => e.refused === true), url)
      }
      await assert.rejects(fetchBody(`https://localhost:${port}/calendar.ics`, none, options),
        refusal(e => e.refused === true && /resolves to a private or reserved address/.test(e.message)))
      await assert.rejects(fetchBody('http://example.org/calendar.ics', none, options),
        refusal(e => e.refused === true && /calendar URL must use https/.test(e.message)))
      assert.equal(seen.length, 3)
    })
  })
})

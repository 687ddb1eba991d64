/**
 * The guest texts (src/platform/i18n/i18n.ts): the catalogs agree with English and the checker refuses broken ones,
 * plurals read right in each language, Accept-Language picks the right locale within bounded work, an event's date
 * is the local wall-clock time of its zone across a DST change, and values stay plain text. No database.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  checkCatalogs, checkMessages, formatWhen, isLocale, LOCALES, localeOrDefault, message, negotiateLocale,
  type Catalogs, type Locale
} from './i18n.ts'
import { de } from './messages.de.ts'
import { en } from './messages.en.ts'
import { es } from './messages.es.ts'
import { fr } from './messages.fr.ts'

const catalogs: Catalogs = { en, de, fr, es }

void describe('i18n: catalogs', () => {
  void it('every locale has exactly the English keys, and checkMessages passes', () => {
    const keys = Object.keys(en).sort()
    for (const locale of LOCALES) assert.deepEqual(Object.keys(catalogs[locale]).sort(), keys, locale)
    assert.doesNotThrow(() => checkMessages())
  })

  void it('refuses a message that does not parse, naming locale and key', () => {
    const broken = { ...catalogs, de: { ...de, 'mail.optin.body': 'Folgen Sie {hours, plural, one {# Stunde}' } }
    assert.throws(() => checkCatalogs(broken), /message de 'mail\.optin\.body' does not parse/)
  })

  void it('refuses arguments that differ from English (a straight apostrophe quoting a placeholder)', () => {
    const broken = { ...catalogs, fr: { ...fr, 'mail.rejected.body': 'L\'organisation a refusé l\'{title}.' } }
    assert.throws(
      () => checkCatalogs(broken),
      /message fr 'mail\.rejected\.body' has the arguments \{\}, English has \{title\}/
    )
    const renamed = { ...catalogs, es: { ...es, 'mail.unsubscribe': 'Abra {link}' } }
    assert.throws(() => checkCatalogs(renamed), /message es 'mail\.unsubscribe' has the arguments \{link\}/)
  })

  void it('refuses a missing key, an extra key and a plural option the locale does not have', () => {
    const { 'error.event_over': _, ...lacking } = es
    assert.throws(() => checkCatalogs({ ...catalogs, es: lacking }), /locale es lacks the key 'error\.event_over'/)
    assert.throws(
      () => checkCatalogs({ ...catalogs, de: { ...de, 'error.extra': 'Mehr.' } }),
      /locale de has the key 'error\.extra', which English lacks/
    )
    const few = { ...de, 'mail.seats_left': '{count, plural, one {ein Platz} few {# Plätze} other {# Plätze}}' }
    assert.throws(
      () => checkCatalogs({ ...catalogs, de: few }),
      /message de 'mail\.seats_left' has the plural option 'few'/
    )
  })
})

void describe('i18n: message', () => {
  void it('reads the plural right in every language', () => {
    const seats = (l: Locale) => [0, 1, 2].map(count => message(l, 'mail.seats_left', { count }))
    assert.deepEqual(seats('en'), ['No seats are left.', 'One seat is left.', '2 seats are left.'])
    assert.deepEqual(seats('de'), [
      'Es sind keine Plätze mehr frei.', 'Es ist noch ein Platz frei.', 'Es sind noch 2 Plätze frei.'
    ])
    assert.deepEqual(seats('fr'), ['Il ne reste plus aucune place.', 'Il reste une place.', 'Il reste 2 places.'])
    assert.deepEqual(seats('es'), ['No quedan plazas.', 'Queda una plaza.', 'Quedan 2 plazas.'])

    const tooLong = (l: Locale) => [1, 5].map(max => message(l, 'error.too_long', { max }))
    assert.deepEqual(tooLong('en'), ['Please use at most 1 character.', 'Please use at most 5 characters.'])
    assert.deepEqual(tooLong('de'), [
      'Bitte verwenden Sie höchstens 1 Zeichen.', 'Bitte verwenden Sie höchstens 5 Zeichen.'
    ])
    assert.deepEqual(tooLong('fr'), [
      'Veuillez utiliser au plus 1 caractère.', 'Veuillez utiliser au plus 5 caractères.'
    ])
    assert.deepEqual(tooLong('es'), ['Use como máximo 1 carácter.', 'Use como máximo 5 caracteres.'])

    assert.match(message('de', 'mail.optin.body', { title: 'T', when: 'W', hours: 1 }), /innerhalb einer Stunde dem/)
    assert.match(message('fr', 'mail.optin.body', { title: 'T', when: 'W', hours: 24 }), /un délai de 24 heures\./)
    assert.match(message('es', 'mail.optin.body', { title: 'T', when: 'W', hours: 1 }), /un plazo de una hora\./)
    assert.match(message('en', 'mail.optin.body', { title: 'T', when: 'W', hours: 1 }), /within one hour\./)
  })

  void it('fills placeholders with plain text, braces, markup and quotes kept as they are', () => {
    const title = 'Choir {night} <b>"Bach" & \'Händel\'</b> #1'
    assert.equal(message('en', 'mail.invitation.subject', { title }), `Invitation: ${title}`)
    assert.equal(
      message('fr', 'mail.confirmed.body', { title, when: 'lundi', where: 'Lyon' }),
      `Votre inscription à « ${title} » est confirmée. Au plaisir de vous y voir !\n\nQuand : lundi\nOù : Lyon`
    )
    assert.equal(
      message('en', 'mail.optin.body', { title, when: 'Monday', hours: 48 }),
      `Someone — hopefully you — asked to register this address for ${title} (Monday). ` +
      'To confirm, follow the link within 48 hours. If it was not you, ignore this mail: nothing is registered.'
    )
    assert.equal(message('de', 'error.number_range', { min: 1, max: 10000 }), 'Bitte geben Sie eine Zahl von 1 bis ' +
      '10.000 ein.')
  })

  void it('throws on a missing value and on a Date in a plain argument', () => {
    assert.throws(() => message('en', 'mail.invitation.subject'))
    assert.throws(() => message('en', 'mail.invitation.subject', { title: new Date() }), TypeError)
  })
})

void describe('i18n: negotiateLocale', () => {
  const cases: Array<[string | undefined, Locale]> = [
    ['de', 'de'],
    ['fr;q=0.5, es;q=0.7, de;q=0.6', 'es'],
    ['en;q=0.2, fr', 'fr'],
    ['de-AT', 'de'],
    ['es-419, en;q=0.5', 'es'],
    ['fr-CA;q=0.8, en;q=0.9', 'en'],
    ['DE-ch;Q=0.9, fr;q=0.9', 'de'],
    ['*', 'fr'],
    ['*, es;q=0.1', 'es'],
    ['', 'fr'],
    [undefined, 'fr'],
    ['de;q=0', 'fr'],
    ['de;q=0, es;q=0.001', 'es'],
    ['nl, pt-BR;q=0.9, es;q=0.3', 'es'],
    ['de;q=2', 'fr'],
    ['de;q=abc, es;q=0.1', 'es'],
    [';;;,,,==q, <script>, 日本語, de_AT', 'fr'],
    ['en;level=1;q=0.4, de;q=0.3', 'en']
  ]
  for (const [header, expected] of cases) {
    void it(`${JSON.stringify(header)} → ${expected}`, () => {
      assert.equal(negotiateLocale(header, 'fr'), expected)
    })
  }

  void it('reads no further than 1000 characters and 30 entries', () => {
    const filler = 'nl;q=0.9, '
    assert.equal(negotiateLocale(`${filler.repeat(20)}es;q=0.5`, 'en'), 'es')
    assert.equal(negotiateLocale(`${filler.repeat(29)}es;q=0.5`, 'en'), 'es')
    assert.equal(negotiateLocale(`${filler.repeat(30)}es;q=0.5`, 'en'), 'en')
    const long = `de;q=0.1, ${'x'.repeat(4986)}, es`
    assert.equal(long.length, 5000)
    assert.equal(negotiateLocale(long, 'en'), 'de')
    assert.equal(negotiateLocale(`${'x'.repeat(990)}, de`, 'en'), 'de')
    assert.equal(negotiateLocale(`${'x'.repeat(997)}, de`, 'en'), 'en')
    // the entry the cut runs through is dropped, not read as its first characters (`de-AT` cut to `de`)
    assert.equal(negotiateLocale(`${'x'.repeat(996)}, de-AT`, 'en'), 'en')
    const started = performance.now()
    for (let i = 0; i < 1000; i++) negotiateLocale(`${'de-AT;q=0.5, '.repeat(400)}`, 'en')
    assert.ok(performance.now() - started < 2000, 'a thousand 5 000-character headers take under 2 s')
  })
})

void describe('i18n: formatWhen', () => {
  const summer = new Date('2026-03-29T08:00:00Z') // Berlin is on CEST (UTC+2) from 01:00Z that day
  const winter = new Date('2026-03-28T09:00:00Z') // still CET (UTC+1)

  void it('shows the local wall-clock time of the event zone across a DST change', () => {
    for (const locale of LOCALES) {
      const s = formatWhen(locale, summer, null, 'Europe/Berlin')
      const w = formatWhen(locale, winter, null, 'Europe/Berlin')
      assert.match(s, /\b10:00\b/, `${locale}: ${s}`)
      assert.match(w, /\b10:00\b/, `${locale}: ${w}`)
      assert.match(s, /29/)
      assert.match(w, /28/)
      assert.notEqual(s.split(/\s/).at(-1), w.split(/\s/).at(-1), `${locale}: the zone's name differs (${s} / ${w})`)
    }
    assert.match(formatWhen('de', summer, null, 'Europe/Berlin'), /^Sonntag, 29\. März 2026 .*10:00 MESZ$/)
    assert.match(formatWhen('de', winter, null, 'Europe/Berlin'), /^Samstag, 28\. März 2026 .*10:00 MEZ$/)
    assert.match(formatWhen('en', summer, null, 'Europe/Berlin'), /^Sunday, March 29, 2026.* 10:00\sAM GMT\+2$/)
    assert.match(formatWhen('fr', summer, null, 'Europe/Berlin'), /^dimanche 29 mars 2026/)
    assert.match(formatWhen('es', summer, null, 'Europe/Berlin'), /^domingo, 29 de marzo de 2026/)
  })

  void it('gives a distinct text in each language', () => {
    const texts = LOCALES.map(l => formatWhen(l, summer, null, 'Europe/Berlin'))
    assert.equal(new Set(texts).size, LOCALES.length, texts.join(' | '))
  })

  void it('writes a start and end on one day as a range with the day once', () => {
    const end = new Date('2026-03-29T10:30:00Z')
    for (const locale of LOCALES) {
      const text = formatWhen(locale, summer, end, 'Europe/Berlin')
      assert.match(text, /10:00/, text)
      assert.match(text, /12:30/, text)
      assert.equal(text.match(/2026/g)?.length, 1, text)
    }
    const nextDay = formatWhen('en', summer, new Date('2026-03-30T10:30:00Z'), 'Europe/Berlin')
    assert.match(nextDay, /March 29, 2026.*March 30, 2026/, nextDay)
    const backwards = formatWhen('en', summer, winter, 'Europe/Berlin')
    assert.equal(backwards, formatWhen('en', summer, null, 'Europe/Berlin'))
  })

  void it('falls back to UTC for an unknown zone, and to the catalog text without a start', () => {
    for (const locale of LOCALES) {
      assert.equal(formatWhen(locale, summer, null, 'Mars/Olympus_Mons'), formatWhen(locale, summer, null, 'UTC'))
      assert.equal(formatWhen(locale, summer, null, ''), formatWhen(locale, summer, null, 'UTC'))
      assert.match(formatWhen(locale, summer, null, 'Nowhere'), /\b8:00|08:00/)
      assert.equal(formatWhen(locale, null, summer, 'Europe/Berlin'), message(locale, 'when.unscheduled'))
      assert.equal(formatWhen(locale, new Date(NaN), null, 'UTC'), message(locale, 'when.unscheduled'))
    }
    assert.equal(formatWhen('en', null, null, 'UTC'), 'Date to be announced')
    assert.equal(formatWhen('de', null, null, 'UTC'), 'Termin wird noch bekannt gegeben')
  })
})

void describe('i18n: locales', () => {
  void it('isLocale and localeOrDefault', () => {
    assert.ok(isLocale('es'))
    assert.ok(!isLocale('it'))
    assert.ok(!isLocale(undefined))
    assert.ok(!isLocale('toString'))
    assert.equal(localeOrDefault('fr', 'en'), 'fr')
    assert.equal(localeOrDefault('DE-at', 'en'), 'de')
    assert.equal(localeOrDefault('es_MX', 'en'), 'es')
    assert.equal(localeOrDefault('it', 'de'), 'de')
    assert.equal(localeOrDefault(null, 'de'), 'de')
    assert.equal(localeOrDefault(undefined, 'fr'), 'fr')
    assert.equal(localeOrDefault('', 'es'), 'es')
  })
})

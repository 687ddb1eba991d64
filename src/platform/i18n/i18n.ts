/**
 * The texts guests see (people without an account: invitees and registrants of events) in English, German, French
 * and Spanish: the locale of a request (`negotiateLocale`, from Accept-Language), a catalog message filled with
 * values (`message`, ICU message format through FormatJS's `intl-messageformat`) and the date of an event in its own
 * time zone (`formatWhen`). The catalogs are `messages.<locale>.ts`; English is the reference every other locale is
 * typed against, so a missing or extra key fails the typecheck.
 *
 * Decisions:
 * - Messages are parsed with `ignoreTag`: a `<` in a message is text, never rich-text markup, and values are never
 *   parsed at all. The result is plain text; HTML escaping is the caller's (`escapeHtml` of the notifications).
 * - ICU reads a straight apostrophe before `{` as a quote (`l'{title}` prints `l{title}`), so the catalogs write the
 *   typographic one (’). `checkMessages` catches a slip: the quoted placeholder is then missing from the arguments.
 * - `checkMessages` runs at start-up: every message parses, every locale has exactly English's keys, every message
 *   has the same argument names as its English one, and every plural option is a category of the locale (or `=n`).
 * - Accept-Language is read by a short parser, bounded to 1000 characters and 30 entries; a region falls back to its
 *   language (`de-AT` → `de`), `*` and unknown languages are skipped.
 * - An event's date is shown as weekday, date, time and the zone's short name (`dateStyle`/`timeStyle` cannot be
 *   combined with `timeZoneName`, so the parts are named one by one); a start and end as one range (`formatRange`
 *   writes a day once when both fall on it).
 */
import { IntlMessageFormat } from 'intl-messageformat'
import { de } from './messages.de.ts'
import { en } from './messages.en.ts'
import { es } from './messages.es.ts'
import { fr } from './messages.fr.ts'

export const LOCALES = ['en', 'de', 'fr', 'es'] as const
export type Locale = typeof LOCALES[number]
export type MessageKey = keyof typeof en

/** A set of catalogs to check: each locale's messages by key. */
export type Catalogs = Readonly<Record<Locale, Readonly<Record<string, string>>>>

const CATALOGS: Readonly<Record<Locale, Readonly<Record<MessageKey, string>>>> = { en, de, fr, es }

export function isLocale (x: unknown): x is Locale {
  return typeof x === 'string' && (LOCALES as readonly string[]).includes(x)
}

/** A stored locale (`de`, `DE`, `de-AT`, `de_AT`) as one of ours; anything else: `fallback`. */
export function localeOrDefault (value: string | null | undefined, fallback: Locale): Locale {
  if (typeof value !== 'string') return fallback
  const language = value.trim().toLowerCase().split(/[-_]/)[0]
  return isLocale(language) ? language : fallback
}

const MAX_HEADER = 1000
const MAX_ENTRIES = 30
const LANGUAGE_RANGE = /^[a-z]{1,8}(?:-[a-z0-9]{1,8})*$/i
const QUALITY = /^q\s*=\s*(\d(?:\.\d{0,3})?)$/i

/**
 * The best of our locales an Accept-Language header asks for: highest q first, the earlier entry on a tie, q=0
 * never. Past 1000 characters (the entry the cut runs through included) and past 30 entries the header is not read.
 */
export function negotiateLocale (acceptLanguage: string | undefined, fallback: Locale): Locale {
  if (acceptLanguage === undefined) return fallback
  let header = acceptLanguage
  if (header.length > MAX_HEADER) header = header.slice(0, header.lastIndexOf(',', MAX_HEADER) + 1)
  let best: Locale | undefined
  let bestQ = 0
  for (const entry of header.split(',', MAX_ENTRIES)) {
    const [range = '', ...params] = entry.split(';').map(p => p.trim())
    if (!LANGUAGE_RANGE.test(range)) continue
    const language = range.split('-')[0]?.toLowerCase()
    if (!isLocale(language)) continue
    let q = 1
    const quality = params.find(p => /^q\s*=/i.test(p))
    if (quality !== undefined) {
      const m = QUALITY.exec(quality)
      q = m?.[1] !== undefined ? Number(m[1]) : NaN
      if (!(q >= 0 && q <= 1)) continue
    }
    if (q > bestQ) { best = language; bestQ = q }
  }
  return best ?? fallback
}

const formatters = new Map<string, IntlMessageFormat>()

function formatter (locale: Locale, key: string, text: string): IntlMessageFormat {
  const id = `${locale}:${key}`
  let f = formatters.get(id)
  if (f === undefined) {
    f = new IntlMessageFormat(text, locale, undefined, { ignoreTag: true })
    formatters.set(id, f)
  }
  return f
}

/**
 * The message `key` of `locale` with its placeholders filled. Values are text, never parsed; a Date is for a
 * `{x, date}` or `{x, time}` argument (in a plain `{x}` it is refused). A missing value throws (FormatJS's
 * MissingValueError).
 */
export function message (locale: Locale, key: MessageKey, values?: Record<string, string | number | Date>): string {
  const out = formatter(locale, key, CATALOGS[locale][key]).format(values)
  if (typeof out !== 'string') {
    throw new TypeError(`i18n: message ${locale} '${key}': a Date value needs a {name, date} or {name, time} argument`)
  }
  return out
}

const WHEN: Intl.DateTimeFormatOptions = {
  weekday: 'long',
  year: 'numeric',
  month: 'long',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  timeZoneName: 'short'
}
const MAX_DATE_FORMATS = 200
const dateFormats = new Map<string, Intl.DateTimeFormat>()

/** The date format of `locale` in `timeZone`, or in UTC when the zone is not a valid IANA zone. */
function dateFormat (locale: Locale, timeZone: string): Intl.DateTimeFormat {
  const id = `${locale} ${timeZone}`
  let f = dateFormats.get(id)
  if (f !== undefined) return f
  try {
    f = new Intl.DateTimeFormat(locale, { ...WHEN, timeZone })
  } catch (err) {
    if (!(err instanceof RangeError)) throw err
    return dateFormat(locale, 'UTC')
  }
  if (dateFormats.size >= MAX_DATE_FORMATS) dateFormats.clear()
  dateFormats.set(id, f)
  return f
}

const valid = (d: Date | null): d is Date => d !== null && !Number.isNaN(d.getTime())

/**
 * When an event takes place, in its own IANA zone (an invalid zone: UTC): the start, or the start and end as a
 * range when the end is after it. No start (or an invalid Date): the catalog's `when.unscheduled`.
 */
export function formatWhen (locale: Locale, start: Date | null, end: Date | null, timeZone: string): string {
  if (!valid(start)) return message(locale, 'when.unscheduled')
  const f = dateFormat(locale, timeZone)
  return valid(end) && end.getTime() > start.getTime() ? f.formatRange(start, end) : f.format(start)
}

type AstElement = ReturnType<IntlMessageFormat['getAst']>[number]
/** `TYPE.literal` of FormatJS's AST (a stable, serialisable format; the enum is not re-exported by the formatter). */
const LITERAL = 0

/** The argument names of a parsed message, and its plural options (kind and option keys), nested ones included. */
function argumentsOf (ast: AstElement[], names: Set<string>, plurals: Array<{ ordinal: boolean; keys: string[] }>) {
  for (const el of ast) {
    if ('options' in el) {
      names.add(el.value)
      if ('pluralType' in el) plurals.push({ ordinal: el.pluralType === 'ordinal', keys: Object.keys(el.options) })
      for (const option of Object.values(el.options)) argumentsOf(option.value, names, plurals)
    } else if ('children' in el) {
      argumentsOf(el.children, names, plurals)
    } else if ('value' in el && el.type !== LITERAL) {
      names.add(el.value)
    }
  }
}

const sorted = (s: Set<string>): string => [...s].sort().join(', ')

/** Throws naming locale and key when `catalogs` break a rule of `checkMessages`. */
export function checkCatalogs (catalogs: Catalogs): void {
  const reference = new Map<string, Set<string>>()
  for (const locale of LOCALES) {
    const catalog = catalogs[locale]
    if (catalog === undefined) throw new Error(`i18n: locale ${locale} has no catalog`)
    if (locale !== 'en') {
      for (const key of Object.keys(catalogs.en)) {
        if (!Object.hasOwn(catalog, key)) throw new Error(`i18n: locale ${locale} lacks the key '${key}'`)
      }
    }
    const categories = {
      cardinal: new Set<string>(new Intl.PluralRules(locale).resolvedOptions().pluralCategories),
      ordinal: new Set<string>(new Intl.PluralRules(locale, { type: 'ordinal' }).resolvedOptions().pluralCategories)
    }
    for (const [key, text] of Object.entries(catalog)) {
      const expected = reference.get(key)
      if (locale !== 'en' && expected === undefined) {
        throw new Error(`i18n: locale ${locale} has the key '${key}', which English lacks`)
      }
      let ast: AstElement[]
      try {
        ast = new IntlMessageFormat(text, locale, undefined, { ignoreTag: true }).getAst()
      } catch (err) {
        throw new Error(`i18n: message ${locale} '${key}' does not parse: ${(err as Error).message}`, { cause: err })
      }
      const names = new Set<string>()
      const plurals: Array<{ ordinal: boolean; keys: string[] }> = []
      argumentsOf(ast, names, plurals)
      for (const p of plurals) {
        const wrong = p.keys.find(k => !/^=\d+$/.test(k) && !categories[p.ordinal ? 'ordinal' : 'cardinal'].has(k))
        if (wrong !== undefined) {
          throw new Error(`i18n: message ${locale} '${key}' has the plural option '${wrong}', ` +
            `not a category of ${locale}`)
        }
      }
      if (locale === 'en') {
        reference.set(key, names)
      } else if (sorted(names) !== sorted(expected as Set<string>)) {
        throw new Error(
          `i18n: message ${locale} '${key}' has the arguments {${sorted(names)}}, ` +
          `English has {${sorted(expected as Set<string>)}}`
        )
      }
    }
  }
}

/** Checks the catalogs (run at start-up by the app): throws naming locale and key of the first fault. */
export function checkMessages (): void {
  checkCatalogs(CATALOGS)
}

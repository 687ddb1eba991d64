/**
 * Phone numbers of contacts (docs/contacts.md, "Phone numbers"). Each phone field keeps what was typed; beside it the
 * service stores the number's E.164 form, read by libphonenumber-js with a region for a number typed without its
 * country code: the request's `phone_region`, else the deployment's PHONE_DEFAULT_REGION. A text that is not a valid
 * number is kept as typed and named in `invalid_phones`, never refused: a CRM keeps what people wrote down, and a
 * number the library cannot check is still a lead.
 *
 * Validity is that of the library's minimal metadata (a country's number lengths and leading digits, not its exact
 * ranges): the complete ranges go stale as countries assign new ones, and a flag is only worth what it claims.
 *
 * Migration 0028 derives `phone_*_rev` from these columns (the digits of the E.164 form, else of the text, reversed)
 * and indexes them; a search's phone keys (`phoneSearch`) are equal to, or a prefix of, such reversed digits.
 */
import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/min'
import { error400BadRequest, fieldError } from '../../platform/http/errors.ts'
import { PHONE_FIELDS, type ContactValues, type PhoneField } from './contacts.table.ts'

export type { CountryCode }
export { PHONE_FIELDS, type PhoneField }

/** The column of each field's E.164 form. */
export const E164_COLUMNS = {
  phone_primary: 'phone_primary_e164',
  phone_secondary: 'phone_secondary_e164',
  phone_work: 'phone_work_e164'
} as const satisfies Record<PhoneField, string>

/** The generated column of each field's reversed digits (migration 0028), which its index `contacts_<field>` keys. */
export const REV_COLUMNS = {
  phone_primary: 'phone_primary_rev',
  phone_secondary: 'phone_secondary_rev',
  phone_work: 'phone_work_rev'
} as const satisfies Record<PhoneField, string>

/**
 * The fewest digits a phone search or a duplicate's number is matched on: five digits are a house number or a
 * postal code as often as the end of a phone number.
 */
export const PHONE_DIGITS_MIN = 6

/** The request parameter that names the region of numbers typed without a country code. */
export const PHONE_REGION_PARAM = 'phone_region'

/** A region name as libphonenumber-js knows it (ISO 3166-1 alpha-2, upper case), or undefined. */
export function phoneRegionOf (name: string): CountryCode | undefined {
  const upper = name.trim().toUpperCase()
  return /^[A-Z]{2}$/.test(upper) && isSupportedCountry(upper) ? upper : undefined
}

/**
 * The region of a request: its `phone_region` (any case), else `fallback` (PHONE_DEFAULT_REGION). A name that is not
 * an ISO 3166-1 alpha-2 region with phone numbers is a 400 naming `query.phone_region`, before anything is read.
 */
export function requestRegion (name: string | undefined, fallback: CountryCode | undefined): CountryCode | undefined {
  if (name === undefined || name === '') return fallback
  const region = phoneRegionOf(name)
  if (region === undefined) {
    throw error400BadRequest('validation failed', [
      fieldError(
        `query.${PHONE_REGION_PARAM}`,
        'expected an ISO 3166-1 alpha-2 region that has phone numbers, such as FR, DE or US',
        name
      )
    ])
  }
  return region
}

const blank = (text: string | null | undefined): boolean => text === null || text === undefined || text.trim() === ''

/**
 * The E.164 form of a typed number (`+33628230455`), read with `region` when it has no country code; null when the
 * text is empty or not a valid number. An extension (`ext. 12`) is not part of the E.164 form.
 */
export function toE164 (typed: string | null | undefined, region: CountryCode | undefined): string | null {
  if (typed === null || typed === undefined || blank(typed)) return null
  const parsed = parsePhoneNumberFromString(typed, region)
  return parsed?.isValid() === true ? parsed.number : null
}

/** The phone columns of a stored contact that `withPhones` reads. */
export type StoredPhones = Record<PhoneField | typeof E164_COLUMNS[PhoneField], string | null> & {
  invalid_phones: PhoneField[] | null
}

/**
 * The values of a write with its phone columns: the E.164 form of each phone field it sets, read with `region`, and
 * `invalid_phones` of the contact after it. `stored` is the contact before (undefined: a new one, whose every field
 * is read). The numbers of a contact never read (`invalid_phones` null: written before migration 0028) are all
 * read now, so its flags are whole; a stored number the write leaves alone keeps its E.164 form (it was read with the
 * region of its own write). A write that sets no phone field of a contact already read adds nothing.
 */
export function withPhones (
  values: ContactValues,
  stored: StoredPhones | undefined,
  region: CountryCode | undefined
): ContactValues {
  const unread = stored === undefined || stored.invalid_phones === null
  const reading = PHONE_FIELDS.filter(f => unread || Object.hasOwn(values, f))
  if (reading.length === 0) return values
  const out: ContactValues = { ...values }
  const invalid: PhoneField[] = []
  for (const field of PHONE_FIELDS) {
    if (reading.includes(field)) {
      const typed = Object.hasOwn(values, field) ? values[field] : stored?.[field]
      const e164 = toE164(typed, region)
      out[E164_COLUMNS[field]] = e164
      if (e164 === null && !blank(typed)) invalid.push(field)
    } else if (stored?.invalid_phones?.includes(field) === true) invalid.push(field)
  }
  out.invalid_phones = invalid
  return out
}

const reversed = (digits: string): string => [...digits].reverse().join('')

/** The reversed digits of a field as its generated column holds them (migration 0028); null when it has none. */
export function reversedDigits (typed: string | null, e164: string | null): string | null {
  const digits = (e164 ?? typed ?? '').replace(/[^0-9]/g, '')
  return digits === '' ? null : reversed(digits)
}

/**
 * The numbers of a contact as keys of its generated columns, for matching duplicates: the reversed digits of each
 * field (its E.164 form's, else its text's) that has at least `PHONE_DIGITS_MIN` digits, each once.
 */
export function phoneKeys (row: StoredPhones): string[] {
  const keys = PHONE_FIELDS.map(f => reversedDigits(row[f], row[E164_COLUMNS[f]]))
  return [...new Set(keys.filter((k): k is string => k !== null && k.length >= PHONE_DIGITS_MIN))]
}

/**
 * How a search term matches phone numbers, as keys of the reversed digits (`phone_*_rev`):
 * - `{ number, national }`: the term is a number. `number` (its E.164 digits, reversed) equals a number that was read;
 *   `national` (its national significant number, reversed, when it has at least `PHONE_DIGITS_MIN` digits) starts
 *   the digits of a number kept as typed (never read, or not valid), which then ends with that national number.
 * - `{ suffix }`: the term is the end of numbers: every number whose digits end with it.
 */
export type PhoneSearch = { number: string, national: string | undefined } | { suffix: string }

/** A term that reads as a phone number: digits, spaces, `.`, `-`, `/`, parentheses, and a leading `+`. */
const PHONE_LIKE = /^\+?[0-9\s.\-/()]+$/

/**
 * The phone match of a search term, or undefined when the term does not look like a phone number or has fewer than
 * `PHONE_DIGITS_MIN` digits (the search then matches text only: names, e-mail and company).
 *
 * - A term that reads as a valid number (with `region` when it has no country code) is that number: `+33 6 28 23 04
 *   55`, `0033628230455`, `0628230455` and `06.28.23.04.55` (region FR) all find +33628230455, and a number stored
 *   as typed that ends with 6 28 23 04 55 (a contact written before numbers were read, or under no region). Not a
 *   number of another country that has the same national number.
 * - Any other term is the end of numbers: its digits, leading zeros dropped (a trunk `0`, an international `00`) while
 *   `PHONE_DIGITS_MIN` digits remain, so `230455` finds +33628230455, `0628230455` with no region finds every number
 *   ending in 628230455, and `001234` every number ending in 001234.
 */
export function phoneSearch (term: string | undefined, region: CountryCode | undefined): PhoneSearch | undefined {
  const text = term?.trim() ?? ''
  if (!PHONE_LIKE.test(text)) return undefined
  const parsed = parsePhoneNumberFromString(text, region)
  if (parsed?.isValid() === true) {
    const national = parsed.nationalNumber
    return {
      number: reversed(parsed.number.slice(1)),
      national: national.length >= PHONE_DIGITS_MIN ? reversed(national) : undefined
    }
  }
  const digits = text.replace(/[^0-9]/g, '')
  // zeros that start a longer term are a trunk `0` or an international `00`; in a short one they are part of the
  // number's end (`001234`: the numbers ending in 001234)
  const significant = digits.replace(/^0+/, '')
  const suffix = significant.length >= PHONE_DIGITS_MIN ? significant : digits
  return suffix.length >= PHONE_DIGITS_MIN ? { suffix: reversed(suffix) } : undefined
}

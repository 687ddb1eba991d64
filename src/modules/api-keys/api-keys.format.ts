/**
 * The format of an API key (docs/api-keys.md, "Format"): `cbk_`, 40 random base62 characters, and a 6-character
 * base62 CRC32 of the random part, so that a secret scanner can tell a key from a look-alike offline (as GitHub's
 * tokens do). Base62 digits are `0-9A-Za-z` in that order; the checksum is the CRC32 (IEEE, as zlib) of the 40
 * random characters' ASCII, written big-endian in base62 and padded with `0` to 6 characters.
 *
 * The lookup id (`prefix`) is `cbk_` and the first 12 random characters: shown in lists, used to find the key's row,
 * never enough to use it. Only the SHA-256 of the whole key is stored.
 */
import crypto from 'node:crypto'
import zlib from 'node:zlib'

export const KEY_PREFIX = 'cbk_'
export const RANDOM_LENGTH = 40
export const CHECKSUM_LENGTH = 6
/** Random characters in the lookup id. */
export const LOOKUP_RANDOM_LENGTH = 12

/** A whole key, anchored (what docs/api-keys.md gives secret scanners, there without anchors). */
export const API_KEY_PATTERN = /^cbk_[0-9A-Za-z]{46}$/

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** `n` (a non-negative integer) in base62, left-padded with `0` to `width`. */
export function base62 (n: number, width: number): string {
  let out = ''
  let rest = n
  do {
    out = (BASE62[rest % 62] ?? '0') + out
    rest = Math.floor(rest / 62)
  } while (rest > 0)
  return out.padStart(width, '0')
}

/** The checksum of a key's random part. */
export const checksumOf = (random: string): string => base62(zlib.crc32(random) >>> 0, CHECKSUM_LENGTH)

/** The stored form of a key: SHA-256, hex. */
export const hashKey = (key: string): string => crypto.createHash('sha256').update(key, 'utf8').digest('hex')

/** A fresh key, its lookup id and its hash. */
export function newApiKey (): { key: string, prefix: string, hash: string } {
  let random = ''
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[crypto.randomInt(62)]
  const key = `${KEY_PREFIX}${random}${checksumOf(random)}`
  return { key, prefix: lookupIdOf(key), hash: hashKey(key) }
}

/** The lookup id of a well-formed key. */
export const lookupIdOf = (key: string): string => key.slice(0, KEY_PREFIX.length + LOOKUP_RANDOM_LENGTH)

/** Why a bearer value that starts with `cbk_` is not a key, or undefined when it is well formed. */
export function malformation (key: string): string | undefined {
  if (!API_KEY_PATTERN.test(key)) return 'malformed API key'
  const random = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_LENGTH)
  if (checksumOf(random) !== key.slice(KEY_PREFIX.length + RANDOM_LENGTH)) return 'malformed API key (checksum)'
  return undefined
}

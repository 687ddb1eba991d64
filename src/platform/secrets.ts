/**
 * The deployment secret that seals sync tokens and delta cursors (src/platform/sync/sync.ts): TOKEN_SECRET, or, when
 * it is unset, a random 32-byte secret created once in DATA_DIR (file `token-secret`, mode 0600) and read back at
 * every start, so tokens survive a restart. Like the dev signing key (auth/dev-keys.ts), the file is written aside
 * and linked into place: processes starting together on one DATA_DIR keep one secret.
 *
 * With DATABASE_URL set and no TOKEN_SECRET the file is used as well (existing deployments keep starting), and the
 * start logs TOKEN_SECRET_WARNING: instances that do not share DATA_DIR each make their own secret, so a token one
 * of them issues is refused (410) by the others until they are given one shared TOKEN_SECRET.
 *
 * @example
 *   const config = withTokenSecret(loadConfig(process.env))   // config.tokenSecret is set
 */
import { writeOnce } from './write-once.ts'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { ConfigError, TOKEN_SECRET_MIN_LENGTH, type Config } from '../config.ts'

const FILE = 'token-secret'

/** Where the token secret of `dataDir` is kept (DATA_DIR as `loadConfig` resolves it). */
export function tokenSecretFile (dataDir: string): string {
  return path.join(dataDir, FILE)
}

/** What a start logs when several instances may each make their own secret. */
export const TOKEN_SECRET_WARNING =
  'TOKEN_SECRET is unset: sync tokens are sealed with a secret kept in DATA_DIR. Instances that do not share ' +
  'DATA_DIR refuse each other\'s tokens (410): give all of them one TOKEN_SECRET (README, "Configuration").'

function readSecret (file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/** Reads the token secret kept in `dataDir`, creating it (32 random bytes, base64url, mode 0600) on first use. */
export function loadOrCreateTokenSecret (dataDir: string): string {
  const file = tokenSecretFile(dataDir)
  let secret = readSecret(file)
  if (secret === undefined) {
    writeOnce(file, `${crypto.randomBytes(32).toString('base64url')}\n`)
    secret = readSecret(file)
  }
  if (secret === undefined || secret.length < TOKEN_SECRET_MIN_LENGTH) {
    throw new ConfigError(
      'TOKEN_SECRET',
      `is unset, and ${file} does not hold a secret of at least ${TOKEN_SECRET_MIN_LENGTH} characters ` +
        '(delete the file to have a new one made: tokens issued before then answer 410)'
    )
  }
  return secret
}

/** The configuration with its token secret: TOKEN_SECRET as set, or the one kept in DATA_DIR. */
export function withTokenSecret (config: Config): Config {
  if (config.tokenSecret !== undefined) return config
  return Object.freeze({ ...config, tokenSecret: loadOrCreateTokenSecret(config.dataDir) })
}

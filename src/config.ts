/**
 * Configuration: read once from the environment in `server.ts`, frozen, and passed down.
 * Nothing else reads `process.env`, so tests build apps with their own values.
 *
 * A bad value stops the process at start with one line naming the variable
 * (runtime contract, "Configuration").
 */
import path from 'node:path'

export interface Config {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  /** postgres://… selects PostgreSQL; undefined selects embedded PGlite. */
  readonly databaseUrl: string | undefined
  /** Optional separate login for the application (a NOSUPERUSER NOBYPASSRLS role); migrations use databaseUrl. */
  readonly databaseAppUrl: string | undefined
  readonly dataDir: string
  readonly oidc: {
    readonly issuer: string | undefined
    readonly jwksUrl: string | undefined
    readonly audience: string | undefined
    readonly tenantClaim: string
    readonly rolesClaim: string
  }
  readonly idpWebhookSecret: string | undefined
  readonly idpWebhookSecretPrevious: string | undefined
  readonly redisUrl: string | undefined
  readonly rateLimit: { readonly capacity: number, readonly refillPerSec: number }
  readonly logLevel: string
  readonly smtpUrl: string | undefined
  /** Maximum JSON body size in bytes (413 above it). */
  readonly bodyLimit: number
  /** Start background workers (automation jobs, series window extension) in this process. */
  readonly workers: boolean
  /** Hosts, addresses or CIDR ranges that automation webhooks may call although private or loopback (AUTOMATION_WEBHOOK_ALLOW, comma-separated). */
  readonly automationWebhookAllow: readonly string[]
  /** S3-compatible object storage (S3_BUCKET set); undefined keeps objects as files under `dataDir/objects`. */
  readonly s3: S3Config | undefined
}

export interface S3Config {
  readonly bucket: string
  /** another S3-compatible server (MinIO, Ceph, R2…); undefined = AWS S3 of the region */
  readonly endpoint: string | undefined
  readonly region: string
  /** static keys; undefined = the SDK's default credential chain (environment, profile, instance role…) */
  readonly credentials: { readonly accessKeyId: string, readonly secretAccessKey: string } | undefined
  /** `endpoint/bucket/key` addressing instead of `bucket.endpoint/key` */
  readonly forcePathStyle: boolean
  /** public base address of the bucket (or a CDN in front of it); objects are then linked there */
  readonly publicUrl: string | undefined
}

export class ConfigError extends Error {
  constructor (readonly variable: string, reason: string) {
    super(`invalid configuration: ${variable} ${reason}`)
    this.name = 'ConfigError'
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

type Env = Record<string, string | undefined>

function str (env: Env, name: string): string | undefined {
  const v = env[name]
  return v === undefined || v === '' ? undefined : v
}

function int (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const n = Number(raw)
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`)
  return n
}

function url (env: Env, name: string, protocols: string[]): string | undefined {
  const raw = str(env, name)
  if (raw === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(name, `is not a valid URL: "${raw}"`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`)
  }
  return raw
}

function bool (env: Env, name: string, fallback: boolean): boolean {
  const raw = str(env, name)
  if (raw === undefined) return fallback
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(name, `must be true or false, got "${raw}"`)
}

const S3_VARIABLES = ['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_FORCE_PATH_STYLE', 'S3_PUBLIC_URL']
// S3's rules for bucket names: 3-63 lowercase letters, digits, dots and hyphens, a letter or digit at each end
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/
const REGION = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/

/** S3_BUCKET turns S3 on; the other S3_* variables mean nothing without it, so they are refused alone. */
function s3 (env: Env): S3Config | undefined {
  const bucket = str(env, 'S3_BUCKET')
  if (bucket === undefined) {
    const stray = S3_VARIABLES.find(name => str(env, name) !== undefined)
    if (stray !== undefined) throw new ConfigError(stray, 'needs S3_BUCKET to be set as well')
    return undefined
  }
  if (!BUCKET.test(bucket) || bucket.includes('..')) {
    throw new ConfigError('S3_BUCKET', `must be a bucket name (3 to 63 lowercase letters, digits, dots and hyphens), got "${bucket}"`)
  }
  const region = str(env, 'S3_REGION') ?? 'us-east-1'
  if (!REGION.test(region)) throw new ConfigError('S3_REGION', `must be a region name such as eu-west-1, got "${region}"`)
  const accessKeyId = str(env, 'S3_ACCESS_KEY_ID')
  const secretAccessKey = str(env, 'S3_SECRET_ACCESS_KEY')
  if (accessKeyId !== undefined && secretAccessKey === undefined) throw new ConfigError('S3_ACCESS_KEY_ID', 'needs S3_SECRET_ACCESS_KEY to be set as well')
  if (secretAccessKey !== undefined && accessKeyId === undefined) throw new ConfigError('S3_SECRET_ACCESS_KEY', 'needs S3_ACCESS_KEY_ID to be set as well')
  const endpoint = url(env, 'S3_ENDPOINT', ['http:', 'https:'])?.replace(/\/+$/, '')
  const publicUrl = url(env, 'S3_PUBLIC_URL', ['http:', 'https:'])?.replace(/\/+$/, '')
  if (publicUrl !== undefined && /[?#]/.test(publicUrl)) throw new ConfigError('S3_PUBLIC_URL', `must be a base address without query or fragment, got "${publicUrl}"`)
  return {
    bucket,
    endpoint,
    region,
    credentials: accessKeyId !== undefined && secretAccessKey !== undefined ? { accessKeyId, secretAccessKey } : undefined,
    // servers other than AWS mostly address buckets by path
    forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', endpoint !== undefined),
    publicUrl
  }
}

/**
 * Builds the frozen configuration from an environment map.
 *
 * @example
 *   const config = loadConfig({ PORT: '0', DATA_DIR: '/tmp/x' })
 */
export function loadConfig (env: Env = {}): Config {
  const port = int(env, 'PORT', 8080, 0, 65535)
  const host = str(env, 'HOST') ?? '127.0.0.1'
  const baseUrl = (url(env, 'BASE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/+$/, '')
  const logLevel = str(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)

  const config: Config = {
    port,
    host,
    baseUrl,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseAppUrl: url(env, 'DATABASE_APP_URL', ['postgres:', 'postgresql:']),
    dataDir: path.resolve(str(env, 'DATA_DIR') ?? './data'),
    oidc: {
      issuer: url(env, 'OIDC_ISSUER', ['http:', 'https:']),
      jwksUrl: url(env, 'OIDC_JWKS_URL', ['http:', 'https:']),
      audience: str(env, 'OIDC_AUDIENCE'),
      tenantClaim: str(env, 'OIDC_TENANT_CLAIM') ?? 'tenant_id',
      rolesClaim: str(env, 'OIDC_ROLES_CLAIM') ?? 'roles'
    },
    idpWebhookSecret: str(env, 'IDP_WEBHOOK_SECRET'),
    idpWebhookSecretPrevious: str(env, 'IDP_WEBHOOK_SECRET_PREVIOUS'),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    rateLimit: {
      capacity: int(env, 'RATE_LIMIT_CAPACITY', 1000, 1, 10_000_000),
      refillPerSec: int(env, 'RATE_LIMIT_REFILL_PER_SEC', 20, 1, 1_000_000)
    },
    logLevel,
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    bodyLimit: int(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 64 * 1_048_576),
    workers: bool(env, 'WORKERS', true),
    automationWebhookAllow: (str(env, 'AUTOMATION_WEBHOOK_ALLOW') ?? '').split(',').map(s => s.trim()).filter(s => s !== ''),
    s3: s3(env)
  }
  if (config.oidc.jwksUrl !== undefined && config.oidc.issuer === undefined) {
    throw new ConfigError('OIDC_JWKS_URL', 'needs OIDC_ISSUER to be set as well')
  }
  return Object.freeze(config)
}

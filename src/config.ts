/**
 * Configuration: read once from the environment in `server.ts`, frozen, and passed down.
 * Nothing else reads `process.env`, so tests build apps with their own values.
 *
 * A bad value stops the process at start with one line naming the variable
 * (runtime contract, "Configuration").
 */
import { isLocale, LOCALES, type Locale } from './platform/i18n/i18n.ts'
import net from 'node:net'
import path from 'node:path'
import { isSupportedCountry, type CountryCode } from 'libphonenumber-js/min'

export interface Config {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  /** postgres://… selects PostgreSQL; undefined selects embedded PGlite. */
  readonly databaseUrl: string | undefined
  /** Optional separate login for the application (a NOSUPERUSER NOBYPASSRLS role); migrations use databaseUrl. */
  readonly databaseAppUrl: string | undefined
  /**
   * Login for work that spans tenants (background workers, resolving a public page's handle): a role
   * with BYPASSRLS (or a superuser). Undefined = databaseUrl. Checked at start (docs/deployment.md).
   */
  readonly databaseWorkerUrl: string | undefined
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
  /**
   * The key that seals sync tokens and delta cursors (TOKEN_SECRET, at least 32 characters). Undefined when unset:
   * `buildApp` then reads, or creates once, a random secret kept under `dataDir` (src/platform/secrets.ts), and its
   * modules get a config that carries it (`ctx.config`).
   */
  readonly tokenSecret: string | undefined
  /** The previous key (TOKEN_SECRET_PREVIOUS): what it sealed is still accepted, so a rotation answers no 410. */
  readonly tokenSecretPrevious: string | undefined
  readonly redisUrl: string | undefined
  readonly rateLimit: { readonly capacity: number, readonly refillPerSec: number }
  /** The bucket of each client address, for requests without a valid token. */
  readonly anonymousRateLimit: { readonly capacity: number, readonly refillPerSec: number }
  /**
   * Fastify's `trustProxy` (TRUST_PROXY): false = the socket's peer is the client and
   * X-Forwarded-For is ignored; a number of proxy hops; or the proxies' addresses and CIDR ranges.
   */
  readonly trustProxy: boolean | number | readonly string[]
  readonly logLevel: string
  readonly smtpUrl: string | undefined
  /** Public address of the web app that mails link to (APP_URL; default BASE_URL), without a trailing slash. */
  readonly appUrl: string
  /** From address of notification e-mail (SMTP_FROM; default no-reply@<host of BASE_URL>). */
  readonly smtpFrom: string
  /** Maximum JSON body size in bytes (413 above it). */
  readonly bodyLimit: number
  /**
   * Start every background loop in this process (src/workers.ts: automation, webhook deliveries, notifications,
   * series windows, retention).
   */
  readonly workers: boolean
  /**
   * Apply pending migrations at start (MIGRATE_AT_START, default true); false when a separate step
   * runs them as the tables' owner (`npm run db:migrate`, docs/deployment.md).
   */
  readonly migrateAtStart: boolean
  /**
   * Hosts, addresses or CIDR ranges that automation webhooks may call although private or loopback
   * (AUTOMATION_WEBHOOK_ALLOW, comma-separated).
   */
  readonly automationWebhookAllow: readonly string[]
  /**
   * Failed automation executions in a row after which the rule is paused (AUTOMATION_PAUSE_AFTER_FAILURES; 0 = never).
   */
  readonly automationPauseAfterFailures: number
  /** S3-compatible object storage (S3_BUCKET set); undefined keeps objects as files under `dataDir/objects`. */
  readonly s3: S3Config | undefined
  /**
   * Browser origins allowed to call the API cross-origin (CORS_ORIGINS, comma-separated; `*` = any); empty = CORS off.
   */
  readonly corsOrigins: readonly string[]
  /** How long finished rows are kept (RETENTION_*; docs/retention.md). */
  readonly retention: RetentionConfig
  /**
   * How long a sync token answers, in milliseconds: RETENTION_CHANGES less a day (`syncWindowMs(retention)`; 30 days
   * by default); null when RETENTION_CHANGES is `off` (a token is never too old).
   */
  readonly syncWindowMs: number | null
  /** Bearer token of `GET /metrics` (METRICS_TOKEN); undefined = no metrics route (404). */
  readonly metricsToken: string | undefined
  /**
   * How long this process serves an anonymous public space page and a public space's anonymous calendar feed from
   * memory (PUBLIC_PAGE_CACHE_MS, default 5 000, at most the 60 s the page's Cache-Control allows any cache; 0 = off).
   */
  readonly publicPageCacheMs: number
  /**
   * How long this process keeps whether a user may use their token (USER_GATE_CACHE_MS, default 5 s): a deactivation
   * by the identity provider applied by another instance refuses their token within this time.
   */
  readonly userGateCacheMs: number
  /**
   * The region of contacts' phone numbers typed without a country code (PHONE_DEFAULT_REGION: an ISO 3166-1 alpha-2
   * code such as FR); a request's `phone_region` overrides it. Undefined: such numbers are kept as typed and flagged
   * invalid (docs/contacts.md, "Phone numbers").
   */
  readonly phoneDefaultRegion: CountryCode | undefined
  /**
   * The language of guest texts (mails, problems shown to guests) when neither the guest nor the tenant has one
   * (DEFAULT_LOCALE: en, de, fr or es; default en; docs/guests.md).
   */
  readonly defaultLocale: Locale
  /**
   * Bounds of the anonymous guest routes (docs/guests.md, "Abuse"): public registrations and guest answers per client
   * address an hour (GUEST_LIMIT_PER_ADDRESS, default 20), public registrations per event a minute
   * (GUEST_LIMIT_PER_EVENT, default 300).
   */
  readonly guestLimits: { readonly perAddressPerHour: number, readonly perEventPerMinute: number }
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

/**
 * RETENTION_*: how long rows nobody needs any more are kept, in milliseconds; null = kept forever
 * (`off`). The retention job (src/platform/retention.ts) prunes them in batches.
 */
export interface RetentionConfig {
  /** processed domain events (outbox), counted from processed_at (RETENTION_OUTBOX, 7d) */
  readonly outbox: number | null
  /** sent, failed and undeliverable notifications, from created_at (RETENTION_NOTIFICATIONS, 30d) */
  readonly notifications: number | null
  /** Idempotency-Key answers, from created_at, never inside their replay window (RETENTION_IDEMPOTENCY_KEYS, 24h) */
  readonly idempotencyKeys: number | null
  /** identity-provider deliveries seen, from received_at (RETENTION_IDP_DELIVERIES, 90d) */
  readonly idpDeliveries: number | null
  /** finished automation executions, from created_at (RETENTION_EXECUTIONS, 90d) */
  readonly executions: number | null
  /** the newest executions of each rule kept whatever their age (RETENTION_EXECUTIONS_KEEP_PER_RULE, 100) */
  readonly executionsKeepPerRule: number
  /**
   * finished outbound webhook deliveries (succeeded, or failed after their last retry), from their last attempt
   * (RETENTION_WEBHOOK_DELIVERIES, 30d); pending ones (due, waiting for a retry, in flight) never
   */
  readonly webhookDeliveries: number | null
  /** the attempts of webhook deliveries, from when each started (RETENTION_WEBHOOK_ATTEMPTS, 30d) */
  readonly webhookAttempts: number | null
  /** revoked calendar feed tokens, from revoked_at (RETENTION_FEED_TOKENS, 30d); live tokens never */
  readonly feedTokens: number | null
  /**
   * guests' links (docs/guests.md), from when they were revoked or expired (RETENTION_GUEST_TOKENS, 30d); live links
   * never
   */
  readonly guestTokens: number | null
  /**
   * the log of changes of incremental sync, from when a change was written (RETENTION_CHANGES, 31d, at least 2d);
   * a sync token answers for this period less a day (`syncWindowMs`); null (`off`): kept forever
   */
  readonly changes: number | null
  /**
   * the tenant audit log's entries, from when the change was made (RETENTION_AUDIT, 365d, at least 1d; docs/audit.md);
   * deleted from the start of each tenant's chain, sealed entries only
   */
  readonly audit: number | null
  /** rows deleted by one statement at most (RETENTION_BATCH_SIZE, 1000) */
  readonly batchSize: number
}

/**
 * What the log of changes is kept beyond the sync window: a day, for transactions that run across the window's edge
 * (a token's snapshot may precede the changes it must still answer).
 */
export const SYNC_WINDOW_MARGIN_MS = 86_400_000

/**
 * How long a sync token answers: RETENTION_CHANGES less SYNC_WINDOW_MARGIN_MS (30 days by default); null when the
 * log is kept forever (`off`): a token is then never too old.
 */
export function syncWindowMs (retention: RetentionConfig): number | null {
  return retention.changes === null ? null : retention.changes - SYNC_WINDOW_MARGIN_MS
}

export class ConfigError extends Error {
  constructor (readonly variable: string, reason: string) {
    super(`invalid configuration: ${variable} ${reason}`)
    this.name = 'ConfigError'
  }
}

/** The shortest TOKEN_SECRET and TOKEN_SECRET_PREVIOUS accepted. */
export const TOKEN_SECRET_MIN_LENGTH = 32

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

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal']

/**
 * TRUST_PROXY: unset or false, true (every hop: only behind a proxy nothing bypasses), a hop count, or addresses / CIDR
 * ranges.
 */
function trustProxy (env: Env): boolean | number | readonly string[] {
  const raw = str(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false' || raw === '0') return false
  if (raw === 'true') return true
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw)
    if (hops > 10) throw new ConfigError('TRUST_PROXY', `must be at most 10 proxy hops, got ${hops}`)
    return hops
  }
  const entries = raw.split(',').map(e => e.trim()).filter(e => e !== '')
  for (const e of entries) {
    if (PROXY_NAMES.includes(e)) continue
    const [addr, bits, extra] = e.split('/')
    const family = net.isIP(addr ?? '')
    const max = family === 4 ? 32 : 128
    if (family === 0 || extra !== undefined || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > max))) {
      throw new ConfigError(
        'TRUST_PROXY',
        'must be true, false, a hop count, or proxy addresses and CIDR ranges ' +
        `(or ${PROXY_NAMES.join(', ')}), got "${e}"`
      )
    }
  }
  if (entries.length === 0) throw new ConfigError('TRUST_PROXY', `must name at least one proxy address, got "${raw}"`)
  return Object.freeze(entries)
}

/** CORS_ORIGINS: `*`, or origins (`scheme://host[:port]`, no path), comma-separated; unset = none. */
function corsOrigins (env: Env): readonly string[] {
  const entries = (str(env, 'CORS_ORIGINS') ?? '').split(',').map(e => e.trim()).filter(e => e !== '')
  for (const e of entries) {
    if (e === '*') continue
    let parsed: URL | undefined
    try {
      parsed = new URL(e)
    } catch {}
    if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== e) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `must be * or origins such as https://app.example.org (scheme, host and port, no path or trailing slash), got "${e}"`
      )
    }
  }
  return Object.freeze(entries)
}

const S3_VARIABLES = [
  'S3_ENDPOINT',
  'S3_REGION',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_FORCE_PATH_STYLE',
  'S3_PUBLIC_URL'
]
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
    throw new ConfigError(
      'S3_BUCKET',
      `must be a bucket name (3 to 63 lowercase letters, digits, dots and hyphens), got "${bucket}"`
    )
  }
  const region = str(env, 'S3_REGION') ?? 'us-east-1'
  if (!REGION.test(region)) {
    throw new ConfigError('S3_REGION', `must be a region name such as eu-west-1, got "${region}"`)
  }
  const accessKeyId = str(env, 'S3_ACCESS_KEY_ID')
  const secretAccessKey = str(env, 'S3_SECRET_ACCESS_KEY')
  if (accessKeyId !== undefined && secretAccessKey === undefined) {
    throw new ConfigError('S3_ACCESS_KEY_ID', 'needs S3_SECRET_ACCESS_KEY to be set as well')
  }
  if (secretAccessKey !== undefined && accessKeyId === undefined) {
    throw new ConfigError('S3_SECRET_ACCESS_KEY', 'needs S3_ACCESS_KEY_ID to be set as well')
  }
  const endpoint = url(env, 'S3_ENDPOINT', ['http:', 'https:'])?.replace(/\/+$/, '')
  const publicUrl = url(env, 'S3_PUBLIC_URL', ['http:', 'https:'])?.replace(/\/+$/, '')
  if (publicUrl !== undefined && /[?#]/.test(publicUrl)) {
    throw new ConfigError('S3_PUBLIC_URL', `must be a base address without query or fragment, got "${publicUrl}"`)
  }
  return {
    bucket,
    endpoint,
    region,
    credentials:
      accessKeyId !== undefined && secretAccessKey !== undefined ? { accessKeyId, secretAccessKey } : undefined,
    // servers other than AWS mostly address buckets by path
    forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', endpoint !== undefined),
    publicUrl
  }
}

/**
 * A mailbox: `local@domain`, optionally as `Display Name <local@domain>` (no line breaks, no angle brackets in the
 * name).
 */
const MAILBOX = /^(?:[^<>\r\n"]*[^<>\r\n\s"] ?<[^\s<>@"]+@[^\s<>@"]+>|[^\s<>@"]+@[^\s<>@"]+)$/

/** APP_URL and SMTP_FROM: where notification mails link to, and whom they come from. */
function mail (env: Env, baseUrl: string): { appUrl: string, smtpFrom: string } {
  const appUrl = url(env, 'APP_URL', ['http:', 'https:'])?.replace(/\/+$/, '') ?? baseUrl
  if (/[?#]/.test(appUrl)) {
    throw new ConfigError('APP_URL', `must be a base address without query or fragment, got "${appUrl}"`)
  }
  const smtpFrom = str(env, 'SMTP_FROM') ?? `no-reply@${new URL(baseUrl).hostname}`
  if (str(env, 'SMTP_FROM') !== undefined && !MAILBOX.test(smtpFrom)) {
    throw new ConfigError(
      'SMTP_FROM',
      `must be an e-mail address, or "Name <address>", got ${JSON.stringify(smtpFrom)}`
    )
  }
  return { appUrl, smtpFrom }
}

const DURATION_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }
/** Ten years: a longer retention is a typo (days for minutes) rather than a decision. */
const RETENTION_MAX_MS = 3650 * 86_400_000

/**
 * One RETENTION_* period: `<n>m`, `<n>h` or `<n>d`, or `off` (kept forever). 0, negative, a bare
 * number, other text and more than ten years are refused; so is less than `minMs`.
 */
function retentionPeriod (env: Env, name: string, fallback: string, minMs = 60_000, minText = '1m'): number | null {
  const raw = str(env, name)?.trim() ?? fallback
  if (raw === 'off') return null
  const m = /^(\d{1,9})([mhd])$/.exec(raw)
  if (m === null) {
    throw new ConfigError(
      name,
      `must be a duration such as 30d, 24h or 90m (or off to keep rows forever), got "${raw}"`
    )
  }
  const ms = Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? 0)
  if (ms === 0) throw new ConfigError(name, `must be longer than 0 (off keeps rows forever), got "${raw}"`)
  if (ms < minMs) throw new ConfigError(name, `must be at least ${minText}, got "${raw}"`)
  if (ms > RETENTION_MAX_MS) throw new ConfigError(name, `must be at most 3650d (ten years), got "${raw}"`)
  return ms
}

function retention (env: Env): RetentionConfig {
  return Object.freeze({
    outbox: retentionPeriod(env, 'RETENTION_OUTBOX', '7d'),
    notifications: retentionPeriod(env, 'RETENTION_NOTIFICATIONS', '30d'),
    // a key answers repeats for 24 hours (src/platform/http/idempotency.ts): keeping it less would mean nothing
    idempotencyKeys: retentionPeriod(
      env,
      'RETENTION_IDEMPOTENCY_KEYS',
      '24h',
      86_400_000,
      '24h, the replay window of Idempotency-Key'
    ),
    idpDeliveries: retentionPeriod(env, 'RETENTION_IDP_DELIVERIES', '90d'),
    executions: retentionPeriod(env, 'RETENTION_EXECUTIONS', '90d'),
    executionsKeepPerRule: int(env, 'RETENTION_EXECUTIONS_KEEP_PER_RULE', 100, 0, 100_000),
    webhookDeliveries: retentionPeriod(env, 'RETENTION_WEBHOOK_DELIVERIES', '30d'),
    webhookAttempts: retentionPeriod(env, 'RETENTION_WEBHOOK_ATTEMPTS', '30d'),
    feedTokens: retentionPeriod(env, 'RETENTION_FEED_TOKENS', '30d'),
    guestTokens: retentionPeriod(env, 'RETENTION_GUEST_TOKENS', '30d'),
    // a sync token answers for this period less a day (syncWindowMs): at least a day of window
    changes: retentionPeriod(
      env,
      'RETENTION_CHANGES',
      '31d',
      2 * 86_400_000,
      '2d (the sync window is this period less a day)'
    ),
    audit: retentionPeriod(env, 'RETENTION_AUDIT', '365d', 86_400_000, '1d'),
    batchSize: int(env, 'RETENTION_BATCH_SIZE', 1000, 1, 100_000)
  })
}

/** TOKEN_SECRET, TOKEN_SECRET_PREVIOUS: a key of at least TOKEN_SECRET_MIN_LENGTH characters (never echoed). */
function tokenSecret (env: Env, name: string): string | undefined {
  const secret = str(env, name)
  if (secret !== undefined && secret.length < TOKEN_SECRET_MIN_LENGTH) {
    throw new ConfigError(
      name,
      `must be at least ${TOKEN_SECRET_MIN_LENGTH} characters (such as the output of "openssl rand -base64 32"), ` +
        `got ${secret.length}`
    )
  }
  return secret
}

/** METRICS_TOKEN: what a scraper sends as `Authorization: Bearer <token>`; unset = no metrics route. */
function metricsToken (env: Env): string | undefined {
  const token = str(env, 'METRICS_TOKEN')
  if (token !== undefined && !/^[\x21-\x7e]{16,512}$/.test(token)) {
    throw new ConfigError(
      'METRICS_TOKEN',
      `must be 16 to 512 printable characters without spaces, got ${token.length} character(s)`
    )
  }
  return token
}

/** PHONE_DEFAULT_REGION: a region that has phone numbers, ISO 3166-1 alpha-2 in any case (kept upper case). */
function defaultLocale (env: Env): Locale {
  const raw = str(env, 'DEFAULT_LOCALE')?.trim()
  if (raw === undefined || raw === '') return 'en'
  if (!isLocale(raw)) throw new ConfigError('DEFAULT_LOCALE', `must be one of ${LOCALES.join(', ')}, got "${raw}"`)
  return raw
}

function phoneDefaultRegion (env: Env): CountryCode | undefined {
  const raw = str(env, 'PHONE_DEFAULT_REGION')?.trim()
  if (raw === undefined || raw === '') return undefined
  const region = raw.toUpperCase()
  if (!/^[A-Z]{2}$/.test(region) || !isSupportedCountry(region)) {
    throw new ConfigError(
      'PHONE_DEFAULT_REGION',
      `must be an ISO 3166-1 alpha-2 region that has phone numbers, such as FR, DE or US, got "${raw}"`
    )
  }
  return region
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
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)
  }

  const rateLimit = {
    capacity: int(env, 'RATE_LIMIT_CAPACITY', 1000, 1, 10_000_000),
    refillPerSec: int(env, 'RATE_LIMIT_REFILL_PER_SEC', 20, 1, 1_000_000)
  }
  const retentionConfig = retention(env)
  const config: Config = {
    port,
    host,
    baseUrl,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseAppUrl: url(env, 'DATABASE_APP_URL', ['postgres:', 'postgresql:']),
    databaseWorkerUrl: url(env, 'DATABASE_WORKER_URL', ['postgres:', 'postgresql:']),
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
    tokenSecret: tokenSecret(env, 'TOKEN_SECRET'),
    tokenSecretPrevious: tokenSecret(env, 'TOKEN_SECRET_PREVIOUS'),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    rateLimit,
    // by default as generous as one caller's bucket: set lower where many anonymous clients are not expected
    anonymousRateLimit: {
      capacity: int(env, 'RATE_LIMIT_ANON_CAPACITY', rateLimit.capacity, 1, 10_000_000),
      refillPerSec: int(env, 'RATE_LIMIT_ANON_REFILL_PER_SEC', rateLimit.refillPerSec, 1, 1_000_000)
    },
    trustProxy: trustProxy(env),
    logLevel,
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    ...mail(env, baseUrl),
    bodyLimit: int(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 64 * 1_048_576),
    workers: bool(env, 'WORKERS', true),
    migrateAtStart: bool(env, 'MIGRATE_AT_START', true),
    automationWebhookAllow: (str(env, 'AUTOMATION_WEBHOOK_ALLOW') ?? '')
      .split(',')
      .map(s => s.trim())
      .filter(s => s !== ''),
    automationPauseAfterFailures: int(env, 'AUTOMATION_PAUSE_AFTER_FAILURES', 5, 0, 1000),
    publicPageCacheMs: int(env, 'PUBLIC_PAGE_CACHE_MS', 5000, 0, 60_000),
    userGateCacheMs: int(env, 'USER_GATE_CACHE_MS', 5000, 0, 3_600_000),
    s3: s3(env),
    corsOrigins: corsOrigins(env),
    retention: retentionConfig,
    syncWindowMs: syncWindowMs(retentionConfig),
    metricsToken: metricsToken(env),
    phoneDefaultRegion: phoneDefaultRegion(env),
    defaultLocale: defaultLocale(env),
    guestLimits: {
      perAddressPerHour: int(env, 'GUEST_LIMIT_PER_ADDRESS', 20, 1, 1_000_000),
      perEventPerMinute: int(env, 'GUEST_LIMIT_PER_EVENT', 300, 1, 1_000_000)
    }
  }
  if (config.databaseAppUrl !== undefined && config.databaseUrl === undefined) {
    throw new ConfigError('DATABASE_APP_URL', 'needs DATABASE_URL to be set as well')
  }
  if (config.databaseWorkerUrl !== undefined && config.databaseUrl === undefined) {
    throw new ConfigError('DATABASE_WORKER_URL', 'needs DATABASE_URL to be set as well')
  }
  // a previous key means nothing alone (leaving the secret kept in DATA_DIR: TOKEN_SECRET=new, PREVIOUS=the file's)
  if (config.tokenSecretPrevious !== undefined && config.tokenSecret === undefined) {
    throw new ConfigError('TOKEN_SECRET_PREVIOUS', 'needs TOKEN_SECRET to be set as well')
  }
  if (config.oidc.jwksUrl !== undefined && config.oidc.issuer === undefined) {
    throw new ConfigError('OIDC_JWKS_URL', 'needs OIDC_ISSUER to be set as well')
  }
  return Object.freeze(config)
}

/**
 * Dev only: prints a bearer token signed by the local dev key in DATA_DIR, resolved exactly as the
 * server resolves it (`loadConfig`: DATA_DIR, default ./data, relative to the working directory,
 * which `npm run` sets to the project's). Stdout is the token alone (`TOKEN=$(npm run --silent token -- …)`);
 * stderr names the key it signed with (its kid and file), to compare with the server's start-up log.
 *
 *   npm run token -- --sub alice --tenant acme [--roles admin,member] [--email a@x.io [--email-verified]] [--org org-1]
 *     [--ttl 3600]
 */
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Config } from '../src/config.ts'
import { DEV_ISSUER, devKeyFile, loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'

const { values } = parseArgs({
  options: {
    sub: { type: 'string' },
    tenant: { type: 'string' },
    roles: { type: 'string', default: 'member' },
    email: { type: 'string' },
    'email-verified': { type: 'boolean', default: false },
    org: { type: 'string' },
    ttl: { type: 'string', default: '3600' }
  }
})

if (values.sub === undefined || values.tenant === undefined) {
  process.stderr.write(
    'usage: npm run token -- --sub <user> --tenant <tenant> [--roles admin,member] [--email e [--email-verified]] ' +
    '[--org o] [--ttl seconds]\n'
  )
  process.exit(2)
}
let config: Config
try {
  config = loadConfig(process.env)
} catch (err) {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`${err.message}\n`)
  process.exit(2)
}
if (config.oidc.issuer !== undefined) {
  process.stderr.write(
    'OIDC_ISSUER is set: the server does not trust dev tokens; get a token from your identity provider\n'
  )
  process.exit(2)
}
const keys = await loadOrCreateDevKeys(config.dataDir)
const token = await signDevToken(keys, {
  sub: values.sub,
  tenant: values.tenant,
  roles: values.roles.split(',').map(r => r.trim()).filter(Boolean),
  ttl: Number(values.ttl),
  tenantClaim: config.oidc.tenantClaim,
  rolesClaim: config.oidc.rolesClaim,
  ...(values.email !== undefined ? { email: values.email } : {}),
  ...(values['email-verified'] ? { emailVerified: true } : {}),
  ...(values.org !== undefined ? { orgId: values.org } : {})
})
process.stderr.write(
  `signed with the dev key ${keys.kid} in ${devKeyFile(config.dataDir)} (issuer ${DEV_ISSUER}; ` +
  'a server trusts it when started with this DATA_DIR and no OIDC_ISSUER)\n'
)
process.stdout.write(`${token}\n`)

/**
 * Dev only: prints a bearer token signed by the local dev key in DATA_DIR.
 *
 *   npm run token -- --sub alice --tenant acme [--roles admin,member] [--email a@x.io] [--org org-1] [--ttl 3600]
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.ts'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'

const { values } = parseArgs({
  options: {
    sub: { type: 'string' },
    tenant: { type: 'string' },
    roles: { type: 'string', default: 'member' },
    email: { type: 'string' },
    org: { type: 'string' },
    ttl: { type: 'string', default: '3600' }
  }
})

if (values.sub === undefined || values.tenant === undefined) {
  process.stderr.write('usage: npm run token -- --sub <user> --tenant <tenant> [--roles admin,member] [--email e] [--org o] [--ttl seconds]\n')
  process.exit(2)
}
const config = loadConfig(process.env)
if (config.oidc.issuer !== undefined) {
  process.stderr.write('OIDC_ISSUER is set: the server does not trust dev tokens; get a token from your identity provider\n')
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
  ...(values.org !== undefined ? { orgId: values.org } : {})
})
process.stdout.write(`${token}\n`)

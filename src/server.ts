/**
 * The process: configuration, the app, HTTP timeouts, graceful shutdown. Logs are JSON (pino);
 * pretty only when stdout is a terminal.
 */
import closeWithGrace from 'close-with-grace'
import { ConfigError, loadConfig, type Config } from './config.ts'
import { buildApp } from './app.ts'
import { compilePending } from './platform/http/compile-on-demand.ts'
import { UnsupportedPg } from './platform/db/pipeline.ts'

let config: Config
try {
  config = loadConfig(process.env)
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`)
    process.exit(1)
  }
  throw err
}

/**
 * A configuration error found while starting (a database login that cannot work, a `pg` the pool does not support):
 * one line, exit 1.
 */
const refuse = (err: unknown): never => {
  if (err instanceof ConfigError || err instanceof UnsupportedPg) {
    process.stderr.write(`${err.message}\n`)
    process.exit(1)
  }
  throw err
}

const { app } = await buildApp(config, {
  logger: {
    level: config.logLevel,
    ...(process.stdout.isTTY
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'HH:MM:ss', ignore: 'pid,hostname' } } }
      : {})
  }
}).catch(refuse)

// Slow or never-ending requests are cut: headers within 10 s, a whole request within 30 s.
app.server.headersTimeout = 10_000
app.server.requestTimeout = 30_000
app.server.keepAliveTimeout = 72_000

closeWithGrace({ delay: 10_000 }, async ({ err }) => {
  if (err !== undefined) app.log.error({ err }, 'shutting down after an error')
  await app.close()
})

try {
  const address = await app.listen({ port: config.port, host: config.host })
  // the schemas not compiled yet, while the first requests are already served
  compilePending().catch((err: unknown) => { app.log.error({ err }, 'a route schema does not compile') })
  app.log.info(
    `collaboration service listening on ${address} (database: ` +
    `${config.databaseUrl === undefined ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL'})`
  )
} catch (err) {
  app.log.error({ err }, 'could not start')
  process.exit(1)
}

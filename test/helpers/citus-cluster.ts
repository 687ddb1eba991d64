/**
 * A throwaway Citus cluster for the suite: a coordinator and two workers, each a throwaway
 * PostgreSQL cluster (throwaway-pg.ts) started with `shared_preload_libraries=citus`. It runs when the
 * machine's PostgreSQL has the `citus` extension installed; building or installing Citus is not the
 * project's business (docs/scale-out.md says how an operator gets it).
 *
 * `scripts/run-tests.mjs` starts one cluster per test run (this file run as a script: it prints one
 * JSON line with the coordinator's admin URL and the workers', then waits for SIGTERM and removes
 * the clusters) and hands the URLs to the test processes in TEST_CITUS_URL and TEST_CITUS_WORKERS.
 * Each suite then gets a database of its own that is really distributed (`createDistributedDatabase`):
 * a copy, on every node, of a template database made once per run the way an operator's is (the
 * extension on every node, the workers added to the coordinator, the service's migrations run on it,
 * which distribute its tables).
 */
import path from 'node:path'
import { createDatabase } from '../../src/platform/db/database.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { withClient } from './pg-client.ts'
import { createThrowawayCluster, type ThrowawayCluster } from './throwaway-pg.ts'

const WORKERS = 2

export interface CitusCluster {
  coordinatorUrl: string
  workerUrls: string[]
  destroy: () => Promise<void>
}

export async function startCitusCluster (): Promise<CitusCluster> {
  // 4 shards a table (Citus' default is 32): each suite's database distributes its 26 tables in seconds, and the
  // tables of one tenant still sit on one worker while tenants spread over both
  const settings = { shared_preload_libraries: 'citus', max_connections: '300', 'citus.shard_count': '4' }
  const nodes: ThrowawayCluster[] = []
  try {
    for (let i = 0; i <= WORKERS; i++) nodes.push(await createThrowawayCluster({ settings }))
  } catch (err) {
    await Promise.all(nodes.map(n => n.destroy()))
    throw err
  }
  const [coordinator, ...workers] = nodes as [ThrowawayCluster, ...ThrowawayCluster[]]
  return {
    coordinatorUrl: coordinator.url,
    workerUrls: workers.map(w => w.url),
    destroy: async () => { await Promise.all(nodes.map(n => n.destroy())) }
  }
}

function withDatabase (url: string, name: string): string {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/**
 * Creates database `name` on every node with the extension in it, and adds the workers to the
 * coordinator's metadata; or, given a `template` (`migratedTemplate`), copies that database on every
 * node. Returns the URL of the database on the coordinator (where the service connects).
 */
export async function createDistributedDatabase (
  coordinatorUrl: string,
  workerUrls: string[],
  name: string,
  template?: string
): Promise<string> {
  const nodes = [coordinatorUrl, ...workerUrls]
  if (template !== undefined) {
    // a copy of a distributed, migrated database on every node: its metadata, shards and policies come along
    await Promise.all(nodes.map(url => withClient(url, c => c.query(`create database ${name} template ${template}`))))
    return withDatabase(coordinatorUrl, name)
  }
  await Promise.all(
    nodes.map(async url => {
      await withClient(url, c => c.query(`create database ${name}`))
      await withClient(withDatabase(url, name), c => c.query('create extension citus'))
    })
  )
  const url = withDatabase(coordinatorUrl, name)
  await withClient(url, async c => {
    await c.query('select citus_set_coordinator_host($1, $2)', ['127.0.0.1', new URL(coordinatorUrl).port])
    for (const w of workerUrls) await c.query('select citus_add_node($1, $2)', ['127.0.0.1', Number(new URL(w).port)])
  })
  return url
}

export async function dropDistributedDatabase (
  coordinatorUrl: string,
  workerUrls: string[],
  name: string
): Promise<void> {
  for (const url of [coordinatorUrl, ...workerUrls]) {
    await withClient(url, c => c.query(`drop database if exists ${name} with (force)`))
  }
}

/**
 * A distributed database migrated once per cluster (the service's migrations distribute its tables),
 * from which each suite's database is copied: distributing 26 tables takes seconds, a copy a fraction.
 */
export async function migratedTemplate (cluster: Pick<CitusCluster, 'coordinatorUrl' | 'workerUrls'>): Promise<string> {
  const name = 'collab_citus_template'
  const url = await createDistributedDatabase(cluster.coordinatorUrl, cluster.workerUrls, name)
  const handle = await createDatabase({ databaseUrl: url })
  try {
    await migrate(handle)
  } finally {
    await handle.close()
  }
  // a template is copied only while nobody is connected to it: Citus' maintenance daemon and the
  // coordinator's cached connections are, so they are closed and kept out
  await Promise.all([cluster.coordinatorUrl, ...cluster.workerUrls].map(url => withClient(url, async (c) => {
    await c.query(`alter database ${name} allow_connections false`)
    await c.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name])
  })))
  return name
}

// run as a script by scripts/run-tests.mjs: start, migrate the template, print the URLs, wait to be stopped
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const cluster = await startCitusCluster()
  const template = await migratedTemplate(cluster).catch(async (err: unknown) => { await cluster.destroy(); throw err })
  process.stdout.write(
    `${JSON.stringify({ coordinatorUrl: cluster.coordinatorUrl, workerUrls: cluster.workerUrls, template })}\n`
  )
  let stopping = false
  const stop = (): void => {
    if (stopping) return
    stopping = true
    void cluster.destroy().finally(() => process.exit(0))
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.stdin.on('end', stop)
  process.stdin.resume()
}

/**
 * A migrated PostgreSQL database made once per test run, from which each suite's database is copied
 * (`create database … template …`, a fraction of a second, where migrating a fresh one takes seconds).
 * scripts/run-tests.mjs runs this file as a script when TEST_DATABASE_URL is set, passes the name on as
 * TEST_PG_TEMPLATE and drops the template when the run ends (`drop` below).
 *
 *   node --import tsx test/helpers/pg-template.ts create <admin url>   prints the template's name
 *   node --import tsx test/helpers/pg-template.ts drop <admin url> <name>
 */
import crypto from 'node:crypto'
import path from 'node:path'
import { createDatabase } from '../../src/platform/db/database.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { withClient } from './pg-client.ts'

function urlOf (adminUrl: string, name: string): string {
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  return u.toString()
}

export async function createPgTemplate (adminUrl: string): Promise<string> {
  const name = `collab_test_template_${crypto.randomBytes(4).toString('hex')}`
  await withClient(adminUrl, c => c.query(`create database ${name}`))
  const handle = await createDatabase({ databaseUrl: urlOf(adminUrl, name) })
  try {
    await migrate(handle)
  } finally {
    await handle.close()
  }
  // a template is copied only while nobody is connected to it
  await withClient(adminUrl, c => c.query(`alter database ${name} allow_connections false`))
  return name
}

export async function dropPgTemplate (adminUrl: string, name: string): Promise<void> {
  if (!/^collab_test_template_[0-9a-f]+$/.test(name)) throw new Error(`not a test template: ${name}`)
  await withClient(adminUrl, c => c.query(`drop database if exists ${name} with (force)`))
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const [command, adminUrl, name] = process.argv.slice(2)
  if (command === 'create' && adminUrl !== undefined) process.stdout.write(`${await createPgTemplate(adminUrl)}\n`)
  else if (command === 'drop' && adminUrl !== undefined && name !== undefined) await dropPgTemplate(adminUrl, name)
  else throw new Error('usage: pg-template.ts create <admin url> | drop <admin url> <name>')
}

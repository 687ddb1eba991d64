/**
 * Tenant isolation on a Citus cluster (runs when scripts/run-tests.mjs started one: TEST_CITUS_URL).
 * Tenant A's rows are made through the API in every tenant table the fixtures reach; then tenant B's
 * scope (`withTenant`, the request path: `SET LOCAL`s propagated to the workers, role collab_app)
 * runs every kind of statement the service sends against A's rows of every tenant table: reads
 * routed to one shard and spread over all of them, updates and deletes of both kinds, INSERT …
 * SELECT, and row locks. It gets nothing and changes nothing; A's rows, counted by the superuser
 * before and after, and A's reads through the API stay the same. On the workers themselves, every
 * shard of every tenant table forces row-level security, and collab_app scoped to B sees none of
 * the rows the superuser sees there.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { withTenant } from '../src/platform/db/tenant.ts'
import { citusNodes, useTestApp } from './helpers/build-app.ts'
import { newWorld, type World } from './helpers/fixtures.ts'

const nodes = citusNodes()

interface Table { name: string, column: string | null, columns: string }

/** Tables the application role may only insert into and read (the audit log, migrate.ts). */
const APPEND_ONLY = new Set(['audit_log', 'audit_heads'])

void describe(
  'citus: tenant isolation on the workers',
  {
    skip:
      nodes === undefined
        ? 'needs a Citus cluster (TEST_CITUS_URL; scripts/run-tests.mjs starts one when the extension is installed)'
        : false
  },
  () => {
    const t = useTestApp('citus')
    let admin: pg.Client
    let a: World
    let b: World
    let tables: Table[] = []
    const countsOfA = async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {}
      for (const table of tables) {
        const r = await admin.query<{ n: string }>(`select count(*) as n from ${table.name} where tenant_id = $1`, [
          a.tenantId
        ])
        out[table.name] = Number(r.rows[0]?.n)
      }
      return out
    }

    before(async () => {
      admin = new pg.Client({ connectionString: t.database.migrationUrl })
      admin.on('error', () => {}) // the suite's database is dropped (with force) before this client is closed
      await admin.connect()
      // every tenant table, with a column outside every key to write in place (set c = c)
      tables = (
        await admin.query<Table>(`
      select p.logicalrelid::regclass::text as name,
             (select a.attname from pg_attribute a
               where a.attrelid = p.logicalrelid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
                 and a.attidentity = ''
                 and a.attname <> 'tenant_id'
                 and not exists (select from pg_index i where i.indrelid = p.logicalrelid and a.attnum = any(i.indkey))
               order by a.attnum limit 1) as column,
             (select string_agg(quote_ident(a.attname), ', ' order by a.attnum) from pg_attribute a
               where a.attrelid = p.logicalrelid and a.attnum > 0 and not a.attisdropped
                 and a.attgenerated = '') as columns
      from pg_dist_partition p where p.partmethod = 'h' order by 1`)
      ).rows
      a = await newWorld(t, 'citus-a')
      b = await newWorld(t, 'citus-b')
      // A's resources of every kind the route fixtures make (the counts below say which tables got rows)
      for (const key of [
        'contacts/:id',
        'spaces/:id/members/:user_id',
        'spaces/:id/managers/:user_id',
        'spaces/:id/contacts/:contact_id',
        'spaces/:id/parents/:parent_id',
        'events/:id/spaces/:space_id',
        'events/:id/attendees/:contact_id',
        'events/:id/managers/:user_id',
        'events/:id/milestones/:milestone_event_id',
        'events/:id/links/:target_id',
        'events/:id/documents/:document_id',
        'attachments/:id',
        'series/:id',
        'events/:id/automations/:rule_id',
        'automation/rules/:rule_id/executions/:id',
        'public/spaces/:id'
      ]) {
        await a.need(key)
      }
    })
    after(async () => {
      await admin?.end()
    })

    it('runs on a distributed database: every tenant table distributed by tenant_id on two ' +
      'active workers', async () => {
      const workers = await admin.query<{ n: string }>(
        "select count(*) as n from pg_dist_node where noderole = 'primary' and isactive and groupid <> 0"
      )
      assert.equal(Number(workers.rows[0]?.n), 2)
      const own = await admin.query<{ name: string }>(`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind = 'r'
        and exists (select from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
                    where i.indrelid = c.oid and i.indisprimary and a.attname = 'tenant_id')
        and not exists (select from pg_dist_partition p where p.logicalrelid = c.oid and p.partmethod = 'h')`)
      assert.deepEqual(own.rows, [], 'tenant tables left on the coordinator')
      assert.ok(tables.length >= 20, `${tables.length} distributed tables`)
      const placements = await admin.query<{
        n: string
      }>(`select count(distinct p.nodeport) as n from pg_dist_shard_placement p
      join pg_dist_shard s using (shardid) join pg_dist_partition d using (logicalrelid) where d.partmethod = 'h'`)
      assert.equal(Number(placements.rows[0]?.n), 2, 'shards on both workers')
    })

    it("gives tenant B nothing of A's rows and lets it change none, through every kind of statement", async () => {
      const before = await countsOfA()
      const filled = Object.entries(before)
        .filter(([, n]) => n > 0)
        .map(([name]) => name)
      assert.ok(filled.length >= 10, `A has rows in ${filled.join(', ')}`)
      const seen: string[] = []
      for (const table of tables) {
        const name = sql.raw(table.name)
        await withTenant(t.ctx.db, { tenantId: b.tenantId, userId: 'intruder' }, async trx => {
          const rows = async (q: ReturnType<typeof sql>): Promise<number> => {
            const r = await q.execute(trx)
            return Number(r.numAffectedRows ?? BigInt(r.rows.length))
          }
          const one = (q: ReturnType<typeof sql>): Promise<number> => rows(q)
          const counted = async (q: ReturnType<typeof sql<{ n: string }>>): Promise<number> =>
            Number((await q.execute(trx)).rows[0]?.n)
          const results: Record<string, number> = {
            'router read': await counted(
              sql<{ n: string }>`select count(*) as n from ${name} where tenant_id = ${a.tenantId}`
            ),
            'multi-shard read': await counted(sql<{ n: string }>`select count(*) as n from ${name}`),
            'insert … select': await one(sql`insert into ${name} (${sql.raw(table.columns)}) overriding system value
            select ${sql.raw(table.columns)} from ${name} where tenant_id = ${a.tenantId} on conflict do nothing`)
          }
          // the audit log's tables take no update, delete or row lock from the application at all (docs/audit.md):
          // those are refused below, each in its own transaction
          if (APPEND_ONLY.has(table.name)) {
            for (const [kind, n] of Object.entries(results)) {
              assert.equal(n, 0, `${kind} on ${table.name} reached ${n} of A's rows`)
            }
            seen.push(table.name)
            return
          }
          results['row lock'] = await one(sql`select 1 from ${name} where tenant_id = ${a.tenantId} for update`)
          results['router delete'] = await one(sql`delete from ${name} where tenant_id = ${a.tenantId}`)
          results['multi-shard delete'] = await one(sql`delete from ${name} where tenant_id <> ${b.tenantId}`)
          if (table.column !== null) {
            const column = sql.ref(table.column)
            results['router update'] = await one(
              sql`update ${name} set ${column} = ${column} where tenant_id = ${a.tenantId}`
            )
            results['multi-shard update'] = await one(
              sql`update ${name} set ${column} = ${column} where tenant_id <> ${b.tenantId}`
            )
          }
          for (const [kind, n] of Object.entries(results)) {
            assert.equal(n, 0, `${kind} on ${table.name} reached ${n} of A's rows`)
          }
          seen.push(table.name)
        })
      }
      assert.equal(seen.length, tables.length)
      for (const table of tables.filter(x => APPEND_ONLY.has(x.name))) {
        const name = sql.raw(table.name)
        const column = sql.ref(table.column ?? 'tenant_id')
        for (const statement of [
          sql`select 1 from ${name} where tenant_id = ${a.tenantId} for update`,
          sql`delete from ${name} where tenant_id = ${a.tenantId}`,
          sql`delete from ${name} where tenant_id <> ${b.tenantId}`,
          sql`update ${name} set ${column} = ${column} where tenant_id = ${a.tenantId}`
        ]) {
          await assert.rejects(withTenant(t.ctx.db, { tenantId: b.tenantId, userId: 'intruder' }, trx =>
            statement.execute(trx)), /permission denied/, `${table.name}: ${statement.compile(t.ctx.db).sql}`)
        }
      }
      // a row written under B's scope with A's tenant id (routed to A's shard) is refused by the policy's check
      await assert.rejects(
        withTenant(t.ctx.db, { tenantId: b.tenantId }, async trx => {
          await sql`insert into contacts (tenant_id, owner_id, first_name)
            values (${a.tenantId}, 'intruder', 'planted')`.execute(
            trx
          )
        }),
        (err: { code?: string }) => err.code === '42501'
      )
      await assert.rejects(
        withTenant(t.ctx.db, { tenantId: b.tenantId }, async trx => {
          await sql`insert into contacts (tenant_id, owner_id, first_name) values (${a.tenantId}, 'intruder', 'planted')
        on conflict (tenant_id, id) do update set first_name = excluded.first_name`.execute(trx)
        }),
        (err: { code?: string }) => err.code === '42501'
      )
      assert.deepEqual(await countsOfA(), before, "A's rows, counted by the superuser, are all still there")
      const contacts = await a.call(a.tokens.alice, { method: 'GET', url: '/api/v1/contacts' })
      assert.equal(contacts.statusCode, 200)
      assert.ok(contacts.json<{ total: number }>().total >= 1)
    })

    it("forces row-level security on every shard, and B's scope on a worker sees none of the rows " +
      'its shards hold', async () => {
      for (const table of tables) {
        const r = await admin.query<{ result: string; success: boolean }>(
          'select result, success from run_command_on_shards($1, $$select relrowsecurity and relforcerowsecurity ' +
          "from pg_class where oid = '%s'::regclass$$)",
          [table.name]
        )
        assert.ok(r.rows.length > 0)
        for (const row of r.rows) assert.deepEqual([row.success, row.result], [true, 't'], `a shard of ${table.name}`)
      }
      const shards = (
        await admin.query<{ shard: string; port: number }>(`
      select s.logicalrelid::regclass::text || '_' || s.shardid as shard, p.nodeport as port
      from pg_dist_shard s join pg_dist_shard_placement p using (shardid) where s.logicalrelid = 'contacts'::regclass`)
      ).rows
      const database = new URL(t.database.migrationUrl ?? '').pathname.slice(1)
      let held = 0
      for (const { shard, port } of shards) {
        const worker =
          (nodes?.workerUrls ?? []).find(u => Number(new URL(u).port) === port) ??
          assert.fail(`no worker on port ${port}`)
        const url = new URL(worker)
        url.pathname = `/${database}`
        const c = new pg.Client({ connectionString: url.toString() })
        await c.connect()
        try {
          held += Number(
            (await c.query<{ n: string }>(`select count(*) as n from ${shard} where tenant_id = $1`, [a.tenantId]))
              .rows[0]?.n
          )
          await c.query('begin')
          await c.query(`set local app.tenant_id = ${pg.escapeLiteral(b.tenantId)}`)
          await c.query('set local role collab_app')
          const seen = await c.query<{ n: string }>(`select count(*) as n from ${shard}`)
          assert.equal(Number(seen.rows[0]?.n), 0, `collab_app as B on the worker at ${port} sees rows of ${shard}`)
          const changed = await c.query(`update ${shard} set first_name = first_name`)
          assert.equal(changed.rowCount, 0)
          await c.query('rollback')
        } finally {
          await c.end()
        }
      }
      assert.ok(held >= 1, "the workers hold A's contact")
    })
  }
)

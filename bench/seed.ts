/**
 * Seeds the benchmark data set with the service's own tables and SQL (generate_series, no HTTP):
 * 100 tenants; 1 000 000 contacts (40 % in the largest tenant, `bench-t000`; numbers with their E.164 form, as the
 * service writes them; 1 % sharing a number and 0.05 % an e-mail with another contact); 100 000 events in the
 * largest tenant spread over eight years (six past, two ahead) plus 300 in each other tenant; a
 * public showcase space with 1 000 linked events and every user of the largest tenant as a member;
 * attendees (100 000 in the showcase's events) and weekly series when those tables exist. Every
 * count but the tenants and users scales with `scale`.
 *
 * Bulk loading drops the secondary (non-unique) indexes of contacts and events and recreates them
 * from their own definitions afterwards, so the schema ends exactly as the migrations made it.
 */
import type { SqlRunner } from './sql-runner.ts'

export const TENANTS = 100
export const BIG_TENANT = 'bench-t000'
export const ORG = 'org-main'
export const BIG_USERS = 1000
export const OTHER_USERS = 50
export const SHOWCASE_HANDLE = 'bench-showcase'
/** The automation rule of the largest tenant whose execution history the bench lists */
export const BENCH_RULE = '00000000-0000-4000-8000-00000000b001'

export const tenantId = (n: number): string => `bench-t${String(n).padStart(3, '0')}`
export const userId = (n: number): string => `u${String(n).padStart(4, '0')}`

export interface SeedSizes {
  scale: number
  contacts: number
  bigContacts: number
  bigEvents: number
  otherEvents: number
  bigSpaces: number
  otherSpaces: number
  showcaseEvents: number
  showcaseAttendees: number
  /** rows of the showcase's activity feed */
  showcaseActivity: number
  /** executions of the largest tenant's one automation rule (BENCH_RULE) */
  ruleExecutions: number
  seriesPerTenant: number
}

export function sizesFor (scale: number): SeedSizes {
  const n = (full: number, min: number) => Math.max(min, Math.round(full * scale))
  const contacts = n(1_000_000, 1000)
  return {
    scale,
    contacts,
    bigContacts: Math.round(contacts * 0.4),
    bigEvents: n(100_000, 500),
    otherEvents: n(300, 10),
    bigSpaces: n(200, 20),
    otherSpaces: 10,
    showcaseEvents: n(1000, 20),
    showcaseAttendees: n(100_000, 200),
    seriesPerTenant: n(20, 2),
    showcaseActivity: n(50_000, 500),
    ruleExecutions: n(100_000, 1000)
  }
}

// Syllables for synthetic last names: 20^3 = 8 000 distinct names.
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'sto',
  'vak',
  'dor',
  'bel',
  'tin',
  'mar',
  'sel',
  'gru',
  'pha',
  'nov',
  'zel',
  'quin',
  'bra',
  'kus',
  'wen',
  'hol'
]
const FIRST_NAMES = [
  'Anna',
  'Ben',
  'Chloe',
  'David',
  'Emma',
  'Felix',
  'Grace',
  'Hugo',
  'Ines',
  'Jonas',
  'Klara',
  'Liam',
  'Mia',
  'Noah',
  'Olivia',
  'Paul',
  'Quinn',
  'Rosa',
  'Sami',
  'Tara',
  'Umar',
  'Vera',
  'Wim',
  'Xena',
  'Yann',
  'Zoe',
  'Aiko',
  'Bruno',
  'Carla',
  'Dario',
  'Elif',
  'Farid',
  'Gina',
  'Hana',
  'Ivo',
  'Jana',
  'Kofi',
  'Lena',
  'Milan',
  'Nora'
]
const COMPANIES = [
  'Acme',
  'Globex',
  'Initech',
  'Umbrella',
  'Hooli',
  'Vandelay',
  'Stark',
  'Wayne',
  'Tyrell',
  'Soylent',
  'Cyberdyne',
  'Wonka',
  'Gringotts',
  'Oscorp',
  'Aperture',
  'Monarch'
]

const arr = (xs: string[]): string => `array[${xs.map(x => `'${x}'`).join(',')}]`

/** The last name of synthetic contact number `g` (the same formula as the SQL below). */
export function lastNameOf (h: number): string {
  const s = SYLLABLES
  const name = `${s[h % 20] ?? ''}${s[Math.floor(h / 20) % 20] ?? ''}${s[Math.floor(h / 400) % 20] ?? ''}`
  return name.charAt(0).toUpperCase() + name.slice(1)
}

const TENANTS_CTE = `tenants as (
  select g as n, 'bench-t' || lpad(g::text, 3, '0') as tid,
         case when g = 0 then ${BIG_USERS} else ${OTHER_USERS} end as users
  from generate_series(0, ${TENANTS - 1}) g)`

/** Names of the tables the seed fills, for the "what exists" checks. */
async function tableExists (db: SqlRunner, table: string): Promise<boolean> {
  const rows = await db.query<{ ok: boolean }>('select to_regclass($1) is not null as ok', [table])
  return rows[0]?.ok === true
}

async function columnsOf (db: SqlRunner, table: string): Promise<Set<string>> {
  const rows = await db.query<{ column_name: string }>(
    'select column_name from information_schema.columns where table_schema = current_schema() and table_name = $1',
    [table]
  )
  return new Set(rows.map(r => r.column_name))
}

/** Drops the non-unique secondary indexes of a table and returns a function recreating them. */
async function withoutSecondaryIndexes (db: SqlRunner, table: string): Promise<() => Promise<void>> {
  const defs = await db.query<{ name: string, def: string }>(`
    select c.relname as name, pg_get_indexdef(i.indexrelid) as def
    from pg_index i join pg_class c on c.oid = i.indexrelid
    where i.indrelid = $1::regclass and not i.indisprimary and not i.indisunique`, [table])
  for (const d of defs) await db.exec(`drop index if exists ${d.name}`)
  return async () => { for (const d of defs) await db.exec(d.def) }
}

export type Log = (line: string) => void

async function step (log: Log, what: string, fn: () => Promise<void>): Promise<void> {
  const t0 = performance.now()
  await fn()
  log(`  seed: ${what} (${((performance.now() - t0) / 1000).toFixed(1)} s)`)
}

export async function seed (db: SqlRunner, sizes: SeedSizes, log: Log): Promise<void> {
  if (db.kind === 'pg') {
    await db.exec("set maintenance_work_mem = '256MB'; set synchronous_commit = off")
  }
  const z = sizes

  await step(log, `users (${BIG_USERS} + ${(TENANTS - 1) * OTHER_USERS})`, async () => {
    await db.exec(`
      with ${TENANTS_CTE}
      insert into users (tenant_id, id, email, display_name, first_name, last_name, username, state)
      select t.tid, 'u' || lpad(u::text, 4, '0'), 'u' || u || '@' || t.tid || '.example',
             'User ' || u, (${arr(FIRST_NAMES)})[1 + u % ${FIRST_NAMES.length}], 'Member' || u, 'user' || u, 'active'
      from tenants t cross join lateral generate_series(1, t.users) u`)
  })

  await step(log, 'spaces, members and managers', async () => {
    await db.exec(`
      with ${TENANTS_CTE}
      insert into spaces (tenant_id, org_id, creator_id, title, description, visibility, status, published_at,
                          position, created_at)
      select t.tid, '${ORG}', 'u' || lpad((1 + g % t.users)::text, 4, '0'), 'Space ' || g,
             'Where group ' || g || ' meets', case g % 4 when 0 then 40 when 2 then 30 else 20 end, 'published',
             now() - interval '400 days', g, now() - interval '400 days'
      from tenants t
      cross join lateral generate_series(1, case when t.n = 0 then ${z.bigSpaces} else ${z.otherSpaces} end) g;

      insert into spaces (tenant_id, org_id, creator_id, title, description, visibility, status, published_at,
                          public_handle, created_at)
      values ('${BIG_TENANT}', '${ORG}', 'u0001', 'Showcase', 'The public showcase of the largest tenant', 40,
              'published', now() - interval '400 days', '${SHOWCASE_HANDLE}', now() - interval '400 days');
      insert into public_spaces (handle, space_id, tenant_id)
      select public_handle, id, tenant_id from spaces where tenant_id = '${BIG_TENANT}'
        and public_handle = '${SHOWCASE_HANDLE}';

      with sp as (select tenant_id, array_agg(id order by id) as ids from spaces where title like 'Space %'
        group by tenant_id)
      insert into space_members (tenant_id, space_id, user_id, role, created_at)
      select u.tenant_id, sp.ids[1 + ((substr(u.id, 2)::int * 7 + k * 13) % array_length(sp.ids, 1))], u.id,
             'space_member', now() - ((substr(u.id, 2)::int * 37 + k * 11) % 380) * interval '1 day'
      from users u join sp using (tenant_id) cross join generate_series(0, 4) k
      on conflict do nothing;

      insert into space_members (tenant_id, space_id, user_id, role, created_at, is_active, removed_at)
      select u.tenant_id, s.id, u.id, case when u.id = 'u0001' then 'space_owner' else 'space_member' end,
             now() - (substr(u.id, 2)::int % 360) * interval '1 day',
             substr(u.id, 2)::int % 25 <> 0,
             case when substr(u.id, 2)::int % 25 = 0 then now() - interval '3 days' end
      from users u join spaces s on s.tenant_id = u.tenant_id and s.public_handle = '${SHOWCASE_HANDLE}';

      insert into space_managers (tenant_id, space_id, user_id, role, status, accepted_at)
      select s.tenant_id, s.id, 'u' || lpad(g::text, 4, '0'), 'space_admin', 'active', now() - interval '300 days'
      from spaces s cross join generate_series(2, 6) g
      where s.public_handle = '${SHOWCASE_HANDLE}';`)
  })

  const restoreContacts = await withoutSecondaryIndexes(db, 'contacts')
  // Each contact's number is written as the service writes one (contacts.phones.ts, withPhones): the text as typed,
  // its E.164 form, and `invalid_phones` '{}' (every field read, none invalid); not null, "not read yet", which the
  // service's worker would read later and which duplicates by phone and an exact phone search do not see.
  // Likely duplicates beside the name + company groups (every name key of the largest tenant is held by 50 contacts,
  // as the key repeats with g mod 8 000): contact g shares something with a partner g - 99 k (the same tenant):
  //   - 1 % share a number (k = 1): g mod 200 = 50 has its partner's number as primary, typed the national way
  //     ('044 000 12 34'); g mod 200 = 150 keeps its own primary and has its partner's number as work phone;
  //   - 0.05 % share an e-mail that differs in case only: g mod 2 000 = 1 000 has `initcap` of the e-mail of
  //     g - 99 k, k = 1 … 40 from one block of 2 000 to the next, so that the pairs spread over every first name (the
  //     e-mail key's first part; with k = 1 they all fell on one). Sparse on purpose: a page of e-mail groups walks
  //     its whole budget of key entries (SCAN_BUDGET, 20 000) and finds about ten, the worst case of
  //     GET /contacts/duplicates?reason=email. Not surrounding spaces: the service trims an e-mail before storing it
  //     (docs/contacts.md, "E-mail"), so a stored one never has them.
  const digits = (n: string) => `lpad((${n} % 10000000)::text, 7, '0')`
  const international = (n: string) => `'+41 44 ' || ${digits(n)}`
  const national = (n: string) =>
    `'044 ' || substr(${digits(n)}, 1, 3) || ' ' || substr(${digits(n)}, 4, 2) || ' ' || substr(${digits(n)}, 6, 2)`
  const e164 = (n: string) => `'+4144' || ${digits(n)}`
  const lastName = (h: string) =>
    `initcap((${arr(SYLLABLES)})[1 + ${h} % 20] || (${arr(SYLLABLES)})[1 + (${h} / 20) % 20] || ` +
    `(${arr(SYLLABLES)})[1 + (${h} / 400) % 20])`
  const hashOf = (n: string) => `((${n}::bigint * 2654435761) % 8000)::int`
  await step(log, `contacts (${z.contacts}; 1 % sharing a number, 0.05 % an e-mail)`, async () => {
    await db.exec(`
      insert into contacts (tenant_id, org_id, owner_id, first_name, last_name, email, company, job_title,
                            phone_primary, phone_primary_e164, phone_work, phone_work_e164, invalid_phones, city,
                            country, tags, created_at, updated_at)
      select tid, '${ORG}', 'u' || lpad((1 + g % users)::text, 4, '0'), fn, ln,
             case when e = g then email else initcap(email) end, co,
             (array['Engineer','Manager','Designer','Sales','Founder','Teacher'])[1 + g % 6],
             case when shared = 'primary' then ${national('g - 99')} else ${international('g')} end,
             case when shared = 'primary' then ${e164('g - 99')} else ${e164('g')} end,
             case when shared = 'work' then ${international('g - 99')} end,
             case when shared = 'work' then ${e164('g - 99')} end,
             '{}',
             (array['Zurich','Berlin','Lyon','Porto','Oslo','Brno','Graz','Turin'])[1 + g % 8], 'CH',
             case when g % 5 = 0 then array['vip'] else '{}' end,
             now() - (g % 1500) * interval '1 day', now() - (g % 700) * interval '1 day'
      from (
        select g, e, shared,
               case when g <= ${z.bigContacts} then '${BIG_TENANT}'
                 else 'bench-t' || lpad((1 + g % ${TENANTS - 1})::text, 3, '0') end as tid,
               case when g <= ${z.bigContacts} then ${BIG_USERS} else ${OTHER_USERS} end as users,
               (${arr(FIRST_NAMES)})[1 + (g * 31) % ${FIRST_NAMES.length}] as fn,
               ${lastName('h')} as ln,
               (${arr(COMPANIES)})[1 + g % ${COMPANIES.length}] as co,
               -- the e-mail of contact e: its own (e = g) or its partner's
               lower((${arr(FIRST_NAMES)})[1 + (e * 31) % ${FIRST_NAMES.length}]) || '.'
                 || lower(${lastName(hashOf('e'))}) || e
                 || '@' || lower((${arr(COMPANIES)})[1 + e % ${COMPANIES.length}]) || '.example' as email
        from (
          select g, ${hashOf('g')} as h,
                 case when g > 4000 and g % 2000 = 1000 then g - 99 * (1 + (g / 2000) % 40) else g end as e,
                 case when g > 99 and g % 200 = 50 then 'primary'
                      when g > 99 and g % 200 = 150 then 'work' end as shared
          from generate_series(1, ${z.contacts}) g
        ) x
      ) c`)
  })
  await step(log, 'contacts indexes', restoreContacts)

  const restoreEvents = await withoutSecondaryIndexes(db, 'events')
  await step(log, `events (${z.bigEvents} + ${(TENANTS - 1) * z.otherEvents})`, async () => {
    await db.exec(`
      with ${TENANTS_CTE}
      insert into events (tenant_id, org_id, creator_id, title, description, address, start_dt, end_dt, timezone,
                          keywords, visibility, status, published_at, version, created_dt, created_at, updated_at)
      select t.tid, '${ORG}', 'u' || lpad((1 + g % t.users)::text, 4, '0'),
             (array['Meetup','Workshop','Talk','Retreat','Hackathon','Dinner','Course','Review'])[1 + g % 8]
               || ' ' || g,
             'Bring a laptop and questions. Session ' || g || ' of the programme, hosted by the local group.',
             'Street ' || (g % 500) || ', ' || (array['Zurich','Berlin','Lyon','Porto'])[1 + g % 4],
             st, st + (1 + g % 3) * interval '1 hour', 'Europe/Zurich', array['kw' || (g % 50), 'topic' || (g % 7)],
             case g % 10 when 0 then 40 when 6 then 30 when 7 then 30 when 8 then 10 when 9 then 10 else 20 end,
             case when g % 20 = 0 then 'draft' else 'published' end,
             case when g % 20 = 0 then null else st - interval '20 days' end,
             case when g % 20 = 0 then 0 else 1 end,
             st - interval '30 days', st - interval '30 days', st - interval '25 days'
      from tenants t
      cross join lateral generate_series(1, case when t.n = 0 then ${z.bigEvents} else ${z.otherEvents} end) g
      cross join lateral (select now() - interval '6 years'
                                 + (g::double precision
                                    / case when t.n = 0 then ${z.bigEvents} else ${z.otherEvents} end)
                                   * interval '8 years'
                                 + ((g::bigint * 7919) % 600) * interval '1 minute' as st) s`)
  })
  await step(log, 'events indexes', restoreEvents)

  await step(log, `event spaces (showcase: ${z.showcaseEvents} events)`, async () => {
    await db.exec(`
      with sp as (select tenant_id, array_agg(id order by id) as ids from spaces where title like 'Space %'
        group by tenant_id)
      insert into event_spaces (tenant_id, event_id, space_id, org_id)
      select e.tenant_id, e.id, sp.ids[1 + (e.id % array_length(sp.ids, 1))], '${ORG}'
      from events e join sp using (tenant_id);

      -- published public events, spread over the years (the public page, the public feed and anonymous readers
      -- see them)
      with showcase as (select tenant_id, id from spaces where public_handle = '${SHOWCASE_HANDLE}'),
           picked as (select e.id, row_number() over (order by e.id) as rn,
               greatest(1, count(*) over () / ${z.showcaseEvents}) as step
             from events e
             where e.tenant_id = '${BIG_TENANT}' and e.status = 'published' and e.visibility = 40)
      insert into event_spaces (tenant_id, event_id, space_id, org_id)
      select s.tenant_id, p.id, s.id, '${ORG}'
      from picked p cross join showcase s
      where (p.rn - 1) % p.step = 0 and (p.rn - 1) / p.step < ${z.showcaseEvents}`)
  })

  if (await tableExists(db, 'attendees')) {
    const cols = await columnsOf(db, 'attendees')
    if (['event_id', 'contact_id', 'status', 'is_checked_in'].every(c => cols.has(c))) {
      const perEvent = Math.max(1, Math.ceil(z.showcaseAttendees / z.showcaseEvents))
      const restore = await withoutSecondaryIndexes(db, 'attendees')
      await step(
        log,
        `attendees (${perEvent} in each showcase event, 3 in every other event of the largest tenant)`,
        async () => {
          await db.exec(`
          create temporary table bench_contacts as
            select id, (row_number() over (order by id) - 1)::int as rn from contacts where tenant_id = '${BIG_TENANT}';
          create index on bench_contacts (rn);
          create temporary table bench_attending as
            select e.tenant_id, e.id as event_id, e.start_dt,
                   case when es.space_id is not null then ${perEvent} else 3 end as n,
                   row_number() over (order by e.id)::int as en
            from events e
            left join event_spaces es on es.tenant_id = e.tenant_id and es.event_id = e.id
              and es.space_id = (select id from spaces
                                 where tenant_id = '${BIG_TENANT}' and public_handle = '${SHOWCASE_HANDLE}')
            where e.tenant_id = '${BIG_TENANT}' and e.status = 'published';
          insert into attendees (tenant_id, event_id, contact_id, org_id, status, is_checked_in, checked_in_at,
                                 responded_at)
          select a.tenant_id, a.event_id, c.id, '${ORG}',
                 (array['confirmed','confirmed','tentative','declined','invited','checked_in'])[1 + (a.en + k) % 6],
                 (a.en + k) % 6 = 5 and a.start_dt < now(),
                 case when (a.en + k) % 6 = 5 and a.start_dt < now() then a.start_dt end,
                 a.start_dt - interval '7 days'
          from bench_attending a
          cross join lateral generate_series(0, a.n - 1) k
          join bench_contacts c on c.rn = (a.en * 101 + k) % (select count(*) from bench_contacts)
          on conflict (tenant_id, event_id, contact_id) do nothing;
          drop table bench_contacts;
          drop table bench_attending;`)
        }
      )
      await step(log, 'attendees indexes', restore)
    } else {
      log('  seed: attendees table present with unknown columns: not seeded')
    }
  } else {
    log('  seed: no attendees table yet: not seeded')
  }

  if (await tableExists(db, 'event_series')) {
    await step(
      log,
      `weekly series (${z.seriesPerTenant} in the largest tenant, 200 occurrences, 20 attendees each)`,
      async () => {
        await db.exec(`
        insert into event_series (tenant_id, org_id, creator_id, title, description, start_dt, end_dt, timezone,
                                  visibility, status, freq, interval, repeat_days, ends_on, end_count, duration,
                                  published_at, version)
        select '${BIG_TENANT}', '${ORG}', 'u' || lpad((1 + g)::text, 4, '0'), 'Weekly group ' || g, 'Every week',
               date_trunc('week', now()) - interval '100 weeks' + interval '18 hours',
               date_trunc('week', now()) - interval '100 weeks' + interval '20 hours',
               'UTC', 40, 'published', 'weekly', 1, array[1], 'after_n', 200, '02:00:00',
               now() - interval '100 weeks', 1
        from generate_series(1, ${z.seriesPerTenant}) g;

        insert into events (tenant_id, org_id, creator_id, title, start_dt, end_dt, timezone, visibility, status,
                            published_at, version, series_id, series_index)
        select s.tenant_id, s.org_id, s.creator_id, s.title, s.start_dt + k * interval '1 week',
               s.end_dt + k * interval '1 week', 'UTC', 40, 'published', s.published_at, 1, s.id, k
        from event_series s cross join generate_series(0, 199) k
        where s.tenant_id = '${BIG_TENANT}';

        create temporary table bench_contacts as
          select id, (row_number() over (order by id) - 1)::int as rn from contacts where tenant_id = '${BIG_TENANT}';
        insert into attendees (tenant_id, event_id, contact_id, org_id, status, responded_at)
        select e.tenant_id, e.id, c.id, '${ORG}',
               (array['confirmed','tentative','declined','invited','checked_in'])[1 + (e.id + k) % 5],
               e.start_dt - interval '3 days'
        from events e cross join generate_series(0, 19) k
        join bench_contacts c on c.rn = (e.id * 37 + k) % (select count(*) from bench_contacts)
        where e.tenant_id = '${BIG_TENANT}' and e.series_id is not null
        on conflict (tenant_id, event_id, contact_id) do nothing;
        drop table bench_contacts;`)
      }
    )
  } else {
    log('  seed: no event_series table yet: series not seeded')
  }

  if (await tableExists(db, 'space_activity') && await tableExists(db, 'automation_rule_versions')) {
    await step(
      log,
      `activity feed (${z.showcaseActivity} rows in the showcase) and one rule's history ` +
      `(${z.ruleExecutions} executions)`,
      async () => {
        await db.exec(`
        insert into space_activity (tenant_id, space_id, type, resource_id, title, message, actor_id, created_at)
        select s.tenant_id, s.id, (array['event', 'member', 'announcement', 'contact', 'material'])[1 + g % 5],
               g::text, 'Item ' || g, 'Something happened (' || g || ')', 'u' || lpad((1 + g % 900)::text, 4, '0'),
               now() - g * interval '7 minutes'
        from spaces s cross join generate_series(1, ${z.showcaseActivity}) g
        where s.tenant_id = '${BIG_TENANT}' and s.public_handle = '${SHOWCASE_HANDLE}';

        insert into automation_rules (tenant_id, id, org_id, name, scope, event_type, schedule, actions, creator_id,
                                      created_at, updated_at)
        values ('${BIG_TENANT}', '${BENCH_RULE}', '${ORG}', 'Note every new event', 'GLOBAL', 'event.created',
                '{"event_type": "event.created"}', '[{"type": "activity", "message": "new: {{title}}"}]', 'u0001',
                now() - interval '400 days', now() - interval '400 days');
        insert into automation_rule_versions (tenant_id, rule_id, version, name, event_type, schedule, conditions,
                                              actions, scope, scope_id, created_by_kind, creator_id, creator_roles,
                                              org_id, created_at)
        select tenant_id, id, version, name, event_type, schedule, conditions, actions, scope, scope_id,
               created_by_kind, creator_id, creator_roles, org_id, created_at
        from automation_rules where tenant_id = '${BIG_TENANT}' and id = '${BENCH_RULE}';

        insert into automation_executions (tenant_id, rule_id, rule_version, trigger_key, trigger_type, trigger_payload,
                                           status, attempts, max_attempts, started_at, finished_at, conditions_met,
                                           action_results, error, created_at)
        select '${BIG_TENANT}', '${BENCH_RULE}', 1, 'outbox:' || g, 'event.created', jsonb_build_object('event_id', g),
               (array['succeeded', 'succeeded', 'succeeded', 'failed', 'skipped'])[1 + g % 5], 1, 3, t,
               t + interval '40 ms', g % 5 <> 4,
               '[]'::jsonb, case when g % 5 = 3 then 'the action failed' end, t
        from generate_series(1, ${z.ruleExecutions}) g
          cross join lateral (select now() - g * interval '3 minutes' as t) x;`)
      }
    )
  }

  // vacuumed as well as analyzed: with the visibility map set, index-only scans skip the heap, as they do on a
  // database that autovacuum has visited (right after a bulk load every lookup read the heap too)
  await step(log, 'vacuum analyze', async () => { await db.exec('vacuum analyze') })
}

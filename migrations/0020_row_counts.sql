-- Exact totals of the contacts list and of a rule's execution history without reading every row
-- (docs/performance.md, "Kept counts of contacts and executions").
--
-- Counted row by row, the contacts list's total read one index entry per contact the caller sees (400 000 in
-- the largest benchmark tenant: 200 – 500 ms a page, and a queue of such pages under load), and a rule's history
-- one entry per execution. row_counts keeps those counts as the event list's counts are kept (migration 0019):
-- delta rows appended by statement-level triggers, one per key a statement changed (never an update of a shared
-- row, so concurrent writers never wait on each other), folded by compact_row_counts(tenant) from the
-- retention job. A total is the sum of the rows of its keys.
--
--   list 'contacts':   k1 = organization ('' for a personal contact), k2 = owner, k3 = favourite ('true'/'false')
--   list 'executions': k1 = rule id, k2 = status, k3 = trigger type
--
-- On a Citus cluster the triggers are not created (triggers on distributed tables are refused): the service
-- sees that (pg_trigger) and counts row by row there, as before.

create table row_counts (
  tenant_id text not null,
  id bigint generated always as identity,
  list text not null,
  k1 text not null,
  k2 text not null,
  k3 text not null,
  n bigint not null,
  primary key (tenant_id, id)
);
create index row_counts_key on row_counts (tenant_id, list, k1, k2, k3) include (n);
-- the contacts a caller owns, whatever their organization
create index row_counts_k2 on row_counts (tenant_id, list, k2) include (k1, k3, n);
alter table row_counts enable row level security;
alter table row_counts force row level security;
create policy tenant_isolation on row_counts
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

-- a plpgsql branch is planned when it first runs: each names only the transition tables its statement kind has
create function contacts_count_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'contacts', coalesce(org_id, ''), owner_id, is_favorite::text, count(*) from new_rows group by 1, 3, 4, 5;
  elsif tg_op = 'DELETE' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'contacts', coalesce(org_id, ''), owner_id, is_favorite::text, -count(*) from old_rows group by 1, 3, 4, 5;
  else
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'contacts', k1, k2, k3, sum(d) from (
      select tenant_id, coalesce(org_id, '') as k1, owner_id as k2, is_favorite::text as k3, 1 as d from new_rows
      union all
      select tenant_id, coalesce(org_id, ''), owner_id, is_favorite::text, -1 from old_rows) changes
    group by tenant_id, k1, k2, k3
    having sum(d) <> 0;
  end if;
  return null;
end
$fn$;

create function executions_count_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'executions', rule_id::text, status, trigger_type, count(*) from new_rows group by 1, 3, 4, 5;
  elsif tg_op = 'DELETE' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'executions', rule_id::text, status, trigger_type, -count(*) from old_rows group by 1, 3, 4, 5;
  else
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'executions', k1, k2, k3, sum(d) from (
      select tenant_id, rule_id::text as k1, status as k2, trigger_type as k3, 1 as d from new_rows
      union all
      select tenant_id, rule_id::text, status, trigger_type, -1 from old_rows) changes
    group by tenant_id, k1, k2, k3
    having sum(d) <> 0;
  end if;
  return null;
end
$fn$;

-- folds a tenant's delta rows into one row per key; rows appended meanwhile stay as they are
create function compact_row_counts(tenant text) returns void language sql as $fn$
  with gone as (
    delete from row_counts where tenant_id = tenant
    returning list, k1, k2, k3, n)
  insert into row_counts (tenant_id, list, k1, k2, k3, n)
  select tenant, list, k1, k2, k3, sum(n) from gone
  group by list, k1, k2, k3
  having sum(n) <> 0;
$fn$;

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: the contact and execution counts are not kept by triggers; those lists count row by row';
    return;
  end if;
  create trigger contacts_counts_insert after insert on contacts
    referencing new table as new_rows for each statement execute function contacts_count_changes();
  create trigger contacts_counts_update after update on contacts
    referencing old table as old_rows new table as new_rows for each statement execute function contacts_count_changes();
  create trigger contacts_counts_delete after delete on contacts
    referencing old table as old_rows for each statement execute function contacts_count_changes();
  create trigger executions_counts_insert after insert on automation_executions
    referencing new table as new_rows for each statement execute function executions_count_changes();
  create trigger executions_counts_update after update on automation_executions
    referencing old table as old_rows new table as new_rows for each statement execute function executions_count_changes();
  create trigger executions_counts_delete after delete on automation_executions
    referencing old table as old_rows for each statement execute function executions_count_changes();
  -- what exists already
  insert into row_counts (tenant_id, list, k1, k2, k3, n)
  select tenant_id, 'contacts', coalesce(org_id, ''), owner_id, is_favorite::text, count(*) from contacts group by 1, 3, 4, 5;
  insert into row_counts (tenant_id, list, k1, k2, k3, n)
  select tenant_id, 'executions', rule_id::text, status, trigger_type, count(*) from automation_executions group by 1, 3, 4, 5;
end
$$;

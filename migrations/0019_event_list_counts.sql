-- Exact totals of the events list without reading every visible row (docs/performance.md, "Lists at scale").
--
-- A member's list is the union of disjoint visibility classes (public, their organization's, members-only in
-- their spaces) and the few events they created or manage (events.repository.ts, listEvents). Counted row by
-- row, the public and organization classes cost one index entry per event (27 000 entries, 30 – 60 ms, for a
-- member of the largest benchmark tenant), and the members-only class one probe of `events` per link of the
-- member's spaces. Two structures kept by triggers make both small:
--
--   * event_list_counts: how many listed events (not deleted, not draft clones) each (status, visibility,
--     organization, UTC month of start_dt) holds, as delta rows: every statement that inserts, updates or
--     deletes events appends one row per bucket it changed (never an update of a shared row, so concurrent
--     writers never wait on each other); compact_event_list_counts(tenant) folds a tenant's rows into one per
--     bucket (the retention job). A count is the sum over whole months plus the events of the partial months
--     at the range's ends, read from the index below.
--   * event_spaces carries a copy of its event's visibility, status, start and listed flag, so the
--     members-only class is counted from the links of the member's spaces alone.
--
-- On a Citus cluster the triggers are not created (triggers on distributed tables are refused): the service
-- sees that (pg_trigger) and counts row by row there, as before.

create index events_list_audience on events (tenant_id, visibility, status, start_dt, id) include (org_id)
  where not is_deleted and published_id is null;
-- the events a member created, in the same columns: their own branch of the list, read and counted from the index
create index events_list_creator on events (tenant_id, creator_id, visibility, status, start_dt, id) include (org_id)
  where not is_deleted and published_id is null;

create table event_list_counts (
  tenant_id text not null,
  id bigint generated always as identity,
  status text not null,
  visibility integer not null,
  org_id text not null,
  -- UTC month of start_dt; '-infinity' for events without a start
  month date not null,
  n bigint not null,
  primary key (tenant_id, id)
);
create index event_list_counts_bucket on event_list_counts (tenant_id, visibility, status, org_id, month) include (n);
alter table event_list_counts enable row level security;
alter table event_list_counts force row level security;
create policy tenant_isolation on event_list_counts
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_spaces add column event_visibility integer;
alter table event_spaces add column event_status text;
alter table event_spaces add column event_start_dt timestamptz;
alter table event_spaces add column event_listed boolean not null default false;
create index event_spaces_audience on event_spaces (tenant_id, space_id, event_visibility, event_status, event_start_dt)
  include (event_id) where event_listed;

create function event_list_month(start_dt timestamptz) returns date language sql immutable parallel safe
  return coalesce(date_trunc('month', start_dt at time zone 'UTC')::date, '-infinity'::date);

create function events_count_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into event_list_counts (tenant_id, status, visibility, org_id, month, n)
    select tenant_id, status, visibility, coalesce(org_id, ''), event_list_month(start_dt), count(*)
    from new_rows where not is_deleted and published_id is null
    group by 1, 2, 3, 4, 5;
  elsif tg_op = 'DELETE' then
    insert into event_list_counts (tenant_id, status, visibility, org_id, month, n)
    select tenant_id, status, visibility, coalesce(org_id, ''), event_list_month(start_dt), -count(*)
    from old_rows where not is_deleted and published_id is null
    group by 1, 2, 3, 4, 5;
  else
    insert into event_list_counts (tenant_id, status, visibility, org_id, month, n)
    select tenant_id, status, visibility, org_id, month, sum(d) from (
      select tenant_id, status, visibility, coalesce(org_id, '') as org_id, event_list_month(start_dt) as month, 1 as d
      from new_rows where not is_deleted and published_id is null
      union all
      select tenant_id, status, visibility, coalesce(org_id, ''), event_list_month(start_dt), -1
      from old_rows where not is_deleted and published_id is null) changes
    group by 1, 2, 3, 4, 5
    having sum(d) <> 0;
    -- the links' copy of what the list filters on
    update event_spaces es
    set event_visibility = n.visibility, event_status = n.status, event_start_dt = n.start_dt,
      event_listed = (not n.is_deleted and n.published_id is null)
    from new_rows n join old_rows o on o.tenant_id = n.tenant_id and o.id = n.id
    where es.tenant_id = n.tenant_id and es.event_id = n.id
      and (o.visibility, o.status, o.start_dt, o.is_deleted, o.published_id)
        is distinct from (n.visibility, n.status, n.start_dt, n.is_deleted, n.published_id);
  end if;
  return null;
end
$fn$;

create function event_spaces_copy_event() returns trigger language plpgsql as $fn$
begin
  select e.visibility, e.status, e.start_dt, (not e.is_deleted and e.published_id is null)
  into new.event_visibility, new.event_status, new.event_start_dt, new.event_listed
  from events e where e.tenant_id = new.tenant_id and e.id = new.event_id;
  new.event_listed := coalesce(new.event_listed, false);
  return new;
end
$fn$;

-- folds a tenant's delta rows into one row per bucket; rows appended meanwhile stay as they are
create function compact_event_list_counts(tenant text) returns void language sql as $fn$
  with gone as (
    delete from event_list_counts where tenant_id = tenant
    returning status, visibility, org_id, month, n)
  insert into event_list_counts (tenant_id, status, visibility, org_id, month, n)
  select tenant, status, visibility, org_id, month, sum(n) from gone
  group by status, visibility, org_id, month
  having sum(n) <> 0;
$fn$;

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: the event list counts are not kept by triggers; the list counts row by row';
    return;
  end if;
  create trigger events_list_counts_insert after insert on events
    referencing new table as new_rows for each statement execute function events_count_changes();
  create trigger events_list_counts_update after update on events
    referencing old table as old_rows new table as new_rows for each statement execute function events_count_changes();
  create trigger events_list_counts_delete after delete on events
    referencing old table as old_rows for each statement execute function events_count_changes();
  create trigger event_spaces_copy_event before insert on event_spaces
    for each row execute function event_spaces_copy_event();
  -- what exists already
  insert into event_list_counts (tenant_id, status, visibility, org_id, month, n)
  select tenant_id, status, visibility, coalesce(org_id, ''), event_list_month(start_dt), count(*)
  from events where not is_deleted and published_id is null
  group by 1, 2, 3, 4, 5;
  update event_spaces es
  set event_visibility = e.visibility, event_status = e.status, event_start_dt = e.start_dt,
    event_listed = (not e.is_deleted and e.published_id is null)
  from events e where e.tenant_id = es.tenant_id and e.id = es.event_id;
end
$$;

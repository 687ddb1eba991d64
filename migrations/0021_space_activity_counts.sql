-- The stored items of a space's activity feed counted without reading them (docs/performance.md, "Lists at
-- scale, third pass").
--
-- The feed's total added up the space's stored items row by row on every page: 50 000 index entries for the
-- benchmark's showcase space at scale 1 and 250 000 at scale 5, where every page timed out. Their count is now
-- kept in row_counts (migration 0020) as the contacts' and executions' are: delta rows appended by a
-- statement-level trigger, folded by compact_row_counts(tenant) from the retention job.
--
--   list 'space_activity': k1 = space id, k2 = '', k3 = ''
--
-- The feed's other items (events linked to the space, their publishes) depend on what the caller sees and are
-- still counted row by row. On a Citus cluster the trigger is not created and the stored items are counted row
-- by row too (pg_trigger tells the service which).
--
-- The feed's "event added to the space" items are the space's links newest first: read from an index in that
-- order up to the page's end (without it PostgreSQL read every link of the tenant and sorted those of the space).

create index event_spaces_recent on event_spaces (tenant_id, space_id, created_at desc, id desc);

create function space_activity_count_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'space_activity', space_id::text, '', '', count(*) from new_rows group by 1, 3;
  elsif tg_op = 'DELETE' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'space_activity', space_id::text, '', '', -count(*) from old_rows group by 1, 3;
  else
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'space_activity', k1, '', '', sum(d) from (
      select tenant_id, space_id::text as k1, 1 as d from new_rows
      union all
      select tenant_id, space_id::text, -1 from old_rows) changes
    group by tenant_id, k1
    having sum(d) <> 0;
  end if;
  return null;
end
$fn$;

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: the stored items of space activity are not counted by triggers; the feed counts them row by row';
    return;
  end if;
  create trigger space_activity_counts_insert after insert on space_activity
    referencing new table as new_rows for each statement execute function space_activity_count_changes();
  create trigger space_activity_counts_update after update on space_activity
    referencing old table as old_rows new table as new_rows for each statement execute function space_activity_count_changes();
  create trigger space_activity_counts_delete after delete on space_activity
    referencing old table as old_rows for each statement execute function space_activity_count_changes();
  -- what exists already
  insert into row_counts (tenant_id, list, k1, k2, k3, n)
  select tenant_id, 'space_activity', space_id::text, '', '', count(*) from space_activity group by 1, 3;
end
$$;

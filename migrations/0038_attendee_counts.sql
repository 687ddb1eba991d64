-- The attendee counts GET /events/{id} carries (confirmed, waitlist, pending, no-show) read from kept counts
-- instead of counted on every read (docs/performance.md, "GET one event").
--
-- They are kept in row_counts (migration 0020) as the contacts' and executions' are: delta rows appended by
-- statement-level triggers, one per (event, status) a statement changed, folded by compact_row_counts(tenant) from
-- the retention job. Attendees of a whole series (event_id null) are not counted here.
--
--   list 'attendees': k1 = event id, k2 = status, k3 = ''
--
-- Registration decisions still count under the event's row lock (attendees.registration.repository.ts,
-- seatCounts): those are exact by construction either way. On a Citus cluster the triggers are not created and
-- GET /events/{id} counts the event's attendees in its one statement (pg_trigger tells the service which).

create function attendees_count_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'attendees', event_id::text, status, '', count(*) from new_rows
    where event_id is not null group by 1, 3, 4;
  elsif tg_op = 'DELETE' then
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'attendees', event_id::text, status, '', -count(*) from old_rows
    where event_id is not null group by 1, 3, 4;
  else
    insert into row_counts (tenant_id, list, k1, k2, k3, n)
    select tenant_id, 'attendees', k1, k2, '', sum(d) from (
      select tenant_id, event_id::text as k1, status as k2, 1 as d from new_rows where event_id is not null
      union all
      select tenant_id, event_id::text, status, -1 from old_rows where event_id is not null) changes
    group by tenant_id, k1, k2
    having sum(d) <> 0;
  end if;
  return null;
end
$fn$;

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: the attendee counts of an event are not kept by triggers; GET /events/{id} counts them';
    return;
  end if;
  create trigger attendees_counts_insert after insert on attendees
    referencing new table as new_rows for each statement execute function attendees_count_changes();
  create trigger attendees_counts_update after update on attendees
    referencing old table as old_rows new table as new_rows for each statement execute function attendees_count_changes();
  create trigger attendees_counts_delete after delete on attendees
    referencing old table as old_rows for each statement execute function attendees_count_changes();
  -- what exists already
  insert into row_counts (tenant_id, list, k1, k2, k3, n)
  select tenant_id, 'attendees', event_id::text, status, '', count(*) from attendees
  where event_id is not null group by 1, 3, 4;
end
$$;

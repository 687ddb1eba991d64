-- The calendar asks for events overlapping [from, to): start before `to`, end (or start) at or
-- after `from`. The second bound is on coalesce(end_dt, start_dt), which no index of
-- (tenant_id, start_dt) can serve, so the calendar read every event of the tenant that started
-- before `to` (75 000 rows for a month of the largest benchmark tenant, 185 ms).
--
-- An event overlapping [from, to) started at or after `from` minus the longest duration of the
-- tenant's events. This index gives that duration with one descent; the calendar reads it first,
-- then only the events starting in [from - longest, to), through events_list_start.
-- (A GiST range index would not help: under row-level security only LEAKPROOF operators may use an
-- index, and the range operators are not.)
create index events_duration on events (tenant_id, (coalesce(end_dt, start_dt) - start_dt))
  where not is_deleted and published_id is null and start_dt is not null;

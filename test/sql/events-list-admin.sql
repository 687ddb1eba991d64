-- GET /api/v1/events as a tenant administrator
-- 12 statements (test/sql-snapshots.test.ts)

-- 1
begin;

-- 2
set
  local citus.propagate_set_commands = local;

-- 3
set
  local app.tenant_id = '<tenant>';

-- 4
set
  local app.user_id = 'alice';

-- 5
set
  local role collab_app;

-- 6
select
  set_config('max_parallel_workers_per_gather', '0', true),
  set_config('plan_cache_mode', $1, true);

-- 7
select
  "events"."id",
  events.xmin::text as "version",
  "events"."published_id",
  "events"."series_id",
  "events"."created_at" as "sort_key"
from
  "events"
where
  "events"."tenant_id" = $1
  and not events.is_deleted
  and "events"."published_id" is null
  and "events"."status" in ($2, $3)
order by
  "events"."created_at" desc,
  "events"."id" desc
limit
  $4
offset
  $5;

-- 8
select
  (
    (
      (
        select
          coalesce(sum(c.n), 0) as "n"
        from
          "event_list_counts" as "c"
        where
          "c"."tenant_id" = $1
          and "c"."status" in ($2, $3)
      )
    )
  ) as "total";

-- 9
with
  "es" as materialized (
    select
      "event_id",
      "space_id"
    from
      "event_spaces"
    where
      "tenant_id" = $1
      and event_id = any ($2::bigint[])
  )
select
  "es"."event_id",
  "s"."id",
  "s"."title"
from
  "es"
  inner join "spaces" as "s" on "s"."tenant_id" = $3
  and "s"."id" = "es"."space_id"
where
  "s"."is_deleted" = $4
order by
  "es"."event_id",
  "s"."id";

-- 10
select
  "id",
  "title"
from
  "event_series"
where
  "tenant_id" = $1
  and id = any ($2::bigint[]);

-- 11
select
  events.id,
  events.xmin::text as version,
  to_json(r)::text as json,
  pg_current_xact_id_if_assigned() is not null as written
from
  events
  cross join lateral (
    select
      "events"."id" as "id",
      "events"."title" as "title",
      "events"."status" as "status",
      "events"."visibility" as "visibility",
      "events"."timezone" as "timezone",
      "events"."creator_id" as "creator_id",
      to_char(
        "events"."created_at" at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
      ) as "created_at",
      to_char(
        "events"."created_dt" at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
      ) as "created_dt",
      to_char(
        "events"."updated_at" at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
      ) as "updated_at",
      "events"."version" as "version",
      "events"."is_deleted" as "is_deleted",
      "events"."is_locked" as "is_locked",
      "events"."description" as "description",
      "events"."address" as "address",
      "events"."latitude" as "latitude",
      "events"."longitude" as "longitude",
      to_char(
        "events"."start_dt" at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
      ) as "start_dt",
      to_char(
        "events"."end_dt" at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
      ) as "end_dt",
      "events"."keywords" as "keywords",
      "events"."metadata" as "metadata",
      "events"."metadata_override" as "metadata_override",
      "events"."title_override" as "title_override",
      "events"."description_override" as "description_override",
      "events"."org_id" as "org_id",
      "events"."parent_event_id" as "parent_event_id",
      to_char(
        "events"."published_at" at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
      ) as "published_at",
      "events"."published_id" as "published_id",
      "events"."series_id" as "series_id",
      "events"."series_index" as "series_index",
      "events"."template" as "template",
      "events"."template_version" as "template_version",
      "events"."state" as "state",
      "events"."priority" as "priority",
      "events"."cover_image_key" as "cover_image_key"
  ) r
where
  events.tenant_id = $1
  and events.id = any ($2::bigint[]);

-- 12
commit;

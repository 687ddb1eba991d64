-- GET /api/v1/events/calendar as a member of an organization
-- 9 statements (test/sql-snapshots.test.ts)

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
  local app.user_id = 'bob';

-- 5
set
  local role collab_app;

-- 6
select
  "events"."id",
  events.xmin::text as "version",
  "events"."published_id",
  "events"."series_id"
from
  "events"
where
  (
    "events"."tenant_id" = $1
    and "events"."is_deleted" = $2
    and "events"."published_id" is null
    and (
      "events"."creator_id" = $3
      or "events"."visibility" = $4
      or (
        "events"."visibility" = $5
        and coalesce(events.published_id, events.id) in (
          select
            "es"."event_id"
          from
            "event_spaces" as "es"
          where
            "es"."tenant_id" = $6
            and "es"."space_id" = any (
              array(
                (
                  select
                    "sm"."space_id"
                  from
                    "space_members" as "sm"
                  where
                    "sm"."tenant_id" = $7
                    and "sm"."user_id" = $8
                    and "sm"."is_active" = $9
                )
              )
            )
        )
      )
      or coalesce(events.published_id, events.id) in (
        select
          "em"."event_id"
        from
          "event_managers" as "em"
        where
          "em"."tenant_id" = $10
          and "em"."user_id" = $11
          and "em"."status" = $12
          and "em"."event_id" is not null
      )
      or "events"."series_id" in (
        select
          "em"."series_id"
        from
          "event_managers" as "em"
        where
          "em"."tenant_id" = $13
          and "em"."user_id" = $14
          and "em"."status" = $15
          and "em"."series_id" is not null
      )
      or (
        "events"."visibility" = $16
        and "events"."org_id" = $17
      )
    )
  )
  and "events"."status" in ($18, $19)
  and "events"."start_dt" is not null
  and "events"."start_dt" < $20
  and "events"."start_dt" >= (
    select
      $21::timestamptz - coalesce(
        max(
          coalesce(longest.end_dt, longest.start_dt) - longest.start_dt
        ),
        interval '0'
      ) as "since"
    from
      "events" as "longest"
    where
      "longest"."tenant_id" = $22
      and "longest"."is_deleted" = $23
      and "longest"."published_id" is null
      and "longest"."start_dt" is not null
  )
  and coalesce(events.end_dt, events.start_dt) >= $24
order by
  "events"."start_dt" asc,
  "events"."id" asc
limit
  $25;

-- 7
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

-- 8
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

-- 9
commit;

-- DELETE /api/v1/events/{id}/series?scope=future
-- 13 statements (test/sql-snapshots.test.ts)

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
  "id"
from
  "events"
where
  "tenant_id" = $1
  and "id" = $2
for update;

-- 7
select
  "tenant_id",
  "id",
  "org_id",
  "creator_id",
  "title",
  "description",
  "address",
  "latitude",
  "longitude",
  "start_dt",
  "end_dt",
  "timezone",
  "keywords",
  "metadata",
  "visibility",
  "status",
  "template",
  "template_version",
  "state",
  "priority",
  "series_id",
  "series_index",
  "title_override",
  "description_override",
  "metadata_override",
  "parent_event_id",
  "published_id",
  "published_at",
  "created_dt",
  "is_locked",
  "is_deleted",
  "cover_image_key",
  "version",
  "revision",
  "created_at",
  "updated_at"
from
  "events"
where
  "events"."tenant_id" = $1
  and "events"."id" = $2
  and $3;

-- 8
select
  *
from
  "event_series"
where
  "tenant_id" = $1
  and "id" = $2
  and "is_deleted" = $3
for update;

-- 9
update "event_series"
set
  "is_deleted" = $1,
  "window_end" = $2,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $3
  and "id" = $4
returning
  *;

-- 10
delete from "series_windows"
where
  "tenant_id" = $1
  and "series_id" = $2;

-- 11
update "events"
set
  "is_deleted" = $1,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $2
  and "series_id" = $3
  and "is_deleted" = $4;

-- 12
insert into
  "outbox" (
    "tenant_id",
    "topic",
    "aggregate_type",
    "aggregate_id",
    "actor_id",
    "payload",
    "depth"
  )
values
  ($1, $2, $3, $4, $5, $6, $7);

-- 13
commit;

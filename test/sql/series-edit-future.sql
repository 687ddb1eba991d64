-- PATCH /api/v1/events/{id}?scope=future (an occurrence and the following)
-- 27 statements (test/sql-snapshots.test.ts)

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
insert into
  "event_series" (
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
    "cover_image_key",
    "freq",
    "interval",
    "repeat_days",
    "ends_on",
    "end_count",
    "end_date",
    "duration",
    "exdates",
    "window_end",
    "published_id",
    "published_at",
    "is_deleted",
    "series_manager_id",
    "series_manager_status",
    "series_manager_invited_by",
    "series_manager_invited_email",
    "series_manager_invited_at",
    "series_manager_accepted_at",
    "series_manager_expires_at",
    "version",
    "tenant_id"
  )
values
  (
    $1,
    $2,
    $3,
    $4,
    $5,
    $6,
    $7,
    $8,
    $9,
    $10,
    $11,
    $12,
    $13,
    $14,
    $15,
    $16,
    $17,
    $18,
    $19,
    $20,
    $21,
    $22,
    $23,
    $24,
    $25,
    $26,
    $27,
    $28,
    $29,
    $30,
    $31,
    $32,
    $33,
    $34,
    $35,
    $36,
    $37,
    $38
  )
returning
  *;

-- 10
select
  "id"
from
  "events"
where
  "tenant_id" = $1
  and "series_id" = $2
  and "series_index" = $3
  and "is_deleted" = $4
  and "published_id" is null;

-- 11
delete from "series_windows"
where
  "tenant_id" = $1
  and "series_id" = $2;

-- 12
update "event_series"
set
  "end_count" = $1,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $2
  and "id" = $3
returning
  *;

-- 13
update "event_series"
set
  "exdates" = $1,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $2
  and "id" = $3
returning
  *;

-- 14
update "events"
set
  "series_id" = $1,
  "series_index" = series_index - $2,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $3
  and "series_id" = $4
  and "series_index" >= $5;

-- 15
select
  "tenant_id",
  "org_id",
  "user_id",
  "permissions",
  "role",
  "status",
  "invited_email",
  "invited_by",
  "invited_at",
  "accepted_at"
from
  "event_managers"
where
  "tenant_id" = $1
  and "series_id" = $2
  and "status" = $3;

-- 16
select
  "tenant_id",
  "contact_id",
  "org_id",
  "status",
  "notes",
  "invited_at"
from
  "attendees"
where
  "tenant_id" = $1
  and "series_id" = $2
  and "event_id" is null;

-- 17
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

-- 18
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
  "tenant_id" = $1
  and "id" = $2
for update;

-- 19
update "event_series"
set
  "title" = $1,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $2
  and "id" = $3
returning
  *;

-- 20
update "events"
set
  "title" = $1,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $2
  and "series_id" = $3
  and "is_deleted" = $4
  and "published_id" is null
  and "title_override" is null;

-- 21
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

-- 22
select
  *
from
  "event_series"
where
  "tenant_id" = $1
  and "id" = $2
  and "is_deleted" = $3;

-- 23
update "events"
set
  "title_override" = $1,
  "title" = $2,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $3
  and "series_id" = $4
  and "is_deleted" = $5
  and "published_id" is null;

-- 24
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
  "tenant_id" = $1
  and "id" = $2
for update;

-- 25
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

-- 26
select
  "id",
  "title"
from
  "event_series"
where
  "tenant_id" = $1
  and id = any ($2::bigint[]);

-- 27
commit;

-- POST /api/v1/events/with-series (weekly, 4 occurrences)
-- 16 statements (test/sql-snapshots.test.ts)

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
insert into
  "events" (
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
    "parent_event_id",
    "template",
    "template_version",
    "state",
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
    $17
  )
returning
  *;

-- 7
insert into
  "event_activity" (
    "tenant_id",
    "event_id",
    "org_id",
    "actor_id",
    "kind",
    "payload"
  )
values
  ($1, $2, $3, $4, $5, $6)
returning
  "id",
  "event_id",
  "org_id",
  "actor_id",
  "kind",
  "payload",
  "at";

-- 8
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
    "published_at",
    "version",
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
    "window_end",
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
    $28
  )
returning
  *;

-- 10
update "events"
set
  "series_id" = $1,
  "series_index" = $2,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $3
  and "id" = $4
returning
  *;

-- 11
select
  *
from
  "events"
where
  "tenant_id" = $1
  and "series_id" = $2
  and "is_deleted" = $3
  and "published_id" is null
order by
  "series_index",
  "id"
for update;

-- 12
insert into
  "events" (
    "org_id",
    "creator_id",
    "title",
    "description",
    "address",
    "latitude",
    "longitude",
    "timezone",
    "keywords",
    "metadata",
    "visibility",
    "status",
    "published_at",
    "version",
    "template",
    "template_version",
    "state",
    "cover_image_key",
    "series_id",
    "tenant_id",
    "start_dt",
    "end_dt",
    "series_index"
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
    $23
  ),
  (
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
    $38,
    $39,
    $40,
    $41,
    $42,
    $43,
    $44,
    $45,
    $46
  ),
  (
    $47,
    $48,
    $49,
    $50,
    $51,
    $52,
    $53,
    $54,
    $55,
    $56,
    $57,
    $58,
    $59,
    $60,
    $61,
    $62,
    $63,
    $64,
    $65,
    $66,
    $67,
    $68,
    $69
  )
returning
  *;

-- 13
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

-- 14
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

-- 15
select
  "id",
  "title"
from
  "event_series"
where
  "tenant_id" = $1
  and id = any ($2::bigint[]);

-- 16
commit;

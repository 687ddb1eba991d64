-- PATCH /api/v1/events/{id}/series (new days)
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
  "freq" = $1,
  "interval" = $2,
  "repeat_days" = $3,
  "ends_on" = $4,
  "end_count" = $5,
  "end_date" = $6,
  "window_end" = $7,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $8
  and "id" = $9
returning
  *;

-- 10
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

-- 11
update "events"
set
  "is_deleted" = $1,
  "revision" = revision + 1,
  "updated_at" = now()
where
  "tenant_id" = $2
  and id = any ($3::bigint[]);

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
  ),
  (
    $70,
    $71,
    $72,
    $73,
    $74,
    $75,
    $76,
    $77,
    $78,
    $79,
    $80,
    $81,
    $82,
    $83,
    $84,
    $85,
    $86,
    $87,
    $88,
    $89,
    $90,
    $91,
    $92
  ),
  (
    $93,
    $94,
    $95,
    $96,
    $97,
    $98,
    $99,
    $100,
    $101,
    $102,
    $103,
    $104,
    $105,
    $106,
    $107,
    $108,
    $109,
    $110,
    $111,
    $112,
    $113,
    $114,
    $115
  ),
  (
    $116,
    $117,
    $118,
    $119,
    $120,
    $121,
    $122,
    $123,
    $124,
    $125,
    $126,
    $127,
    $128,
    $129,
    $130,
    $131,
    $132,
    $133,
    $134,
    $135,
    $136,
    $137,
    $138
  ),
  (
    $139,
    $140,
    $141,
    $142,
    $143,
    $144,
    $145,
    $146,
    $147,
    $148,
    $149,
    $150,
    $151,
    $152,
    $153,
    $154,
    $155,
    $156,
    $157,
    $158,
    $159,
    $160,
    $161
  )
returning
  *;

-- 13
delete from "series_windows"
where
  "tenant_id" = $1
  and "series_id" = $2;

-- 14
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

-- 15
select
  "id",
  "user_id",
  "status",
  "invited_email",
  "invited_by",
  "invited_at",
  "expires_at",
  "accepted_at"
from
  "event_managers"
where
  "tenant_id" = $1
  and "series_id" = $2
  and "invited_email" is not null
order by
  "id" desc;

-- 16
commit;

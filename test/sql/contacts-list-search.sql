-- GET /api/v1/contacts?search=… as a member
-- 10 statements (test/sql-snapshots.test.ts)

-- 1
select
  exists (
    select
    from
      pg_trigger
    where
      tgname = $1
  ) as kept;

-- 2
begin;

-- 3
set
  local citus.propagate_set_commands = local;

-- 4
set
  local app.tenant_id = '<tenant>';

-- 5
set
  local app.user_id = 'bob';

-- 6
set
  local role collab_app;

-- 7
set
  local plan_cache_mode = force_custom_plan;

-- 8
select
  "id",
  "org_id",
  "owner_id",
  "created_at",
  "updated_at",
  "is_favorite",
  "first_name",
  "middle_name",
  "last_name",
  "nickname",
  "email",
  "phone_primary",
  "phone_secondary",
  "phone_work",
  "company",
  "job_title",
  "address_line1",
  "address_line2",
  "city",
  "state_province",
  "postal_code",
  "country",
  "website",
  "avatar_url",
  "notes",
  "linked_user_id",
  "tags",
  "revision",
  "created_at" as "sort_key"
from
  "contacts"
where
  (
    "tenant_id" = $1
    and (
      "owner_id" = $2
      or "org_id" = $3
    )
  )
  and "search_text" like $4
order by
  "created_at" desc,
  "id" desc
limit
  $5
offset
  $6;

-- 9
select
  count(*) as "total"
from
  "contacts"
where
  (
    "tenant_id" = $1
    and (
      "owner_id" = $2
      or "org_id" = $3
    )
  )
  and "search_text" like $4;

-- 10
commit;

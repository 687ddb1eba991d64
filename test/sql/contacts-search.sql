-- GET /api/v1/contacts/search?q=… as a member
-- 8 statements (test/sql-snapshots.test.ts)

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
set
  local plan_cache_mode = force_custom_plan;

-- 7
select
  "c"."id",
  "c"."org_id",
  "c"."owner_id",
  "c"."created_at",
  "c"."updated_at",
  "c"."is_favorite",
  "c"."first_name",
  "c"."middle_name",
  "c"."last_name",
  "c"."nickname",
  "c"."email",
  "c"."phone_primary",
  "c"."phone_secondary",
  "c"."phone_work",
  "c"."company",
  "c"."job_title",
  "c"."address_line1",
  "c"."address_line2",
  "c"."city",
  "c"."state_province",
  "c"."postal_code",
  "c"."country",
  "c"."website",
  "c"."avatar_url",
  "c"."notes",
  "c"."linked_user_id",
  "c"."tags",
  "c"."revision",
  "m"."total",
  "m"."rank"
from
  (
    select
      "m".*
    from
      (
        select
          "id",
          "last_name",
          "first_name",
          similarity (search_text, $1) as "rank",
          count(*) over () as "total"
        from
          "contacts"
        where
          (
            "tenant_id" = $2
            and (
              "owner_id" = $3
              or "org_id" = $4
            )
          )
          and "search_text" like $5
      ) as "m"
    order by
      "m"."rank" desc,
      "m"."last_name",
      "m"."first_name",
      "m"."id"
    limit
      $6
  ) as "m"
  inner join "contacts" as "c" on "c"."tenant_id" = $7
  and "c"."id" = "m"."id"
order by
  "m"."rank" desc,
  "m"."last_name",
  "m"."first_name",
  "m"."id";

-- 8
commit;

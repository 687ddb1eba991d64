-- GET /api/v1/events?search=…&start_dt_after=… as a member of an organization
-- 10 statements (test/sql-snapshots.test.ts)

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
  and "events"."id" in (
    select
      "b"."id"
    from
      (
        select
          "events"."id"
        from
          "events"
        where
          "events"."tenant_id" = $2
          and not events.is_deleted
          and "events"."published_id" is null
          and "events"."status" in ($3, $4)
          and "events"."search_text" like $5
          and "events"."start_dt" >= $6
          and "events"."visibility" = $7
        order by
          "events"."created_at" desc,
          "events"."id" desc
        limit
          $8
      ) as "b"
    union
    select
      "b"."id"
    from
      (
        select
          "events"."id"
        from
          "events"
        where
          "events"."tenant_id" = $9
          and not events.is_deleted
          and "events"."published_id" is null
          and "events"."status" in ($10, $11)
          and "events"."search_text" like $12
          and "events"."start_dt" >= $13
          and (
            "events"."visibility" = $14
            and coalesce(
              "events"."id" in (
                select
                  "es"."event_id"
                from
                  "event_spaces" as "es"
                where
                  "es"."tenant_id" = $15
                  and "es"."space_id" = any (
                    array(
                      (
                        select
                          "sm"."space_id"
                        from
                          "space_members" as "sm"
                        where
                          "sm"."tenant_id" = $16
                          and "sm"."user_id" = $17
                          and "sm"."is_active" = $18
                      )
                    )
                  )
                  and es.event_listed
                  and "es"."event_visibility" = $19
              ),
              false
            )
          )
        order by
          "events"."created_at" desc,
          "events"."id" desc
        limit
          $20
      ) as "b"
    union
    select
      "b"."id"
    from
      (
        select
          "events"."id"
        from
          "events"
        where
          "events"."tenant_id" = $21
          and not events.is_deleted
          and "events"."published_id" is null
          and "events"."status" in ($22, $23)
          and "events"."search_text" like $24
          and "events"."start_dt" >= $25
          and (
            "events"."visibility" = $26
            and "events"."org_id" = $27
          )
        order by
          "events"."created_at" desc,
          "events"."id" desc
        limit
          $28
      ) as "b"
    union
    select
      "b"."id"
    from
      (
        select
          "events"."id"
        from
          "events"
        where
          "events"."tenant_id" = $29
          and not events.is_deleted
          and "events"."published_id" is null
          and "events"."status" in ($30, $31)
          and "events"."search_text" like $32
          and "events"."start_dt" >= $33
          and "events"."creator_id" = $34
        order by
          "events"."created_at" desc,
          "events"."id" desc
        limit
          $35
      ) as "b"
    union
    select
      "b"."id"
    from
      (
        select
          "events"."id"
        from
          "events"
        where
          "events"."tenant_id" = $36
          and not events.is_deleted
          and "events"."published_id" is null
          and "events"."status" in ($37, $38)
          and "events"."search_text" like $39
          and "events"."start_dt" >= $40
          and "events"."id" = any (
            array(
              (
                select
                  "em"."event_id"
                from
                  "event_managers" as "em"
                where
                  "em"."tenant_id" = $41
                  and "em"."user_id" = $42
                  and "em"."status" = $43
                  and "em"."event_id" is not null
              )
            )
          )
        order by
          "events"."created_at" desc,
          "events"."id" desc
        limit
          $44
      ) as "b"
    union
    select
      "b"."id"
    from
      (
        select
          "events"."id"
        from
          "events"
        where
          "events"."tenant_id" = $45
          and not events.is_deleted
          and "events"."published_id" is null
          and "events"."status" in ($46, $47)
          and "events"."search_text" like $48
          and "events"."start_dt" >= $49
          and "events"."id" = any (
            array(
              (
                select
                  "of_series"."id"
                from
                  "events" as "of_series"
                where
                  "of_series"."tenant_id" = $50
                  and "of_series"."series_id" in (
                    select
                      "em"."series_id"
                    from
                      "event_managers" as "em"
                    where
                      "em"."tenant_id" = $51
                      and "em"."user_id" = $52
                      and "em"."status" = $53
                      and "em"."series_id" is not null
                  )
              )
            )
          )
        order by
          "events"."created_at" desc,
          "events"."id" desc
        limit
          $54
      ) as "b"
  )
order by
  "events"."created_at" desc,
  "events"."id" desc
limit
  $55
offset
  $56;

-- 8
select
  (
    (
      select
        count(*) as "n"
      from
        "events"
      where
        "events"."tenant_id" = $1
        and not events.is_deleted
        and "events"."published_id" is null
        and "events"."status" in ($2, $3)
        and "events"."search_text" like $4
        and "events"."start_dt" >= $5
        and "events"."visibility" = $6
    )
  ) + (
    (
      select
        count(*) as "n"
      from
        "events"
      where
        "events"."tenant_id" = $7
        and not events.is_deleted
        and "events"."published_id" is null
        and "events"."status" in ($8, $9)
        and "events"."search_text" like $10
        and "events"."start_dt" >= $11
        and (
          "events"."visibility" = $12
          and coalesce(
            "events"."id" in (
              select
                "es"."event_id"
              from
                "event_spaces" as "es"
              where
                "es"."tenant_id" = $13
                and "es"."space_id" = any (
                  array(
                    (
                      select
                        "sm"."space_id"
                      from
                        "space_members" as "sm"
                      where
                        "sm"."tenant_id" = $14
                        and "sm"."user_id" = $15
                        and "sm"."is_active" = $16
                    )
                  )
                )
                and es.event_listed
                and "es"."event_visibility" = $17
            ),
            false
          )
        )
    )
  ) + (
    (
      select
        count(*) as "n"
      from
        "events"
      where
        "events"."tenant_id" = $18
        and not events.is_deleted
        and "events"."published_id" is null
        and "events"."status" in ($19, $20)
        and "events"."search_text" like $21
        and "events"."start_dt" >= $22
        and (
          "events"."visibility" = $23
          and "events"."org_id" = $24
        )
    )
  ) + (
    (
      select
        count(*) as "n"
      from
        "events"
      where
        "events"."tenant_id" = $25
        and "events"."id" in (
          select
            "events"."id"
          from
            "events"
          where
            "events"."tenant_id" = $26
            and not events.is_deleted
            and "events"."published_id" is null
            and "events"."status" in ($27, $28)
            and "events"."search_text" like $29
            and "events"."start_dt" >= $30
            and "events"."creator_id" = $31
          union
          select
            "events"."id"
          from
            "events"
          where
            "events"."tenant_id" = $32
            and not events.is_deleted
            and "events"."published_id" is null
            and "events"."status" in ($33, $34)
            and "events"."search_text" like $35
            and "events"."start_dt" >= $36
            and "events"."id" = any (
              array(
                (
                  select
                    "em"."event_id"
                  from
                    "event_managers" as "em"
                  where
                    "em"."tenant_id" = $37
                    and "em"."user_id" = $38
                    and "em"."status" = $39
                    and "em"."event_id" is not null
                )
              )
            )
          union
          select
            "events"."id"
          from
            "events"
          where
            "events"."tenant_id" = $40
            and not events.is_deleted
            and "events"."published_id" is null
            and "events"."status" in ($41, $42)
            and "events"."search_text" like $43
            and "events"."start_dt" >= $44
            and "events"."id" = any (
              array(
                (
                  select
                    "of_series"."id"
                  from
                    "events" as "of_series"
                  where
                    "of_series"."tenant_id" = $45
                    and "of_series"."series_id" in (
                      select
                        "em"."series_id"
                      from
                        "event_managers" as "em"
                      where
                        "em"."tenant_id" = $46
                        and "em"."user_id" = $47
                        and "em"."status" = $48
                        and "em"."series_id" is not null
                    )
                )
              )
            )
        )
        and not coalesce(
          (
            "events"."visibility" = $49
            or (
              "events"."visibility" = $50
              and coalesce(
                "events"."id" in (
                  select
                    "es"."event_id"
                  from
                    "event_spaces" as "es"
                  where
                    "es"."tenant_id" = $51
                    and "es"."space_id" = any (
                      array(
                        (
                          select
                            "sm"."space_id"
                          from
                            "space_members" as "sm"
                          where
                            "sm"."tenant_id" = $52
                            and "sm"."user_id" = $53
                            and "sm"."is_active" = $54
                        )
                      )
                    )
                    and es.event_listed
                    and "es"."event_visibility" = $55
                ),
                false
              )
            )
            or (
              "events"."visibility" = $56
              and "events"."org_id" = $57
            )
          ),
          false
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
commit;

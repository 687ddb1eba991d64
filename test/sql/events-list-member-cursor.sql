-- GET /api/v1/events?cursor=… as a member
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
          and "events"."visibility" = $5
          and ("events"."created_at", "events"."id") < ($6, $7)
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
          and ("events"."created_at", "events"."id") < ($18, $19)
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
          and (
            "events"."visibility" = $24
            and "events"."org_id" = $25
          )
          and ("events"."created_at", "events"."id") < ($26, $27)
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
          and "events"."creator_id" = $32
          and ("events"."created_at", "events"."id") < ($33, $34)
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
          and "events"."id" = any (
            array(
              (
                select
                  "em"."event_id"
                from
                  "event_managers" as "em"
                where
                  "em"."tenant_id" = $39
                  and "em"."user_id" = $40
                  and "em"."status" = $41
                  and "em"."event_id" is not null
              )
            )
          )
          and ("events"."created_at", "events"."id") < ($42, $43)
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
          and "events"."id" = any (
            array(
              (
                select
                  "of_series"."id"
                from
                  "events" as "of_series"
                where
                  "of_series"."tenant_id" = $48
                  and "of_series"."series_id" in (
                    select
                      "em"."series_id"
                    from
                      "event_managers" as "em"
                    where
                      "em"."tenant_id" = $49
                      and "em"."user_id" = $50
                      and "em"."status" = $51
                      and "em"."series_id" is not null
                  )
              )
            )
          )
          and ("events"."created_at", "events"."id") < ($52, $53)
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
      (
        select
          coalesce(sum(c.n), 0) as "n"
        from
          "event_list_counts" as "c"
        where
          "c"."tenant_id" = $1
          and "c"."status" in ($2, $3)
          and "c"."visibility" = $4
      )
    )
  ) + (
    (
      select
        count(distinct es.event_id) as "n"
      from
        "event_spaces" as "es"
      where
        "es"."tenant_id" = $5
        and "es"."space_id" = any (
          array(
            (
              select
                "sm"."space_id"
              from
                "space_members" as "sm"
              where
                "sm"."tenant_id" = $6
                and "sm"."user_id" = $7
                and "sm"."is_active" = $8
            )
          )
        )
        and es.event_listed
        and "es"."event_visibility" = $9
        and "es"."event_status" in ($10, $11)
    )
  ) + (
    (
      (
        select
          coalesce(sum(c.n), 0) as "n"
        from
          "event_list_counts" as "c"
        where
          "c"."tenant_id" = $12
          and "c"."status" in ($13, $14)
          and "c"."visibility" = $15
          and "c"."org_id" = $16
      )
    )
  ) + (
    (
      select
        count(*) as "n"
      from
        "events"
      where
        "events"."tenant_id" = $17
        and "events"."id" in (
          select
            "events"."id"
          from
            "events"
          where
            "events"."tenant_id" = $18
            and not events.is_deleted
            and "events"."published_id" is null
            and "events"."status" in ($19, $20)
            and "events"."creator_id" = $21
          union
          select
            "events"."id"
          from
            "events"
          where
            "events"."tenant_id" = $22
            and not events.is_deleted
            and "events"."published_id" is null
            and "events"."status" in ($23, $24)
            and "events"."id" = any (
              array(
                (
                  select
                    "em"."event_id"
                  from
                    "event_managers" as "em"
                  where
                    "em"."tenant_id" = $25
                    and "em"."user_id" = $26
                    and "em"."status" = $27
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
            "events"."tenant_id" = $28
            and not events.is_deleted
            and "events"."published_id" is null
            and "events"."status" in ($29, $30)
            and "events"."id" = any (
              array(
                (
                  select
                    "of_series"."id"
                  from
                    "events" as "of_series"
                  where
                    "of_series"."tenant_id" = $31
                    and "of_series"."series_id" in (
                      select
                        "em"."series_id"
                      from
                        "event_managers" as "em"
                      where
                        "em"."tenant_id" = $32
                        and "em"."user_id" = $33
                        and "em"."status" = $34
                        and "em"."series_id" is not null
                    )
                )
              )
            )
        )
        and not coalesce(
          (
            "events"."visibility" = $35
            or (
              "events"."visibility" = $36
              and coalesce(
                "events"."id" in (
                  select
                    "es"."event_id"
                  from
                    "event_spaces" as "es"
                  where
                    "es"."tenant_id" = $37
                    and "es"."space_id" = any (
                      array(
                        (
                          select
                            "sm"."space_id"
                          from
                            "space_members" as "sm"
                          where
                            "sm"."tenant_id" = $38
                            and "sm"."user_id" = $39
                            and "sm"."is_active" = $40
                        )
                      )
                    )
                    and es.event_listed
                    and "es"."event_visibility" = $41
                ),
                false
              )
            )
            or (
              "events"."visibility" = $42
              and "events"."org_id" = $43
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

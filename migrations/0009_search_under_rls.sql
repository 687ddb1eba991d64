-- Text search under row-level security.
--
-- Under RLS, PostgreSQL only lets an index answer a condition whose operator is LEAKPROOF (it may
-- otherwise run on rows the policy hides). No LIKE or trigram operator is marked so, and the
-- contacts and events searches (`search_text LIKE '%term%'`, served by gin_trgm_ops indexes) fell
-- back to scanning every row: 285 ms instead of 2-7 ms on a million contacts (docs/performance.md).
--
-- `textlike` can only fail on its pattern argument (a pattern ending in the escape character),
-- never on the row's value, so it reveals nothing about rows it is applied to: marking it
-- LEAKPROOF is safe. It needs a superuser; a deployment whose owner is not one gets a notice and
-- its DBA runs the same statement once (docs/tenancy.md).
do $$
begin
  if (select rolsuper from pg_roles where rolname = current_user) then
    alter function textlike(text, text) leakproof;
  else
    raise notice 'textlike is not LEAKPROOF: text search will not use its indexes under RLS; a superuser should run: alter function textlike(text, text) leakproof';
  end if;
end
$$;

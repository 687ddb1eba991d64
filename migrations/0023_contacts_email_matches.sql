-- Contacts matched by e-mail under row-level security (docs/contacts.md, "Throughput").
--
-- The upsert and the CSV import find a batch's matches with `lower(email) in (…500 addresses…)`, which the index
-- contacts_email (tenant_id, lower(email)) answers in 4 ms. Under row-level security it did not: PostgreSQL lets an
-- index answer only conditions whose functions are LEAKPROOF (0009_search_under_rls.sql), and `lower` is not
-- marked so. The request role read every contact of the tenant through the policy's index and filtered them: 350 ms
-- a batch in the largest benchmark tenant (450 000 contacts), 100 batches for a 50 000-row import, twice.
--
-- 1. `lower(text)` raises no error that depends on its argument's value (any valid text has a lower case), so it
--    reveals nothing about the rows it is applied to: marking it LEAKPROOF is safe, as for textlike. It needs a
--    superuser; a deployment whose owner is not one gets a notice and its DBA runs the statement once
--    (docs/tenancy.md).
-- 2. The index is partial (`where email is not null`), and PostgreSQL keeps no statistics of a partial index's
--    expressions: the planner guessed that 90 % of the tenant matched and still preferred the policy's index.
--    Statistics on the expression give it the real number of distinct addresses. Not on Citus (the shards keep
--    their own statistics).

do $$
begin
  if (select rolsuper from pg_roles where rolname = current_user) then
    alter function lower(text) leakproof;
  else
    raise notice 'lower(text) is not LEAKPROOF: contact matches by e-mail will not use their index under RLS; a superuser should run: alter function lower(text) leakproof';
  end if;
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: no extended statistics on lower(contacts.email)';
    return;
  end if;
  create statistics contacts_lower_email on (lower(email)) from contacts;
end
$$;

analyze contacts;

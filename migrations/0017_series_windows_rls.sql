-- series_windows under row-level security like every other table keyed by tenant.
--
-- 0007 left it without a policy so that the background job could find due series of every tenant.
-- That job now runs on the worker login (DATABASE_WORKER_URL, BYPASSRLS: withSystem), so the policy
-- costs it nothing, while a request's transaction (collab_app) now sees only its own tenant's windows
-- here too, on PostgreSQL and on every shard of a Citus cluster.
alter table series_windows enable row level security;
alter table series_windows force row level security;
create policy tenant_isolation on series_windows
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

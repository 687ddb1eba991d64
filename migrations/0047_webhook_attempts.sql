-- Every attempt of a webhook subscription's delivery, kept beside the delivery's last-attempt columns (which stay:
-- the delivery log answers them as before): when it started, how long it took, the receiver's HTTP status or the
-- kind of network error, and the first KiB of the answer when it is text (docs/integrations.md, "Outbound webhooks").
-- Written in the transaction that records the attempt on its delivery; deleted with the delivery, or after
-- RETENTION_WEBHOOK_ATTEMPTS (docs/retention.md). The key leads with tenant_id: on Citus the table is distributed by
-- it with the other tenant tables (src/platform/db/migrate.ts), a delivery's attempts on its shard.
--
-- A subscription's answer tells its pending and failing deliveries and its last success: the pending ones by a
-- partial index (the backlog, not the log), the last success kept on the subscription by the attempt that succeeded.

create table webhook_delivery_attempts (
  tenant_id text not null,
  id bigint generated always as identity,
  delivery_id uuid not null,
  -- the attempt's number in its run: 1 the first, up to the retry schedule's 7; a redelivery starts at 1 again
  attempt integer not null check (attempt >= 1),
  started_at timestamptz not null,
  duration_ms integer not null check (duration_ms >= 0),
  -- the receiver's HTTP status when it answered, else null and error_kind says why not
  status_code integer,
  error_kind text check (error_kind in ('timeout', 'refused', 'dns', 'connection', 'tls', 'other')),
  error text,
  -- the first bytes of the answer's body as sent (at most 1 KiB), null when none or not text
  response_excerpt text,
  succeeded boolean not null,
  primary key (tenant_id, id),
  foreign key (tenant_id, delivery_id) references webhook_deliveries (tenant_id, id) on delete cascade
);
-- a delivery's attempts, newest first
create index webhook_delivery_attempts_delivery on webhook_delivery_attempts
  (tenant_id, delivery_id, started_at desc, id desc);
-- the retention job's look-up of old attempts, an index range (as the finished deliveries', migration 0031)
create index webhook_delivery_attempts_started on webhook_delivery_attempts (started_at);

alter table webhook_delivery_attempts enable row level security;
alter table webhook_delivery_attempts force row level security;
create policy tenant_isolation on webhook_delivery_attempts
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table webhook_subscriptions add column last_success_at timestamptz;
create index webhook_deliveries_pending on webhook_deliveries (tenant_id, subscription_id) where status = 'pending';

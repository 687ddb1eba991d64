-- Outbound webhooks (Standard Webhooks): a tenant's subscriptions, one delivery row per domain event
-- a subscription takes (the webhook-id of every attempt), and what the webhook dispatcher has seen of
-- the outbox (docs/integrations.md, "Outbound webhooks"). Every key leads with tenant_id (Citus:
-- distributed by it, colocated with the outbox).

create table webhook_subscriptions (
  tenant_id text not null,
  id uuid not null default gen_random_uuid(),
  url text not null,
  -- outbox topics (automation trigger catalogue) or '*'
  event_types text[] not null,
  description text,
  enabled boolean not null default true,
  -- whsec_<base64>: needed in the clear to sign (HMAC), never shown after creation or rotation
  secret text not null,
  -- the secret before the last rotation, still signing until previous_secret_expires_at
  previous_secret text,
  previous_secret_expires_at timestamptz,
  created_by text not null,
  created_by_email text,
  -- failures since the last success, and when that run of failures began
  consecutive_failures integer not null default 0,
  failing_since timestamptz,
  disabled_reason text,
  disabled_at timestamptz,
  revision integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id)
);
create index webhook_subscriptions_enabled on webhook_subscriptions (tenant_id) where enabled;

create table webhook_deliveries (
  tenant_id text not null,
  id uuid not null default gen_random_uuid(),
  subscription_id uuid not null,
  -- the domain event delivered (null for a ping)
  outbox_id bigint,
  -- webhook-id: the same on every attempt and on a redelivery
  msg_id text not null,
  event_type text not null,
  -- the body, fixed at creation: {type, timestamp, data}
  body jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  -- when a pending delivery is due; while an attempt runs, the end of its lease
  next_attempt_at timestamptz,
  last_status_code integer,
  last_duration_ms integer,
  last_error text,
  last_attempt_at timestamptz,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, subscription_id) references webhook_subscriptions (tenant_id, id) on delete cascade
);
-- one delivery per (subscription, domain event): a dispatcher that runs twice adds nothing
create unique index webhook_deliveries_event on webhook_deliveries (tenant_id, subscription_id, outbox_id)
  where outbox_id is not null;
-- the due-deliveries scan across tenants, and one tenant's
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
-- the delivery log of a subscription, newest first
create index webhook_deliveries_log on webhook_deliveries (tenant_id, subscription_id, created_at desc, id desc);

-- The outbox rows the webhook dispatcher has fanned out (the outbox's processed_at belongs to the
-- automation dispatcher). Rows at or below floor_id of webhook_cursors are all seen and are deleted.
create table webhook_outbox_seen (
  tenant_id text not null,
  outbox_id bigint not null,
  seen_at timestamptz not null default now(),
  primary key (tenant_id, outbox_id)
);

create table webhook_cursors (
  tenant_id text not null,
  floor_id bigint not null default 0,
  updated_at timestamptz not null default now(),
  primary key (tenant_id)
);

alter table webhook_subscriptions enable row level security;
alter table webhook_subscriptions force row level security;
create policy tenant_isolation on webhook_subscriptions
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table webhook_deliveries enable row level security;
alter table webhook_deliveries force row level security;
create policy tenant_isolation on webhook_deliveries
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table webhook_outbox_seen enable row level security;
alter table webhook_outbox_seen force row level security;
create policy tenant_isolation on webhook_outbox_seen
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table webhook_cursors enable row level security;
alter table webhook_cursors force row level security;
create policy tenant_isolation on webhook_cursors
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

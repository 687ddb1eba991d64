-- Platform: the application role, the domain-event outbox, idempotency keys, notifications.
--
-- Conventions for every tenant-owned table (see docs/tenancy.md):
--   * a tenant_id text column that leads every primary, unique and foreign key;
--   * ENABLE and FORCE row level security with the policy below;
--   * the application works as collab_app (NOSUPERUSER NOBYPASSRLS, owns nothing).

do $$
begin
  if not exists (select from pg_roles where rolname = 'collab_app') then
    create role collab_app nologin nosuperuser nobypassrls;
  end if;
exception when duplicate_object or unique_violation then
  null; -- created concurrently by another database of the same cluster
end
$$;

grant collab_app to current_user;

create extension if not exists pg_trgm;

-- Domain events, written in the transaction of the change that caused them. Consumers (automation)
-- read them in id order and mark them processed; nothing is published that was rolled back.
create table outbox (
  tenant_id text not null,
  id bigint generated always as identity,
  topic text not null,
  aggregate_type text not null,
  aggregate_id text not null,
  actor_id text,
  payload jsonb not null default '{}',
  depth integer not null default 0,
  created_at timestamptz not null default now(),
  processed_at timestamptz,
  primary key (tenant_id, id)
);
create index outbox_unprocessed on outbox (id) where processed_at is null;

-- Idempotency-Key: the first answer to a POST is kept for 24 hours per caller and key.
create table idempotency_keys (
  tenant_id text not null,
  user_id text not null,
  key text not null,
  method text not null,
  path text not null,
  request_hash text not null,
  status_code integer,
  response_headers jsonb,
  response_body text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (tenant_id, user_id, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);

-- Notifications to people (invites, publish notices, automation messages), delivered by a sender
-- that reads this table; a request only ever inserts here.
create table notification_outbox (
  tenant_id text not null,
  id bigint generated always as identity,
  channel text not null,
  recipient text not null,
  subject text not null,
  body text not null,
  priority text not null default 'normal',
  payload jsonb not null default '{}',
  status text not null default 'pending',
  attempts integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  primary key (tenant_id, id)
);
create index notification_outbox_pending on notification_outbox (id) where status = 'pending';

alter table outbox enable row level security;
alter table outbox force row level security;
create policy tenant_isolation on outbox
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table idempotency_keys enable row level security;
alter table idempotency_keys force row level security;
create policy tenant_isolation on idempotency_keys
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table notification_outbox enable row level security;
alter table notification_outbox force row level security;
create policy tenant_isolation on notification_outbox
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

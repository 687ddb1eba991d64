-- Automation: rules (what to do on which trigger), executions (one per rule and trigger
-- occurrence; the idempotency key of the effects) and scheduled-trigger state (last cron slot
-- fired per rule). The job queue itself is pg-boss, in its own schema `pgboss`, created by
-- pg-boss at start (docs/automation.md).

create table automation_rules (
  tenant_id text not null,
  id uuid not null default gen_random_uuid(),
  org_id text,
  name text not null,
  description text,
  enabled boolean not null default true,
  priority integer not null default 0,
  scope text not null check (scope in ('EVENT', 'SPACE', 'CONTACT', 'GLOBAL')),
  scope_id text,
  -- the trigger type (schedule.event_type), copied out for matching and the event_type filter
  event_type text not null,
  schedule jsonb not null,
  conditions jsonb not null default '{}',
  actions jsonb not null default '[]',
  created_by_kind text not null default 'user',
  creator_id text not null,
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id)
);
create index automation_rules_trigger on automation_rules (tenant_id, event_type) where enabled;
create index automation_rules_scope on automation_rules (tenant_id, scope, scope_id);

create table automation_executions (
  tenant_id text not null,
  id uuid not null default gen_random_uuid(),
  rule_id uuid not null,
  -- one execution per (rule, trigger occurrence): outbox:<id>, cron:<slot>, starts_in:<event>:<start>:<offset>, manual:<uuid>
  trigger_key text not null,
  trigger_type text not null,
  trigger_payload jsonb not null default '{}',
  depth integer not null default 0,
  status text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed', 'skipped')),
  attempts integer not null default 0,
  max_attempts integer not null,
  claim_token uuid,
  lease_until timestamptz,
  started_at timestamptz,
  finished_at timestamptz,
  conditions_met boolean,
  condition_results jsonb,
  action_results jsonb,
  error text,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, rule_id, trigger_key),
  foreign key (tenant_id, rule_id) references automation_rules (tenant_id, id) on delete cascade
);
create index automation_executions_rule on automation_executions (tenant_id, rule_id, created_at desc);

create table automation_schedule_state (
  tenant_id text not null,
  rule_id uuid not null,
  last_slot timestamptz not null,
  updated_at timestamptz not null default now(),
  primary key (tenant_id, rule_id),
  foreign key (tenant_id, rule_id) references automation_rules (tenant_id, id) on delete cascade
);

alter table automation_rules enable row level security;
alter table automation_rules force row level security;
create policy tenant_isolation on automation_rules
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table automation_executions enable row level security;
alter table automation_executions force row level security;
create policy tenant_isolation on automation_executions
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table automation_schedule_state enable row level security;
alter table automation_schedule_state force row level security;
create policy tenant_isolation on automation_schedule_state
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

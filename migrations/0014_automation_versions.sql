-- Automation you can audit and recover (docs/automation.md, "Versions, retries and pausing").
--
-- automation_rule_versions keeps an immutable snapshot of every version of a rule: what it runs
-- (schedule, conditions, actions, scope) and whom it acts as (its writer: creator_id, roles,
-- organization). It is written in the transaction of every create, replace, patch and service
-- change (disabling, pausing) of the rule. Snapshots go with their rule when it is deleted.
--
-- automation_executions.rule_version is the version an execution was enqueued with (dispatcher,
-- scheduler, manual run, retry); the runner runs that version's snapshot, not a later edit.
-- retry_of links a retry to the failed execution it repeats (one retry per failed execution).

create table automation_rule_versions (
  tenant_id text not null,
  rule_id uuid not null,
  version integer not null,
  name text not null,
  event_type text not null,
  schedule jsonb not null,
  conditions jsonb not null,
  actions jsonb not null,
  scope text not null,
  scope_id text,
  created_by_kind text not null,
  creator_id text not null,
  creator_roles text[] not null,
  org_id text,
  created_at timestamptz not null default now(),
  primary key (tenant_id, rule_id, version),
  foreign key (tenant_id, rule_id) references automation_rules (tenant_id, id) on delete cascade
);

alter table automation_rule_versions enable row level security;
alter table automation_rule_versions force row level security;
create policy tenant_isolation on automation_rule_versions
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

-- rules written before this migration: their current state is the snapshot of their current version
insert into automation_rule_versions (tenant_id, rule_id, version, name, event_type, schedule, conditions, actions,
  scope, scope_id, created_by_kind, creator_id, creator_roles, org_id, created_at)
select tenant_id, id, version, name, event_type, schedule, conditions, actions,
  scope, scope_id, created_by_kind, creator_id, creator_roles, org_id, updated_at
from automation_rules;

-- executions queued before this migration run the rule's current version, as they would have
alter table automation_executions add column rule_version integer;
update automation_executions e set rule_version = r.version
from automation_rules r where r.tenant_id = e.tenant_id and r.id = e.rule_id;
alter table automation_executions alter column rule_version set not null;

alter table automation_executions add column retry_of uuid;
-- one retry per failed execution (the retry's trigger key, retry:<failed id>, is unique per rule too)
create unique index automation_executions_retry_of on automation_executions (tenant_id, retry_of) where retry_of is not null;
-- the history filters: by status and by time
create index automation_executions_rule_status on automation_executions (tenant_id, rule_id, status, created_at desc);
-- pausing: the last finished runs of a rule that succeeded or failed, newest first
create index automation_executions_rule_finished on automation_executions (tenant_id, rule_id, finished_at desc)
  where status in ('succeeded', 'failed');

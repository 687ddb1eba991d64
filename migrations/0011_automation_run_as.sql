-- Automation runs as someone (docs/automation.md, "Whom a rule acts as"): a rule acts with the
-- rights of its last writer (creator_id, org_id, and now the writer's tenant roles), re-checked at
-- every execution. The users table keeps no roles, so they are stored on the rule, refreshed by
-- every create, replace or patch. Rules written before this migration run as their creator with
-- the role member (the least a rule author could have held: automation:write needs member).
-- disabled_reason says why the service disabled a rule (its creator was removed or deactivated);
-- a write that enables the rule again clears it.

alter table automation_rules add column creator_roles text[] not null default '{member}';
alter table automation_rules add column disabled_reason text;

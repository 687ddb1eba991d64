-- What the retention job (src/platform/retention.ts) looks up on each pass of the two kinds added with #22: the
-- finished webhook deliveries by their last attempt and the revoked feed tokens by when they were revoked, each an
-- index range instead of a scan of the table (as `changes_at` of 0026 for the log of changes).

create index webhook_deliveries_finished on webhook_deliveries (last_attempt_at) where status <> 'pending';
create index feed_tokens_revoked on feed_tokens (revoked_at) where revoked_at is not null;

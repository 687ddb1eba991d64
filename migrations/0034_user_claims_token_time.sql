-- Which token's claims `user_claims` holds (issue #35): the issue time (`iat`) of the token whose organization and
-- roles are recorded, else its expiry (`exp`). A token issued before the recorded one no longer replaces its claims,
-- so an older token still within its lifetime cannot move its user back to the organization they left.
alter table user_claims add column token_time timestamptz;

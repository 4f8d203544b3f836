-- 0009: lease expiry judged on one clock (docs/adr/0027-one-clock.md).
-- lease_beat is the lease's heartbeat: every acquisition and renewal
-- increments it, and a contender takes a lease over only after watching
-- it not move for lease_ttl_ns (the holder's TTL) on its own monotonic
-- clock. takeovers holds the operators' forced take-overs, one line each.
ALTER TABLE runs ADD COLUMN lease_beat INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN lease_ttl_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN takeovers TEXT NOT NULL DEFAULT '';

-- 0002: the runs a worker may claim (running or stalled, their lease free
-- or expired: a free lease's expiry is 0), found by their lease's expiry
-- instead of by scanning every running run, held or not.
CREATE INDEX runs_claimable ON runs (lease_expires_ns) WHERE status IN ('running', 'stalled');

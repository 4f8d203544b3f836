-- 0007: the operators' forced take-overs of a run's lease, one line each
-- (docs/adr/0027-one-clock.md). Lease expiry needs no column: it is
-- judged by the server's clock in the statements that take a lease.
ALTER TABLE runs ADD COLUMN takeovers text NOT NULL DEFAULT '';

-- 0005: a cancellation requested for a run another process drives
-- (Runs.RequestCancel); empty when none.
ALTER TABLE runs ADD COLUMN cancel_reason TEXT NOT NULL DEFAULT '';

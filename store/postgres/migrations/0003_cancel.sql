-- 0003: a cancellation requested for a run another process drives
-- (Runs.RequestCancel); empty when none. Free text, as the other reasons.
ALTER TABLE runs ADD COLUMN cancel_reason bytea NOT NULL DEFAULT ''::bytea;

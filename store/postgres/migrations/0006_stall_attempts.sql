-- 0006: how many times in a row a run stalled (RunInfo.StallAttempts), for
-- the stall backoff; reset when the run makes progress.
ALTER TABLE runs ADD COLUMN stall_attempts bigint NOT NULL DEFAULT 0;

-- 0008: how many times in a row a run stalled (RunInfo.StallAttempts), for
-- the stall backoff; reset when the run makes progress.
ALTER TABLE runs ADD COLUMN stall_attempts INTEGER NOT NULL DEFAULT 0;

-- 0008: runs are conversations. turns counts the user turns a run
-- has taken (RunInfo.Turns); runs before this had one. The inbox holds
-- the user messages posted to a run (Runs.PostMessage) and not folded
-- into it yet: message n of run rk, numbered from 1 by run in the
-- order posted (inbox_n is the last number given: a post takes the run's
-- row FOR UPDATE, so racing posts get different numbers, and a post and a
-- checkpoint serialize). content is bytea, as every caller's text. sum is
-- a CRC-32C over the row with the run's key.
ALTER TABLE runs ADD COLUMN turns bigint NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN inbox_n bigint NOT NULL DEFAULT 0;
CREATE TABLE inbox (
    rk        bigint NOT NULL REFERENCES runs (rk),
    n         bigint NOT NULL,
    content   bytea  NOT NULL,
    posted_ns bigint NOT NULL,
    sum       bigint NOT NULL,
    PRIMARY KEY (rk, n)
);

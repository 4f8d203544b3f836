-- 0010: runs are conversations. turns counts the user turns a run
-- has taken (RunInfo.Turns); runs before this had one. The inbox holds
-- the user messages posted to a run (Runs.PostMessage) and not folded
-- into it yet: message n of run rk, numbered from 1 by run in the
-- order posted (inbox_n is the last number given, so racing posts get
-- different numbers and a number is never given twice). sum is a CRC-32C
-- over the row with the run's key.
ALTER TABLE runs ADD COLUMN turns INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN inbox_n INTEGER NOT NULL DEFAULT 0;
CREATE TABLE inbox (
    rk        INTEGER NOT NULL REFERENCES runs (rk),
    n         INTEGER NOT NULL,
    content   TEXT    NOT NULL,
    posted_ns INTEGER NOT NULL,
    sum       INTEGER NOT NULL,
    PRIMARY KEY (rk, n)
) WITHOUT ROWID;

-- 0003: a step row holds one body (its action, result, state head and new
-- messages, compressed with S2 when that pays; store/internal/codec), a
-- model call's tool list is stored once (tool_lists, by digest) instead of
-- in every model step, and segments are compressed. The rows of the
-- earlier layout are converted by the Go part of this migration
-- (migrateCompactSteps), in the same transaction.
CREATE TABLE steps_new (
    id         INTEGER PRIMARY KEY,
    rk         INTEGER NOT NULL REFERENCES runs (rk),
    seq        INTEGER NOT NULL,
    created_ns INTEGER NOT NULL,
    msg_count  INTEGER NOT NULL,
    msg_sum    INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    sum        INTEGER NOT NULL,
    CHECK (seq BETWEEN 0 AND 4294967295 AND id = (rk << 32) + seq)
);

-- A tool list, by the SHA-256 of its encoding (core.AppendTools).
CREATE TABLE tool_lists (
    digest BLOB PRIMARY KEY,
    body   BLOB NOT NULL
);

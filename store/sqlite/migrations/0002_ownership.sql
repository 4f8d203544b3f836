-- 0002: run ownership (leases), the statuses stalled and cancelled, and the
-- agent changes of a run. See docs/adr/0010-run-ownership.md.
--
-- SQLite cannot change a CHECK constraint in place, so runs is rebuilt
-- (https://sqlite.org/lang_altertable.html#otheralter); foreign keys are not
-- enforced by this store (ADR 0008), and rk values are kept, so the other
-- tables' references stay valid.
CREATE TABLE runs_new (
    rk          INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    agent       TEXT    NOT NULL,
    config_hash TEXT    NOT NULL,
    config      BLOB    NOT NULL,
    input       TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('running', 'awaiting_tool_results', 'interrupted', 'stalled',
                                                   'completed', 'failed', 'cancelled')),
    created_ns  INTEGER NOT NULL,
    updated_ns  INTEGER NOT NULL,
    answer      TEXT    NOT NULL DEFAULT '',
    fail_code   TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT '',
    parent_id   TEXT    NOT NULL DEFAULT '',
    parent_step INTEGER NOT NULL DEFAULT 0,
    -- stalled: when the next attempt may start (0: at once).
    retry_ns    INTEGER NOT NULL DEFAULT 0,
    -- The lease: who drives the run, until when. lease_token is the fencing
    -- token: it grows by one at every acquisition, and every write that
    -- belongs to driving the run checks it in the same transaction.
    lease_owner      TEXT    NOT NULL DEFAULT '',
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_ns INTEGER NOT NULL DEFAULT 0
);
INSERT INTO runs_new (rk, id, agent, config_hash, config, input, status, created_ns, updated_ns,
                      answer, fail_code, reason, parent_id, parent_step)
    SELECT rk, id, agent, config_hash, config, input, status, created_ns, updated_ns,
           answer, fail_code, reason, parent_id, parent_step FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_newest ON runs (created_ns DESC, id);
CREATE INDEX runs_status ON runs (status, created_ns DESC);

-- An agent change: from step seq on (the steps after it), the run is driven
-- by config (resume --agent, recorded with the run). runs.config stays the
-- agent the run started with. sum is a CRC-32C over the row.
CREATE TABLE agent_changes (
    ord        INTEGER PRIMARY KEY,
    rk         INTEGER NOT NULL REFERENCES runs (rk),
    seq        INTEGER NOT NULL,
    created_ns INTEGER NOT NULL,
    config     BLOB    NOT NULL,
    sum        INTEGER NOT NULL
);
CREATE INDEX agent_changes_run ON agent_changes (rk, ord);

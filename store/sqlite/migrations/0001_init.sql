-- 0001: runs, steps, the message log, side-effect intents, memory.
-- See docs/adr/0004-store-layout.md and store/doc.go.

-- A run. rk is the internal key the other tables use; id is the caller's.
-- The row changes only when the status does (and with SetStatus): the last
-- step and the time of the last change come from the steps.
CREATE TABLE runs (
    rk          INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    agent       TEXT    NOT NULL,
    config_hash TEXT    NOT NULL,
    config      BLOB    NOT NULL,
    input       TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('running', 'awaiting_tool_results', 'completed', 'failed', 'interrupted')),
    created_ns  INTEGER NOT NULL,
    updated_ns  INTEGER NOT NULL,
    answer      TEXT    NOT NULL DEFAULT '',
    fail_code   TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT '',
    parent_id   TEXT    NOT NULL DEFAULT '',
    parent_step INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_newest ON runs (created_ns DESC, id);

-- A step, append-only: the result that followed the previous step's action,
-- this step's action (NULL at step 0), the state's head (the state encoded
-- without its messages) and the messages the state appended to the run's
-- log (canonical CBOR, concatenated; NULL when none). msg_count is how many
-- messages the state holds, msg_sum the checksum of the last one's encoding
-- (the append-only check of the next step). sum is a CRC-32C over the row.
-- id is rk << 32 | seq: a run's steps are contiguous in one rowid b-tree,
-- which keeps rows of any size cheap to append (no second index, large rows
-- stored locally) and range scans of a run cheap to read.
CREATE TABLE steps (
    id         INTEGER PRIMARY KEY,
    rk         INTEGER NOT NULL REFERENCES runs (rk),
    seq        INTEGER NOT NULL,
    created_ns INTEGER NOT NULL,
    msg_count  INTEGER NOT NULL,
    msg_sum    INTEGER NOT NULL,
    action     BLOB,
    result     BLOB,
    head       BLOB    NOT NULL,
    msgs       BLOB,
    sum        INTEGER NOT NULL,
    CHECK (seq BETWEEN 0 AND 4294967295 AND id = (rk << 32) + seq)
);

-- Segments: the messages appended by steps seq_from..seq_to (64 steps,
-- aligned), copied into one row by the checkpoint of step seq_to, so that
-- loading a state reads one row per 64 steps. Messages first..first+n-1.
-- id is rk << 32 | seq_from.
CREATE TABLE segments (
    id       INTEGER PRIMARY KEY,
    rk       INTEGER NOT NULL REFERENCES runs (rk),
    seq_from INTEGER NOT NULL,
    seq_to   INTEGER NOT NULL,
    first    INTEGER NOT NULL,
    n        INTEGER NOT NULL,
    body     BLOB    NOT NULL,
    sum      INTEGER NOT NULL,
    CHECK (id = (rk << 32) + seq_from)
);

-- Side-effect intents: a tool call recorded before it runs (result NULL) and
-- its outcome after (result set). ord keeps the order they were recorded.
CREATE TABLE intents (
    ord          INTEGER PRIMARY KEY,
    rk           INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    call_id      TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    args         BLOB    NOT NULL,
    started_ns   INTEGER NOT NULL,
    result       BLOB,
    completed_ns INTEGER NOT NULL DEFAULT 0,
    sum          INTEGER NOT NULL,
    UNIQUE (rk, seq, call_id),
    FOREIGN KEY (rk) REFERENCES runs (rk)
);

-- Memory, scoped by namespace: entities with ordered observations, typed
-- relations, and a full-text index over each entity (docid = entity id).
CREATE TABLE mem_entities (
    id   INTEGER PRIMARY KEY,
    ns   TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    UNIQUE (ns, name)
);
CREATE TABLE mem_observations (
    entity_id INTEGER NOT NULL REFERENCES mem_entities (id),
    ord       INTEGER NOT NULL,
    text      TEXT    NOT NULL,
    PRIMARY KEY (entity_id, ord),
    UNIQUE (entity_id, text)
);
CREATE TABLE mem_relations (
    id      INTEGER PRIMARY KEY,
    from_id INTEGER NOT NULL REFERENCES mem_entities (id),
    to_id   INTEGER NOT NULL REFERENCES mem_entities (id),
    type    TEXT    NOT NULL,
    UNIQUE (from_id, type, to_id)
);
CREATE VIRTUAL TABLE mem_fts USING fts4 (name, type, observations, tokenize=unicode61);

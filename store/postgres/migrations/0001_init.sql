-- 0001: runs, steps, segments, intents, agent changes, tool lists, memory.
-- The same layout as store/sqlite after its migrations 0001-0003 (see
-- docs/adr/0004-store-layout.md and store/postgres/doc.go), in PostgreSQL
-- types: times are bigint nanoseconds since the epoch (UTC), checksums
-- bigint (CRC-32C, store/internal/codec), encodings bytea.
--
-- Free text that comes from models, tools or callers (a run's input, answer
-- and reason; intents' call ids and tools; memory) is bytea: PostgreSQL
-- text cannot hold NUL or invalid UTF-8, which SQLite stores as given.
--
-- Foreign keys are declared on the cold tables only. steps and segments
-- are written by the fenced insert, which reads the run's row (and locks
-- it) in the same statement, so their key holds by construction and a
-- foreign key would only add a second lookup to every checkpoint.

-- A run. rk is the internal key the other tables use (and the checksums
-- include); id is the caller's, compared byte by byte (COLLATE "C") as
-- SQLite does. The row changes only when the status does, with SetStatus,
-- and with the lease: the last step and the time of the last change come
-- from the steps.
CREATE TABLE runs (
    rk               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               text    COLLATE "C" NOT NULL UNIQUE,
    agent            text    NOT NULL,
    config_hash      text    NOT NULL,
    config           bytea   NOT NULL,
    input            bytea   NOT NULL,
    status           text    NOT NULL CHECK (status IN ('running', 'awaiting_tool_results', 'interrupted', 'stalled',
                                                        'completed', 'failed', 'cancelled')),
    created_ns       bigint  NOT NULL,
    updated_ns       bigint  NOT NULL,
    answer           bytea   NOT NULL DEFAULT '',
    fail_code        text    NOT NULL DEFAULT '',
    reason           bytea   NOT NULL DEFAULT '',
    parent_id        text    NOT NULL DEFAULT '',
    parent_step      bigint  NOT NULL DEFAULT 0,
    -- stalled: when the next attempt may start (0: at once).
    retry_ns         bigint  NOT NULL DEFAULT 0,
    -- The lease: who drives the run, until when. lease_token is the fencing
    -- token: it grows by one at every acquisition, and every write that
    -- belongs to driving the run checks it in the same statement or
    -- transaction (docs/adr/0010-run-ownership.md).
    lease_owner      text    NOT NULL DEFAULT '',
    lease_token      bigint  NOT NULL DEFAULT 0,
    lease_expires_ns bigint  NOT NULL DEFAULT 0
);
CREATE INDEX runs_newest ON runs (created_ns DESC, id);
CREATE INDEX runs_status ON runs (status, created_ns DESC, id);
CREATE INDEX runs_agent ON runs (agent, created_ns DESC, id);
-- The runs a worker may claim, oldest first (Claim).
CREATE INDEX runs_runnable ON runs (created_ns, id) WHERE status IN ('running', 'stalled');

-- A step, append-only and never modified: its body (action, result, state
-- head, the messages it appended, compressed when that pays; see
-- store/internal/codec), msg_count (how many messages the state holds) and
-- msg_sum (the checksum of the last one's encoding, for the append-only
-- check). sum is a CRC-32C over the row with the run's key. The primary key
-- (rk, seq) keeps a run's steps together in one b-tree, and is the last
-- fence against a second writer.
CREATE TABLE steps (
    rk         bigint NOT NULL,
    seq        bigint NOT NULL CHECK (seq BETWEEN 0 AND 4294967295),
    created_ns bigint NOT NULL,
    msg_count  bigint NOT NULL,
    msg_sum    bigint NOT NULL,
    body       bytea  NOT NULL,
    sum        bigint NOT NULL,
    PRIMARY KEY (rk, seq)
);
-- Bodies are compressed by the codec already: no second try with pglz.
ALTER TABLE steps ALTER COLUMN body SET STORAGE EXTERNAL;

-- Segments: the messages appended by steps seq_from..seq_to (64 steps,
-- aligned), copied into one row by the checkpoint of step seq_to, so that
-- loading a state reads one row per 64 steps. Messages first..first+n-1.
CREATE TABLE segments (
    rk       bigint NOT NULL,
    seq_from bigint NOT NULL,
    seq_to   bigint NOT NULL,
    first    bigint NOT NULL,
    n        bigint NOT NULL,
    body     bytea  NOT NULL,
    sum      bigint NOT NULL,
    PRIMARY KEY (rk, seq_from)
);
ALTER TABLE segments ALTER COLUMN body SET STORAGE EXTERNAL;

-- Side-effect intents: a tool call recorded before it runs (result NULL) and
-- its outcome after (result set). ord keeps the order they were recorded.
CREATE TABLE intents (
    ord          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rk           bigint NOT NULL REFERENCES runs (rk),
    seq          bigint NOT NULL,
    call_id      bytea  NOT NULL,
    tool         bytea  NOT NULL,
    args         bytea  NOT NULL,
    started_ns   bigint NOT NULL,
    result       bytea,
    completed_ns bigint NOT NULL DEFAULT 0,
    sum          bigint NOT NULL,
    UNIQUE (rk, seq, call_id)
);

-- An agent change: from the step after seq on, the run is driven by config
-- (resume --agent). runs.config stays the agent the run started with.
CREATE TABLE agent_changes (
    ord        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rk         bigint NOT NULL REFERENCES runs (rk),
    seq        bigint NOT NULL,
    created_ns bigint NOT NULL,
    config     bytea  NOT NULL,
    sum        bigint NOT NULL
);
CREATE INDEX agent_changes_run ON agent_changes (rk, ord);

-- A model call's tool list, by the SHA-256 of its encoding
-- (core.AppendTools), stored once per database.
CREATE TABLE tool_lists (
    digest bytea PRIMARY KEY,
    body   bytea NOT NULL
);

-- Memory, scoped by namespace: entities with ordered observations and typed
-- relations. Each entity carries its full-text index: the words of its
-- name, type and observations, folded (store/postgres/fts.go), one tsvector
-- per field, and each field's length in words, for BM25
-- (memory_search.go). mem_totals holds the sums BM25 needs over all
-- entities (the row count and each field's total length), as SQLite's FTS4
-- keeps them. Uniqueness of names and observations is on their SHA-256, so
-- that text of any length can be stored.
CREATE TABLE mem_entities (
    id       bigint   GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns       text     NOT NULL,
    name     bytea    NOT NULL,
    type     bytea    NOT NULL DEFAULT '',
    fts_name tsvector NOT NULL DEFAULT '',
    fts_type tsvector NOT NULL DEFAULT '',
    fts_obs  tsvector NOT NULL DEFAULT '',
    len_name bigint   NOT NULL DEFAULT 0,
    len_type bigint   NOT NULL DEFAULT 0,
    len_obs  bigint   NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX mem_entities_name ON mem_entities (ns, sha256(name));
CREATE INDEX mem_entities_fts_name ON mem_entities USING gin (fts_name);
CREATE INDEX mem_entities_fts_type ON mem_entities USING gin (fts_type);
CREATE INDEX mem_entities_fts_obs ON mem_entities USING gin (fts_obs);

CREATE TABLE mem_observations (
    entity_id bigint NOT NULL REFERENCES mem_entities (id),
    ord       bigint NOT NULL,
    text      bytea  NOT NULL,
    PRIMARY KEY (entity_id, ord)
);
CREATE UNIQUE INDEX mem_observations_text ON mem_observations (entity_id, sha256(text));

CREATE TABLE mem_relations (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_id bigint NOT NULL REFERENCES mem_entities (id),
    to_id   bigint NOT NULL REFERENCES mem_entities (id),
    type    bytea  NOT NULL,
    UNIQUE (from_id, type, to_id)
);

CREATE TABLE mem_totals (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    n        bigint  NOT NULL,
    len_name bigint  NOT NULL,
    len_type bigint  NOT NULL,
    len_obs  bigint  NOT NULL
);
INSERT INTO mem_totals (n, len_name, len_type, len_obs) VALUES (0, 0, 0, 0);

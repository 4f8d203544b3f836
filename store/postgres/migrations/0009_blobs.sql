-- 0009: what every run of an agent repeats is stored once (ADR 0035). A
-- body (an agent's config, or a run's first message when it is the
-- agent's instructions, as its canonical CBOR) by the SHA-256 of its
-- bytes. A run or agent change whose config_ref is set keeps an empty
-- config and reads it from here; step 0's row refers to its first message
-- by digest (store/internal/codec/blobs.go). Rows from before keep
-- everything inline.
CREATE TABLE blobs (
    digest bytea PRIMARY KEY,
    body   bytea NOT NULL
);
ALTER TABLE runs ADD COLUMN config_ref bytea;
ALTER TABLE agent_changes ADD COLUMN config_ref bytea;

-- 0006: the results of tools an agent declares cacheable across runs
-- (store.ToolCache), by a digest of agent, tool and arguments (never the
-- arguments), each until it expires. result is a core.ToolResult in CBOR
-- (output and sources); sum is the row's checksum.
CREATE TABLE tool_cache (
	key        TEXT    PRIMARY KEY,
	tool       TEXT    NOT NULL,
	result     BLOB    NOT NULL,
	stored_ns  INTEGER NOT NULL,
	expires_ns INTEGER NOT NULL,
	sum        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tool_cache_expires ON tool_cache (expires_ns);

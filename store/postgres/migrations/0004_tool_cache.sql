-- 0004: the results of tools an agent declares cacheable across runs
-- (store.ToolCache), by a digest of agent, tool and arguments (never the
-- arguments), each until it expires. result is a core.ToolResult in CBOR
-- (output and sources); sum is the row's checksum.
CREATE TABLE tool_cache (
	key        text   PRIMARY KEY,
	tool       text   NOT NULL,
	result     bytea  NOT NULL,
	stored_ns  bigint NOT NULL,
	expires_ns bigint NOT NULL,
	sum        bigint NOT NULL
);
CREATE INDEX tool_cache_expires ON tool_cache (expires_ns);

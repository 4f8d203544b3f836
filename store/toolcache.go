package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// ToolCache keeps the results of tools an agent declares cacheable across
// runs, each until it expires (see shell.CachePolicy). store/sqlite and
// store/postgres implement it beside Store; a store without it cannot run
// an agent whose cache outlives a run. Entries are keyed by a digest
// (ToolCacheKey), never by the arguments themselves; a value is a tool's
// result as the run recorded it, so secrets in it are already redacted.
// Expiry is judged by the store's clock.
type ToolCache interface {
	// CachedResult returns the entry stored under key, unless it has
	// expired: ErrNotFound then, and when there is none. A corrupt entry is
	// ErrCorrupt, never returned as a result.
	CachedResult(ctx context.Context, key string) (CachedResult, error)
	// CacheResult stores e under e.Key until ttl from now, replacing any
	// entry with that key; entries already expired are removed. A ttl that
	// is not positive is an error.
	CacheResult(ctx context.Context, e CachedResult, ttl time.Duration) error
}

// CachedResult is one entry of a ToolCache: a successful tool result.
type CachedResult struct {
	Key string
	// Tool names the tool, for people reading the store.
	Tool    string
	Output  string
	Sources []string
	// Stored and Expires are set by the store.
	Stored, Expires time.Time
}

// ToolCacheKey is the key of the result of tool called with args (its
// canonical JSON arguments) by agent, where version identifies what the
// tool is (the shell passes shell.CachePolicy.Version: a digest of the
// tool's table in the agent file), so that a changed tool does not get the
// results of the one before. It is the SHA-256 digest, in hex, of the
// four, so neither the arguments nor anything in them is stored.
func ToolCacheKey(agent, tool, version string, args []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(agent), []byte(tool), []byte(version), args} {
		var n [8]byte
		for i, l := 0, uint64(len(part)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

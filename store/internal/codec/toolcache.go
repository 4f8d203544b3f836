package codec

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// ToolCacheSum is the checksum of a tool_cache row.
func ToolCacheSum(key, tool string, result []byte, storedNs, expiresNs int64) int64 {
	var h Summer
	h.Str(key)
	h.Str(tool)
	h.Blob(result)
	h.Int(storedNs)
	h.Int(expiresNs)
	return h.Sum()
}

// CacheRow is a tool_cache row as both stores keep it: the result as CBOR
// (a core.ToolResult holding the output and sources), times in ns.
type CacheRow struct {
	Key, Tool           string
	Result              []byte
	StoredNs, ExpiresNs int64
	Sum                 int64
}

// NewCacheRow makes the row of e, stored at now for ttl.
func NewCacheRow(e store.CachedResult, now, expires int64) (CacheRow, error) {
	body, err := EncodeIntentResult(core.ToolResult{Output: e.Output, Sources: e.Sources})
	if err != nil {
		return CacheRow{}, err
	}
	r := CacheRow{Key: e.Key, Tool: e.Tool, Result: body, StoredNs: now, ExpiresNs: expires}
	r.Sum = ToolCacheSum(r.Key, r.Tool, r.Result, r.StoredNs, r.ExpiresNs)
	return r, nil
}

// Entry checks the row's checksum and decodes it (store.ErrCorrupt when
// either fails).
func (r CacheRow) Entry() (store.CachedResult, error) {
	if ToolCacheSum(r.Key, r.Tool, r.Result, r.StoredNs, r.ExpiresNs) != r.Sum {
		return store.CachedResult{}, fmt.Errorf("%w: the tool cache entry %s fails its checksum", store.ErrCorrupt, r.Key)
	}
	res, err := DecodeIntentResult(r.Result)
	if err != nil {
		return store.CachedResult{}, fmt.Errorf("%w: the tool cache entry %s does not decode: %v", store.ErrCorrupt, r.Key, err)
	}
	return store.CachedResult{Key: r.Key, Tool: r.Tool, Output: res.Output, Sources: res.Sources,
		Stored: FromNs(r.StoredNs), Expires: FromNs(r.ExpiresNs)}, nil
}

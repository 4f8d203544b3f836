package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// TestToolCacheCorruptAndArgsNotStored: a tool cache entry whose bytes
// changed is reported corrupt, never used; the arguments it was keyed by
// are stored nowhere (only their digest is).
func TestToolCacheCorruptAndArgsNotStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	key := store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"argument-text-7731"}`))
	if err := s.CacheResult(ctx, store.CachedResult{Key: key, Tool: "lookup", Output: "a desk lamp"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tool_cache WHERE position('argument-text-7731' IN key || tool || encode(result, 'escape')) > 0`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the arguments are in the tool cache (%d rows, %v)", n, err)
	}
	flip(t, s, "tool_cache", "result", "key = '"+key+"'", 5)
	_, err := s.CachedResult(ctx, key)
	wantCorrupt(t, err, key)
}

package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// testToolCache: a tool cache entry reads back whole, from this store and
// another on the database, until it expires by the store's clock, and is
// ErrNotFound after; storing under a key replaces its entry; a ttl that is
// not positive is refused.
func testToolCache(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	tc, ok := s.(store.ToolCache)
	if !ok {
		t.Fatalf("the store (%T) does not implement store.ToolCache", s)
	}
	key := store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"lamp"}`))
	if _, err := tc.CachedResult(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an empty cache: %v", err)
	}
	e := store.CachedResult{Key: key, Tool: "lookup", Output: "a desk lamp, 19.90 ✓", Sources: []string{"https://shop.test/lamp", "file:///prices.csv"}}
	must(t, tc.CacheResult(ctx, e, time.Hour))
	other := reopen(t, h, s, clock.Now).(store.ToolCache)
	for _, c := range []store.ToolCache{tc, other} {
		got, err := c.CachedResult(ctx, key)
		must(t, err)
		if got.Key != key || got.Tool != "lookup" || got.Output != e.Output || !slices.Equal(got.Sources, e.Sources) {
			t.Fatalf("read back %+v, stored %+v", got, e)
		}
		if got.Stored.IsZero() || got.Expires.Sub(got.Stored) != time.Hour {
			t.Fatalf("stored %s, expires %s: want an hour apart", got.Stored, got.Expires)
		}
	}
	// Another key is another entry; the same key is replaced.
	key2 := store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"desk"}`))
	must(t, tc.CacheResult(ctx, store.CachedResult{Key: key2, Tool: "lookup", Output: "a desk"}, 3*time.Hour))
	must(t, tc.CacheResult(ctx, store.CachedResult{Key: key, Tool: "lookup", Output: "a desk lamp, 17.50"}, time.Hour))
	if got, err := other.CachedResult(ctx, key); err != nil || got.Output != "a desk lamp, 17.50" || got.Sources != nil {
		t.Fatalf("after replacing: %+v, %v", got, err)
	}
	// Past its expiry an entry is gone; the longer-lived one stays.
	clock.Add(time.Hour + time.Second)
	for _, c := range []store.ToolCache{tc, other} {
		if got, err := c.CachedResult(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an expired entry: %+v, %v", got, err)
		}
		if got, err := c.CachedResult(ctx, key2); err != nil || got.Output != "a desk" {
			t.Fatalf("an entry not yet expired: %+v, %v", got, err)
		}
	}
	// An expired key can be stored again.
	must(t, tc.CacheResult(ctx, store.CachedResult{Key: key, Tool: "lookup", Output: "again"}, time.Minute))
	if got, err := other.CachedResult(ctx, key); err != nil || got.Output != "again" {
		t.Fatalf("stored again after expiry: %+v, %v", got, err)
	}
	clock.Add(2 * time.Hour)
	if _, err := tc.CachedResult(ctx, key2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("every entry expired: %v", err)
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		if err := tc.CacheResult(ctx, store.CachedResult{Key: key, Tool: "lookup", Output: "x"}, ttl); err == nil {
			t.Fatalf("ttl %s was accepted", ttl)
		}
	}
}

package store_test

import (
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

func TestToolCacheKey(t *testing.T) {
	base := store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"lamp"}`))
	if base != store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"lamp"}`)) {
		t.Fatal("the same call gives two keys")
	}
	if len(base) != 64 || strings.Contains(base, "lamp") {
		t.Fatalf("key %q is not a hex SHA-256 digest", base)
	}
	for _, other := range []string{
		store.ToolCacheKey("agent2", "lookup", "v1", []byte(`{"q":"lamp"}`)),
		store.ToolCacheKey("agent", "lookup2", "v1", []byte(`{"q":"lamp"}`)),
		store.ToolCacheKey("agent", "lookup", "v2", []byte(`{"q":"lamp"}`)),
		store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"lamp2"}`)),
		// The parts are length-prefixed: moving a byte from one to the
		// next is another key.
		store.ToolCacheKey("agentl", "ookup", "v1", []byte(`{"q":"lamp"}`)),
		store.ToolCacheKey("agent", "lookupv", "1", []byte(`{"q":"lamp"}`)),
	} {
		if other == base {
			t.Fatal("two different calls share a key")
		}
	}
}

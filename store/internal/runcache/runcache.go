// Package runcache is what a store remembers of the runs it writes (see
// codec.RunCache), sized for a server that drives a thousand runs at once.
//
// A codec.RunCache remembers the tails of 256 runs. A server with more
// runs in flight than that evicted a tail at nearly every checkpoint, and
// the next checkpoint of that run read its tail back (one more query, and
// on SQLite the general write path instead of the group-committed insert).
// Cache spreads the tails over shards, each a codec.RunCache with its own
// lock, by a hash of the run's id: 16 x 256 tails, a few hundred kilobytes
// at most. Open segments, which hold rows, stay in one codec.RunCache,
// bounded as before.
package runcache

import (
	"hash/maphash"

	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// shards is how many codec.RunCaches hold tails.
const shards = 16

var seed = maphash.MakeSeed()

// Cache remembers runs' tails and open segments; the zero value is ready.
type Cache struct {
	tails    [shards]codec.RunCache // tails only
	segments codec.RunCache         // open segments only
}

func (c *Cache) shard(runID string) *codec.RunCache {
	return &c.tails[maphash.String(seed, runID)%shards]
}

// Tail returns the run's remembered tail.
func (c *Cache) Tail(runID string) (codec.Tail, bool) { return c.shard(runID).Tail(runID) }

// SetTail remembers the run's tail after a committed checkpoint.
func (c *Cache) SetTail(runID string, t codec.Tail) { c.shard(runID).SetTail(runID, t) }

// ForgetTail drops the run's tail.
func (c *Cache) ForgetTail(runID string) { c.shard(runID).ForgetTail(runID) }

// OpenSegment returns the remembered open segment of run rk.
func (c *Cache) OpenSegment(rk int64) *codec.OpenSegment { return c.segments.OpenSegment(rk) }

// SetOpenSegment remembers the open segment of run rk; nil forgets it.
func (c *Cache) SetOpenSegment(rk int64, o *codec.OpenSegment) { c.segments.SetOpenSegment(rk, o) }

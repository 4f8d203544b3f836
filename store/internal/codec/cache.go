package codec

import "sync"

// RunCache remembers, for the runs a store writes, each run's tail after a
// committed checkpoint and its open segment, so the next checkpoint needs
// no read-back. It is safe against other writers because a checkpoint
// inserts exactly (run, seq+1), the step table's key, and is fenced by the
// run's lease: if anyone else appended to the run, the insert fails, the
// entry is dropped, and the retry reads the truth. A tail is used only for
// the step right after it. Both maps are bounded.
type RunCache struct {
	mu       sync.Mutex
	tails    map[string]Tail
	segments map[int64]*OpenSegment
}

// The bounds: the runs whose tails are remembered (a server drives a
// thousand runs at once, and a tail forgotten costs its next checkpoint a
// read and, on SQLite, the general write path; a tail is a few dozen
// bytes), and those whose open segments are (each holds up to a
// segment's messages).
const (
	maxTails    = 4096
	maxSegments = 256
)

// Tail returns the run's remembered tail.
func (c *RunCache) Tail(runID string) (Tail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tails[runID]
	return t, ok
}

// SetTail remembers the run's tail after a committed checkpoint.
func (c *RunCache) SetTail(runID string, t Tail) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tails == nil {
		c.tails = map[string]Tail{}
	}
	if _, ok := c.tails[runID]; !ok && len(c.tails) >= maxTails {
		for k := range c.tails { // evict any one
			delete(c.tails, k)
			break
		}
	}
	c.tails[runID] = t
}

// ForgetTail drops the run's tail: after a failed checkpoint, a status
// change made outside a checkpoint, or a change of driver.
func (c *RunCache) ForgetTail(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tails, runID)
}

// OpenSegment returns the remembered open segment of run rk.
func (c *RunCache) OpenSegment(rk int64) *OpenSegment {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.segments[rk]
}

// SetOpenSegment remembers the open segment of run rk once the step that
// made it committed; nil forgets it.
func (c *RunCache) SetOpenSegment(rk int64, o *OpenSegment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o == nil {
		delete(c.segments, rk)
		return
	}
	if c.segments == nil {
		c.segments = map[int64]*OpenSegment{}
	}
	if _, ok := c.segments[rk]; !ok && len(c.segments) >= maxSegments {
		for k := range c.segments { // evict any one
			delete(c.segments, k)
			break
		}
	}
	c.segments[rk] = o
}

package shell

import (
	"sync"

	"github.com/stepwise-agent/stepwise/core"
)

// stateCache remembers the last state this runner checkpointed of the runs
// it drives, so that driving a run again (a server's worker after an
// answer, a requeue) starts from it instead of decoding the whole
// conversation from the store: a checkpoint at seq is only ever the one
// this runner wrote there (seqs are unique and append-only), so while the
// store's last seq is the one remembered, the state is the stored one.
// The log of a remembered state is shared safely: core appends to a log
// only in slots no other state uses (core/log.go), and one holder at a time
// drives a run. Bounded; a run that ends is forgotten.
type stateCache struct {
	mu   sync.Mutex
	runs map[string]cachedState
}

type cachedState struct {
	seq int
	st  core.State
}

// maxCachedStates bounds the cache (a server drives at most its workers'
// count of runs at once).
const maxCachedStates = 4096

func (c *stateCache) put(runID string, seq int, st core.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]cachedState{}
	}
	if _, ok := c.runs[runID]; !ok && len(c.runs) >= maxCachedStates {
		for k := range c.runs { // evict one, any
			delete(c.runs, k)
			break
		}
	}
	c.runs[runID] = cachedState{seq, st}
}

// get returns the state remembered at seq.
func (c *stateCache) get(runID string, seq int) (core.State, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.runs[runID]
	if !ok || e.seq != seq {
		return core.State{}, false
	}
	return e.st, true
}

func (c *stateCache) forget(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, runID)
}

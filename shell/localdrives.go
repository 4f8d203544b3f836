package shell

import (
	"sync"
	"time"
)

// localDrives are the drives this process runs now, by run id, whichever
// Runner runs them: Cancel tells the one that drives a run to look for its
// request at once, rather than at its heartbeat's next renewal. (It is
// process-wide because the drives of a process are: a server cancels
// through one Runner the runs its workers drive through another.) A drive
// told so reads the request from its own store, so a run id that another
// store shares costs a read and changes nothing.
var localDrives = driveSet{m: map[string]map[*holding]struct{}{}}

// driveSet is a set of drives by run id.
type driveSet struct {
	mu sync.Mutex
	m  map[string]map[*holding]struct{}
}

// add records that h drives runID until the returned func is called.
func (d *driveSet) add(runID string, h *holding) (remove func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hs := d.m[runID]
	if hs == nil {
		hs = map[*holding]struct{}{}
		d.m[runID] = hs
	}
	hs[h] = struct{}{}
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		// h is in the set of runID now: a set is only dropped empty.
		delete(d.m[runID], h)
		if len(d.m[runID]) == 0 {
			delete(d.m, runID)
		}
	}
}

// nudge makes each drive of runID here look for a requested cancellation
// now (holding.watchCancel), which cuts its call in flight short; here
// reports whether there was one, and ttl is the longest of their leases'
// TTLs.
func (d *driveSet) nudge(runID string) (ttl time.Duration, here bool) {
	d.mu.Lock()
	hs := make([]*holding, 0, len(d.m[runID]))
	for h := range d.m[runID] {
		hs = append(hs, h)
	}
	d.mu.Unlock()
	for _, h := range hs {
		h.watchCancel()
		ttl = max(ttl, h.r.opts.LeaseTTL)
	}
	return ttl, len(hs) > 0
}

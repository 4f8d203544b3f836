package sqlite

import (
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// leaseWatch is how this store judges that a lease lapsed without trusting
// a clock another process wrote (docs/adr/0027-one-clock.md): it remembers
// each held lease it looked at (holder, token, heartbeat) and when, by its
// own clock, it first saw that heartbeat. A lease is lapsed once the store
// has seen the same heartbeat for the holder's TTL. The holder, renewing
// every third of its TTL, stops acting once its own monotonic clock says
// its lease expired unrenewed; the watch starts after the holder's last
// renewal committed, so the take-over comes after that.
//
// Time is the difference of two readings of the store's Now: with
// time.Now (or time.Now shifted by a constant), Go subtracts their
// monotonic readings, so a wall clock that jumps or is set hours off
// changes nothing.
type leaseWatch struct {
	mu   sync.Mutex
	seen map[string]watched
	// kept is how many entries the last prune kept (pruneLocked).
	kept int
}

// watched is a lease as the store last saw it.
type watched struct {
	owner       string
	token, beat int64
	// since is when this heartbeat was first seen; looked is the last
	// look (entries not looked at for long are dropped).
	since, looked time.Time
}

// verdict is what a look at a lease concluded.
type verdict struct {
	expired bool
	// recheck is how much longer the heartbeat must stay still.
	recheck time.Duration
	// renewed: the heartbeat moved since the store last looked.
	renewed bool
}

// look records a look at lease l whose heartbeat is beat and TTL ttl, at
// now, and says whether it lapsed.
func (w *leaseWatch) look(l store.Lease, beat int64, ttl time.Duration, now time.Time) verdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]watched{}
	}
	w.pruneLocked(now)
	prev, ok := w.seen[l.RunID]
	if !ok || prev.owner != l.Owner || prev.token != l.Token || prev.beat != beat {
		w.seen[l.RunID] = watched{owner: l.Owner, token: l.Token, beat: beat, since: now, looked: now}
		return verdict{recheck: ttl, renewed: ok && prev.owner == l.Owner && prev.token == l.Token}
	}
	prev.looked = now
	w.seen[l.RunID] = prev
	still := now.Sub(prev.since)
	if still >= ttl {
		return verdict{expired: true}
	}
	return verdict{recheck: ttl - still}
}

// forget drops the run's entry: this store took its lease.
func (w *leaseWatch) forget(runID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.seen, runID)
}

// watchIdle is how long an entry no one looks at is kept.
const watchIdle = 10 * time.Minute

// pruneLocked drops the entries no one looked at for watchIdle, once the
// map has grown to 1024 entries and to twice what the last prune kept
// (w.mu is held). Each look calls it, and a claim looks at every held
// runnable run, so pruning at every look past 1024 made a claim cost the
// held runs times the map: with thousands of runs created at once most of
// the server's CPU (BenchmarkWaitingRuns, docs/performance.md). Doubling
// keeps pruning O(1) per entry, and the map at most twice the entries
// looked at within watchIdle.
func (w *leaseWatch) pruneLocked(now time.Time) {
	if len(w.seen) < max(1024, 2*w.kept) {
		return
	}
	for id, e := range w.seen {
		if d := now.Sub(e.looked); d > watchIdle || d < 0 {
			delete(w.seen, id)
		}
	}
	w.kept = len(w.seen)
}

package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// The cases of lease expiry judged on one clock, and of an operator's
// forced take-over (docs/adr/0027-one-clock.md).

// lapseSlack is how late after its TTL a lapsed lease may be taken over
// by a contender that keeps asking (polling, a loaded machine).
const lapseSlack = 1500 * time.Millisecond

// near reports whether two times, read on clocks of this host and the
// store's, agree to within lapseSlack.
func near(a, b time.Time) bool { return a.Sub(b).Abs() < lapseSlack }

// skewed is this host's clock set off by d: its readings keep Go's
// monotonic clock, as a host whose wall clock is wrong still has one.
func skewed(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// takeWhenLapsed asks s for run id's lease (by Acquire, or by Claim when
// claim is set) every poll until it gets it, and checks that it got it no
// sooner than ttl after since (when the holder's last renewal started) and
// no later than lapseSlack after that.
func takeWhenLapsed(t *testing.T, s store.Store, id, owner string, since time.Time, ttl, poll time.Duration, claim bool) store.Lease {
	t.Helper()
	ctx := context.Background()
	req := store.LeaseRequest{Owner: owner, TTL: time.Hour}
	for {
		var l store.Lease
		var err error
		if claim {
			l, err = s.Claim(ctx, req)
		} else {
			l, err = s.Acquire(ctx, id, req)
		}
		took := time.Since(since)
		switch {
		case err == nil && l.RunID != id:
			t.Fatalf("%s took run %s, want %s", owner, l.RunID, id)
		case err == nil && took < ttl:
			t.Fatalf("%s took the lease %v after the holder's last renewal, before its TTL %v", owner, took, ttl)
		case err == nil:
			return l
		case !errors.Is(err, store.ErrBusy) && !(claim && errors.Is(err, store.ErrNotFound)):
			t.Fatalf("%s asking for a lapsing lease: %v", owner, err)
		case took > ttl+lapseSlack:
			t.Fatalf("%s still refused %v after the holder's last renewal (TTL %v): %v", owner, took, ttl, err)
		}
		time.Sleep(poll)
	}
}

// testOneClock: contenders whose clocks are hours ahead of or behind the
// holder's never take a live run over (by Acquire or Claim) while its
// holder renews its lease; once the holder stops renewing (it died), a
// contender takes the run over within about the TTL of its last renewal,
// whatever the clock of the holder and of the contender: the holder's
// clock 1 h ahead pins nothing.
func testOneClock(t *testing.T, h Harness) {
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	contenderSkews := []time.Duration{2 * time.Hour, -2 * time.Hour, 0}
	for i, hs := range []time.Duration{0, time.Hour, -time.Hour} {
		holder := open(t, h, skewed(hs))
		var contenders []store.Store
		for _, cs := range contenderSkews {
			contenders = append(contenders, reopen(t, h, holder, skewed(cs)))
		}
		l, err := holder.CreateRun(ctx, store.NewRun{ID: "live", Agent: "a", Initial: initial("live"), Owner: "holder/1/h", LeaseTTL: ttl})
		must(t, err)
		// The holder renews every third of the TTL, as the shell does.
		var mu sync.Mutex
		lastRenewal := time.Now()
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			tick := time.NewTicker(ttl / 3)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				start := time.Now()
				next, err := holder.Renew(ctx, l, ttl)
				if err != nil {
					t.Errorf("holder clock %v: renew: %v", hs, err)
					return
				}
				mu.Lock()
				l, lastRenewal = next, start
				mu.Unlock()
			}
		}()
		for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			for j, c := range contenders {
				if got, err := c.Acquire(ctx, "live", store.LeaseRequest{Owner: "contender/2/c", TTL: time.Hour}); !errors.Is(err, store.ErrBusy) {
					t.Fatalf("holder clock %v, contender clock %v: acquired a live lease: %+v %v", hs, contenderSkews[j], got, err)
				}
				if got, err := c.Claim(ctx, store.LeaseRequest{Owner: "worker/3/w", TTL: time.Hour}); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("holder clock %v, worker clock %v: claimed a live run: %+v %v", hs, contenderSkews[j], got, err)
				}
			}
		}
		close(stop)
		<-stopped
		if t.Failed() {
			return
		}
		// The holder died: one contender takes the run over in time.
		mu.Lock()
		since := lastRenewal
		mu.Unlock()
		c := contenders[i%len(contenders)]
		took := takeWhenLapsed(t, c, "live", "contender/2/c", since, ttl, 10*time.Millisecond, i%2 == 1)
		if took.Token != l.Token+1 {
			t.Fatalf("holder clock %v: took token %d after %d", hs, took.Token, l.Token)
		}
		if _, err := holder.Renew(ctx, l, ttl); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("holder clock %v: the holder renewed after the take-over: %v", hs, err)
		}
	}
}

// testForcedTakeOver: an operator takes a live lease from exactly the
// holder it names (a stale name is refused); the take-over is recorded
// with the run, each one a line; the former holder then writes nothing.
func testForcedTakeOver(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	other := reopen(t, h, s, nil)
	old, g := create(t, s, "r", nil)
	must(t, s.Checkpoint(ctx, old, g.next()))
	if _, err := other.Acquire(ctx, "r", store.LeaseRequest{Owner: "op/2/x", TTL: time.Hour, Forced: "no holder named"}); err == nil || errors.Is(err, store.ErrBusy) {
		t.Fatalf("a forced request naming no holder: %v", err)
	}
	ri, err := other.Run(ctx, "r")
	must(t, err)
	holder := ri.Lease
	next, err := other.Acquire(ctx, "r", store.LeaseRequest{Owner: "op/2/x", TTL: time.Hour, TakeOver: &holder, Forced: "stepwise resume --take-over"})
	if err != nil || next.Token != old.Token+1 {
		t.Fatalf("forced take-over: %+v %v", next, err)
	}
	ri, err = other.Run(ctx, "r")
	must(t, err)
	if len(ri.TakeOvers) != 1 || !strings.Contains(ri.TakeOvers[0], "op/2/x took the run over from test/1/r") ||
		!strings.HasSuffix(ri.TakeOvers[0], "stepwise resume --take-over") {
		t.Fatalf("take-overs recorded: %q", ri.TakeOvers)
	}
	before := contents(t, other, "r")
	if err := s.Checkpoint(ctx, old, g.next()); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the former holder's checkpoint: %v", err)
	}
	if err := s.SetStatus(ctx, old, store.StatusChange{Status: store.StatusInterrupted}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the former holder's status: %v", err)
	}
	if _, err := s.Renew(ctx, old, time.Hour); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the former holder's renewal: %v", err)
	}
	if after := contents(t, other, "r"); after != before {
		t.Fatal("the former holder wrote after the take-over")
	}
	// A forced take-over naming a holder that is no longer the run's is
	// refused; the next one is recorded after the first.
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "op/3/y", TTL: time.Hour, TakeOver: &holder, Forced: "stale"}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("a forced take-over of a former holder: %v", err)
	}
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "op/3/y", TTL: time.Hour, TakeOver: &next, Forced: "cancel --take-over"}); err != nil {
		t.Fatal(err)
	}
	if ri, _ := s.Run(ctx, "r"); len(ri.TakeOvers) != 2 || !strings.Contains(ri.TakeOvers[1], "op/3/y took the run over from op/2/x") {
		t.Fatalf("take-overs recorded: %q", ri.TakeOvers)
	}
	if err := other.Checkpoint(ctx, next, g.next()); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the second former holder's checkpoint: %v", err)
	}
}

package server

import (
	"context"
	"errors"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// idlePoll is how often an idle server looks for work other servers made
// runnable (or stalled runs coming due).
const idlePoll = time.Second

// poke wakes one idle worker to claim: a run may be runnable.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// dispatch hands a run this server just made runnable (created, answered,
// resumed, forked) straight to an idle worker, which takes its lease; when
// every worker is busy (the queue is full), a claim finds it later.
func (s *Server) dispatch(runID string) {
	select {
	case s.ready <- runID:
	default:
		s.poke()
	}
}

// heldRun is a run created held for a worker waiting (handOver), and the
// agent it was created with.
type heldRun struct {
	ag *shell.Agent
	c  shell.Created
}

// handOverWait is how long a run created held waits for a worker when
// the one reserved is away (handOver).
const handOverWait = 50 * time.Millisecond

// reserve reserves a waiting worker for a run about to be created held
// (createRun): it reports false when none waits that another create has
// not reserved. Each reservation is handed a run (handOver) or given back
// (unreserve).
func (s *Server) reserve() bool {
	for {
		n := s.idle.Load()
		if n <= 0 {
			return false
		}
		if s.idle.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// unreserve gives a reservation back.
func (s *Server) unreserve() { s.idle.Add(1) }

// handOver gives a run created held under a reservation (createRun) to a
// waiting worker, which drives it at once: no lease to take, no read (ADR
// 0037). When none comes within handOverWait (the one reserved took
// another run meanwhile), or the server stops, the lease goes back and the
// run is dispatched as any other.
func (s *Server) handOver(h heldRun) {
	select {
	case s.created <- h:
		return // the worker took the reservation with the run
	default:
	}
	// The reserved worker is away: a claim or a poll takes it a moment,
	// after which it waits again.
	wait := time.NewTimer(handOverWait)
	defer wait.Stop()
	select {
	case s.created <- h:
		return
	case <-wait.C:
	case <-s.stop:
	}
	s.unreserve()
	if err := s.runner.Pool().Release(s.workCtx, h.c); err != nil {
		// The lease expires, and a worker claims the run then.
		s.logf("run %s: give back the lease of a run no worker took: %v", h.c.ID, err)
		return
	}
	s.dispatch(h.c.ID)
}

// work is one worker: it drives the runs handed to it (dispatch,
// handOver), and claims runnable runs (those other servers or the clock
// made runnable, and those dispatch could not hand over), until the
// server stops taking work. s.idle counts the workers waiting for work,
// less the reservations of creates (reserve): a worker that takes a run
// handed over takes its reservation with it, one that takes other work
// counts itself out.
func (s *Server) work(i int) {
	defer s.workers.Done()
	var poll <-chan time.Time
	if i == 0 {
		// One worker polls for what other servers made runnable; a
		// worker that claims a run wakes the next.
		t := time.NewTicker(idlePoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		s.idle.Add(1)
		select {
		case <-s.stop:
			s.idle.Add(-1)
			return
		case h := <-s.created:
			s.driveCreated(h)
		case id := <-s.ready:
			s.idle.Add(-1)
			s.take(id)
		case <-s.wake:
			s.idle.Add(-1)
			s.claim(i)
		case <-poll:
			s.idle.Add(-1)
			s.claim(i)
		}
	}
}

// driveCreated drives a run handed over at its creation.
func (s *Server) driveCreated(h heldRun) {
	defer s.hub.ended(h.c.ID, s.hub.began(h.c.ID))
	out, err := s.runner.Pool().DriveCreated(s.workCtx, h.ag, h.c, s.stop)
	s.logDrive(h.c.ID, out, err)
}

// take drives a run dispatched to this worker, when it is still runnable
// and no one else took it meanwhile.
func (s *Server) take(runID string) {
	acquired := time.Now()
	l, err := s.cfg.Store.Acquire(s.workCtx, runID, store.LeaseRequest{Owner: s.owner, TTL: s.leaseTTL()})
	if err != nil {
		return // another worker or server has it (or it is gone)
	}
	ri, err := s.cfg.Store.Run(s.workCtx, runID)
	if errors.Is(err, store.ErrCorrupt) {
		s.unreadable(l, err)
		return
	}
	if err != nil || !(ri.Status == store.StatusRunning || ri.Status == store.StatusStalled && !ri.RetryAt.After(time.Now())) {
		_ = s.cfg.Store.Release(context.WithoutCancel(s.workCtx), l)
		return
	}
	s.drive(l, acquired, ri)
}

// claim claims runnable runs and drives them, one after the other, until
// there are none (or the server stops).
func (s *Server) claim(i int) {
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		acquired := time.Now()
		l, err := s.cfg.Store.Claim(s.workCtx, store.LeaseRequest{Owner: s.owner, TTL: s.leaseTTL()})
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		if err != nil {
			s.logf("worker %d: claim: %v", i, err)
			return
		}
		s.poke() // there may be more
		info, err := s.cfg.Store.Run(s.workCtx, l.RunID)
		if errors.Is(err, store.ErrCorrupt) {
			s.unreadable(l, err)
			s.hub.notify(l.RunID)
			continue
		}
		if err != nil {
			s.logf("run %s: %v", l.RunID, err)
			_ = s.cfg.Store.Release(context.WithoutCancel(s.workCtx), l)
			s.hub.notify(l.RunID)
			continue
		}
		s.drive(l, acquired, info)
	}
}

// unreadable stalls a run whose record the store finds corrupt (err).
func (s *Server) unreadable(l store.Lease, err error) {
	s.logf("run %s: %v", l.RunID, err)
	s.setAside(l, "its stored record is unreadable: "+err.Error())
}

// setAside stalls a run this server cannot drive, with why, and gives its
// lease up: no worker claims it again at once (it would spin on it); the
// retry comes in 10 minutes, or at a resume once what stops it is mended.
func (s *Server) setAside(l store.Lease, reason string) {
	ctx := context.WithoutCancel(s.workCtx)
	_ = s.cfg.Store.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: reason, RetryAt: time.Now().Add(10 * time.Minute)})
	_ = s.cfg.Store.Release(ctx, l)
}

func (s *Server) leaseTTL() time.Duration {
	if s.cfg.Runner.LeaseTTL > 0 {
		return s.cfg.Runner.LeaseTTL
	}
	return shell.DefaultLeaseTTL
}

// drive drives a run whose lease l it holds with the agent the run
// recorded (info, read after the lease was taken).
func (s *Server) drive(l store.Lease, acquired time.Time, info store.RunInfo) {
	defer s.hub.ended(l.RunID, s.hub.began(l.RunID))
	ag, _, err := s.agents.bySource(info.Config)
	if err != nil {
		// Its agent does not load here (a file moved, a variable
		// unset): stalled, with why, so no worker loops on it; resume
		// with a fixed agent continues it.
		s.logf("run %s: its agent does not load: %v", l.RunID, err)
		s.setAside(l, "its agent does not load on this server: "+err.Error())
		return
	}
	// A cancellation reaches the drive through the runner (Runner.Cancel
	// tells a drive in this process at once), never by cutting its
	// context short here, which would leave the run interrupted.
	out, err := s.runner.Pool().DriveRead(s.workCtx, ag, l, acquired, info, s.stop)
	s.logDrive(l.RunID, out, err)
}

// logDrive logs how a drive of run id ended.
func (s *Server) logDrive(id string, out shell.Outcome, err error) {
	if err != nil {
		s.logf("run %s: %v", id, err)
		return
	}
	s.logf("run %s: %s after step %d", out.RunID, out.Status, out.Steps)
}

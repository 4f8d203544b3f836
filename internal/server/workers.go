package server

import (
	"context"
	"errors"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// errCancelRequested cuts a drive short for a cancellation.
var errCancelRequested = errors.New("interrupted to be cancelled")

// idlePoll is how often an idle server looks for work other servers made
// runnable (or stalled runs coming due).
const idlePoll = time.Second

// poke wakes one idle worker: a run may be runnable.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// work is one worker: it claims a runnable run, drives it, and again, until
// the server stops taking work.
func (s *Server) work(i int) {
	defer s.workers.Done()
	var idle *time.Ticker
	if i == 0 {
		// One worker polls for what other servers made runnable; a
		// worker that finds a run wakes the next.
		idle = time.NewTicker(idlePoll)
		defer idle.Stop()
	}
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		acquired := time.Now()
		l, err := s.cfg.Store.Claim(s.workCtx, store.LeaseRequest{Owner: s.owner, TTL: s.leaseTTL()})
		switch {
		case errors.Is(err, store.ErrNotFound):
			if !s.idle(idle) {
				return
			}
			continue
		case err != nil:
			s.logf("worker %d: claim: %v", i, err)
			if !s.idle(idle) {
				return
			}
			continue
		}
		s.poke() // there may be more
		s.drive(l, acquired)
	}
}

// idle waits for a poke or the poll; false once the server stops.
func (s *Server) idle(poll *time.Ticker) bool {
	var tick <-chan time.Time
	if poll != nil {
		tick = poll.C
	}
	select {
	case <-s.stop:
		return false
	case <-s.wake:
	case <-tick:
	}
	return true
}

func (s *Server) leaseTTL() time.Duration {
	if s.cfg.Runner.LeaseTTL > 0 {
		return s.cfg.Runner.LeaseTTL
	}
	return shell.DefaultLeaseTTL
}

// drive drives a claimed run with the agent it recorded.
func (s *Server) drive(l store.Lease, acquired time.Time) {
	defer s.hub.notify(l.RunID)
	info, err := s.cfg.Store.Run(s.workCtx, l.RunID)
	if err != nil {
		s.logf("run %s: %v", l.RunID, err)
		_ = s.cfg.Store.Release(context.WithoutCancel(s.workCtx), l)
		return
	}
	ag, _, err := s.agents.bySource(info.Config)
	if err != nil {
		// Its agent does not load here (a file moved, a variable
		// unset): stalled, with why, so no worker loops on it; resume
		// with a fixed agent continues it.
		s.logf("run %s: its agent does not load: %v", l.RunID, err)
		_ = s.cfg.Store.SetStatus(context.WithoutCancel(s.workCtx), l, store.StatusChange{Status: store.StatusStalled,
			Reason: "its agent does not load on this server: " + err.Error(), RetryAt: time.Now().Add(10 * time.Minute)})
		_ = s.cfg.Store.Release(context.WithoutCancel(s.workCtx), l)
		return
	}
	ctx, cancel := context.WithCancelCause(s.workCtx)
	s.mu.Lock()
	s.active[l.RunID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.active, l.RunID)
		s.mu.Unlock()
		cancel(nil)
	}()
	out, err := s.runner.Drive(ctx, ag, l, acquired, s.stop)
	if err != nil {
		s.logf("run %s: %v", l.RunID, err)
		return
	}
	s.logf("run %s: %s after step %d", out.RunID, out.Status, out.Steps)
}

// interruptLocal cuts short the drive of a run this server drives now,
// for a cancellation; it reports whether there was one.
func (s *Server) interruptLocal(runID string) bool {
	s.mu.Lock()
	cancel, ok := s.active[runID]
	s.mu.Unlock()
	if ok {
		cancel(errCancelRequested)
	}
	return ok
}

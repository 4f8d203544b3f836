package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// DefaultLeaseTTL is how long a run's lease lasts unless renewed. The
// holder renews it every third of that, so a driver that died frees its
// runs within DefaultLeaseTTL (at once when it ran on this host: see
// HolderAlive).
const DefaultLeaseTTL = 15 * time.Second

// Errors of run ownership, as the runner returns them.
var (
	// ErrBusy: another driver holds the run (store.BusyError says who).
	ErrBusy = store.ErrBusy
	// ErrLeaseLost: the run was taken over while this runner drove it; it
	// wrote nothing after that and started no side effect.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrAlreadyAnswered: results for a pause that another caller already
	// answered (the run moved on).
	ErrAlreadyAnswered = errors.New("the pause these results answer was already answered")
)

// NewOwner names this process as a lease holder: "host/pid/nonce", the
// nonce random so that two processes that reuse a pid never share a name.
func NewOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.ReplaceAll(host, "/", "_")
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Holder describes a lease holder parsed from its owner name.
type Holder struct {
	Host string
	PID  int
}

// ParseOwner reads an owner name written by NewOwner; ok is false for any
// other shape (a holder named by another program).
func ParseOwner(owner string) (h Holder, ok bool) {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return h, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return h, false
	}
	return Holder{Host: parts[0], PID: pid}, true
}

// String renders the holder for people: "pid 123 on host".
func (h Holder) String() string { return fmt.Sprintf("pid %d on %s", h.PID, h.Host) }

// HolderAlive tells whether the process named by owner is alive. known is
// false when this host cannot tell (the holder runs on another host, or
// the name is not one of ours): then only the lease's expiry tells.
func HolderAlive(owner string) (alive, known bool) {
	h, ok := ParseOwner(owner)
	if !ok {
		return false, false
	}
	host, err := os.Hostname()
	if err != nil || strings.ReplaceAll(host, "/", "_") != h.Host {
		return false, false
	}
	if h.PID == os.Getpid() {
		return true, true
	}
	err = syscall.Kill(h.PID, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false, true
	}
	return true, true // alive, or alive and not ours to signal (EPERM)
}

// DescribeLease renders who holds a run for people: "pid 123 on host
// (alive, lease until 12:00:03)", "pid 123 on host (dead)", or "" when no
// one holds it.
func DescribeLease(l store.Lease, now time.Time) string {
	if l.Owner == "" {
		return ""
	}
	who := l.Owner
	if h, ok := ParseOwner(l.Owner); ok {
		who = h.String()
	}
	alive, known := HolderAlive(l.Owner)
	switch {
	case known && !alive:
		return who + " (dead)"
	case !l.Live(now):
		return fmt.Sprintf("%s (lease expired at %s)", who, l.Expires.Local().Format(time.TimeOnly))
	case known:
		return fmt.Sprintf("%s (alive, lease until %s)", who, l.Expires.Local().Format(time.TimeOnly))
	}
	return fmt.Sprintf("%s (lease until %s)", who, l.Expires.Local().Format(time.TimeOnly))
}

// Driven reports whether a live driver holds the run: a live lease whose
// holder is not known to be dead.
func Driven(l store.Lease, now time.Time) bool {
	if !l.Live(now) {
		return false
	}
	alive, known := HolderAlive(l.Owner)
	return alive || !known
}

// acquire takes the run's lease: at once when it is free or its holder is
// a dead process on this host (or, with Options.TakeOver, whatever its
// holder), else by waiting up to Options.Wait for it to be released or to
// expire (and for a paused run, up to pauseSettle for its driver to let it
// go); otherwise ErrBusy, naming the holder.
//
// A store that judges expiry by watching the lease's heartbeat (SQLite:
// store.BusyError.Recheck) is asked again until it has watched long
// enough, when the holder may be dead: it is not known alive on this host,
// or its lease looks expired by this host's clock. A holder that renews
// ends that watch (within a third of its TTL); one that died is taken
// over about a TTL after its last renewal, whatever the clocks say. The
// watch lasts at most Options.LeaseTTL.
func (r *Runner) acquire(ctx context.Context, runID string) (store.Lease, error) {
	return r.acquireWithin(ctx, runID, r.opts.Wait)
}

// acquireWithin is acquire waiting up to wait (not Options.Wait).
func (r *Runner) acquireWithin(ctx context.Context, runID string, wait time.Duration) (store.Lease, error) {
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	req := store.LeaseRequest{Owner: r.opts.Owner, TTL: r.opts.LeaseTTL}
	settleBy := time.Now().Add(pauseSettle)
	settle := 100 * time.Microsecond
	renewed := false // the store saw the holder renew: stop watching
	// A watch lasts at most this runner's own TTL: a holder whose TTL is
	// longer (and renews as seldom) is refused as busy after it.
	watchBy := time.Now().Add(r.opts.LeaseTTL)
	forced := 0
	for {
		l, err := r.store.Acquire(ctx, runID, req)
		busy, ok := errors.AsType[*store.BusyError](err)
		if !ok {
			if err == nil && req.Forced != "" && req.TakeOver != nil {
				holder := *req.TakeOver
				r.emit(func() Event {
					return Event{RunID: runID, Kind: "takeover", Text: "took the run over from " + DescribeLease(holder, time.Now())}
				})
			}
			return l, err
		}
		alive, known := HolderAlive(busy.Holder.Owner)
		if r.opts.TakeOver != "" && forced < maxForced {
			// An operator's take-over: of exactly this holder, so that
			// a holder that changed meanwhile is looked at again.
			holder := busy.Holder
			req.TakeOver, req.Forced = &holder, r.opts.TakeOver
			forced++
			continue
		}
		if known && !alive {
			holder := busy.Holder
			req.TakeOver, req.Forced = &holder, "" // it died: take it over, unless someone else just did
			continue
		}
		req.TakeOver = nil
		renewed = renewed || busy.Renewed
		var wait time.Duration
		switch {
		case busy.Recheck > 0 && !renewed && (!known || !busy.Holder.Live(time.Now())) && time.Now().Before(watchBy):
			// The store watches the holder's heartbeat: ask again until
			// it moves (the holder lives) or the TTL passes without.
			wait = min(busy.Recheck, watchPoll)
		case time.Now().Before(settleBy) && r.pausedRun(ctx, runID):
			// A paused run is held only while its driver lets it go
			// (the pause is checkpointed just before the lease is
			// released): a caller who saw the pause and answers at
			// once waits for that, not for a busy error.
			wait, settle = settle, min(2*settle, 100*time.Millisecond)
		case !deadline.IsZero() && time.Now().Before(deadline):
			wait = min(250*time.Millisecond, time.Until(deadline)+time.Millisecond)
		default:
			return store.Lease{}, fmt.Errorf("run %s: %w", runID, busyError{busy})
		}
		select {
		case <-ctx.Done():
			return store.Lease{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// watchPoll is how often acquire asks a store that watches a lease's
// heartbeat again.
const watchPoll = 50 * time.Millisecond

// maxForced bounds the forced take-overs of one acquire: each is of the
// holder last seen, and another operator may force it back meanwhile.
const maxForced = 5

// pauseSettle bounds how long acquire waits for the driver of a paused run
// to let it go.
const pauseSettle = 5 * time.Second

// pausedRun reports whether the run waits for external results.
func (r *Runner) pausedRun(ctx context.Context, runID string) bool {
	info, err := r.store.Run(ctx, runID)
	return err == nil && info.Status == store.StatusAwaitingToolResults
}

// busyError words store.BusyError for people: who holds the run, whether
// it is alive, until when.
type busyError struct{ *store.BusyError }

func (e busyError) Error() string {
	return fmt.Sprintf("%v is driving it (lease until %s); try again later, or wait for it with --wait DURATION",
		describeOwner(e.Holder.Owner), e.Holder.Expires.Local().Format(time.RFC3339))
}

func (e busyError) Unwrap() error { return e.BusyError }

func describeOwner(owner string) string {
	if h, ok := ParseOwner(owner); ok {
		return h.String()
	}
	return owner
}

// holding is a lease the runner holds while it drives a run: a heartbeat
// renews it every third of its TTL (the runner's beats, beats.go), and lost
// is closed (and the drive's
// context cancelled) when the run was taken over, or when the lease
// expired, by this process's clock, while the store did not renew it.
//
// Each store call the heartbeat makes (a renewal, a look for a requested
// cancellation, the release) has a deadline of a third of the TTL and is
// abandoned then (see within), so a store that hangs (a PostgreSQL
// connection that no longer answers) cannot hold the heartbeat, and the
// drive stops at the lease's expiry instead of going on without it.
type holding struct {
	r  *Runner
	mu sync.Mutex
	// base is the context of the heartbeat's store calls: the drive's,
	// without its cancellation, since a renewal must go on while an
	// interrupted drive checkpoints and marks the run, and the lease must
	// be released after the drive's context ended; each call has its own
	// deadline (storeDeadline).
	base context.Context
	// durable is the context of the drive's checkpoints: base, cancelled
	// only when the lease is lost, which would refuse them anyway.
	durable       context.Context
	cancelDurable context.CancelCauseFunc
	l             store.Lease
	// validUntil is, by this process's monotonic clock, when the lease
	// expires unless renewed: the start of the last successful renewal
	// plus the TTL. A process stopped past it must not act before
	// renewing.
	validUntil time.Time
	lostErr    error
	// cancelReason is a cancellation someone requested, once seen.
	cancelReason string
	cancel       context.CancelCauseFunc
	// due, index and released are the holding's place among the runner's
	// beats (beats.go), under its lock; beating is held while a beat
	// runs.
	due      time.Time
	index    int
	released bool
	beating  sync.Mutex
	// posted is the run's count of posted messages (RunInfo.Posted) as
	// last seen; inboxHint is set when the heartbeat saw it grow (a
	// message another process posted: conversation.go).
	posted    atomic.Int64
	inboxHint atomic.Bool
	// given is set once the run's last checkpoint gave the lease up
	// (store.Checkpoint.Release): release has nothing to give.
	given atomic.Bool
}

// hold starts the heartbeat of l, acquired at the time given; ctx's child,
// returned, is cancelled with ErrLeaseLost when the run is taken over.
// release stops the heartbeat and gives the lease up.
func (r *Runner) hold(ctx context.Context, l store.Lease, acquired time.Time) (*holding, context.Context) {
	base := context.WithoutCancel(ctx)
	durable, cancelDurable := context.WithCancelCause(base)
	ctx, cancel := context.WithCancelCause(ctx)
	h := &holding{r: r, base: base, durable: durable, cancelDurable: cancelDurable, l: l, validUntil: acquired.Add(r.opts.LeaseTTL), cancel: cancel,
		index: -1}
	r.beats.add(h, time.Now().Add(r.opts.LeaseTTL/3))
	return h, ctx
}

// storeDeadline bounds each store call of the heartbeat: a third of the
// TTL, its period, so that a renewal that hangs gives way to the next
// before the lease expires.
func (h *holding) storeDeadline() time.Duration { return h.r.opts.LeaseTTL / 3 }

// within calls f with ctx bounded by d and returns its results, or
// ErrStoreDeadline once d has passed, whether or not f honours its
// context (a call that ignores it goes on in its goroutine, its results
// dropped): the caller is never held longer than d.
func within[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // it answered just in time
			return r.v, r.err
		default:
		}
		var zero T
		return zero, fmt.Errorf("%w (%s)", ErrStoreDeadline, d)
	}
}

// ErrStoreDeadline: a store call of the lease's heartbeat did not return
// within its deadline, a third of the lease's TTL (see Options.LeaseTTL).
var ErrStoreDeadline = errors.New("the store did not answer in time")

// renew extends the lease now. A lost lease cancels the drive, and so
// does a lease that expired by this process's clock while renewing it
// failed: another driver may have taken the run over, and the store,
// unreachable, cannot say.
func (h *holding) renew() error {
	start := time.Now()
	h.mu.Lock()
	l, lost := h.l, h.lostErr
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	next, err := within(h.base, h.storeDeadline(), func(ctx context.Context) (store.Lease, error) {
		return h.r.store.Renew(ctx, l, h.r.opts.LeaseTTL)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		if start.Add(h.r.opts.LeaseTTL).After(h.validUntil) {
			h.l, h.validUntil = next, start.Add(h.r.opts.LeaseTTL)
		}
	case h.lostErr != nil: // lost meanwhile (a concurrent renewal)
		err = h.lostErr
	case errors.Is(err, store.ErrLeaseLost):
		h.loseLocked(err)
	case !time.Now().Before(h.validUntil):
		err = fmt.Errorf("%w: it expired unrenewed (%v)", store.ErrLeaseLost, err)
		h.loseLocked(err)
	}
	return err
}

// loseLocked records the lease lost, for err, and cuts short the drive
// and its checkpoint in flight. h.mu is held.
func (h *holding) loseLocked(err error) {
	h.lostErr = err
	h.cancel(err)
	h.cancelDurable(err)
}

// watchCancel looks for a cancellation someone requested
// (store.Runs.RequestCancel): the heartbeat asks at every renewal.
func (h *holding) watchCancel() {
	runID := h.lease().RunID
	info, err := within(h.base, h.storeDeadline(), func(ctx context.Context) (store.RunInfo, error) {
		return h.r.store.Run(ctx, runID)
	})
	if err == nil && info.CancelReason != "" {
		h.requestCancel(info.CancelReason)
	}
	if err == nil && int64(info.Posted) > h.posted.Swap(int64(info.Posted)) {
		h.inboxHint.Store(true)
	}
}

// requestCancel records a requested cancellation and cuts the call in
// flight short; the drive ends the run cancelled before its next request.
func (h *holding) requestCancel(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancelReason == "" {
		h.cancelReason = reason
		h.cancel(&cancelRequested{reason})
	}
}

// cancelRequest is the requested cancellation's reason, if one came.
func (h *holding) cancelRequest() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cancelReason
}

// cancelRequested is the cause of a drive's context cut short by a
// requested cancellation.
type cancelRequested struct{ reason string }

func (e *cancelRequested) Error() string { return "cancel requested: " + e.reason }

// lease is the lease to fence writes with.
func (h *holding) lease() store.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.l
}

// ensure is called before a side effect (a model or tool call): with less
// than a sixth of the TTL left by this process's clock (it was stopped, or
// the store was slow), it renews first, and a lost lease is an error: the
// side effect must not start.
func (h *holding) ensure() error {
	h.mu.Lock()
	left, lost := time.Until(h.validUntil), h.lostErr
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	if left > h.r.opts.LeaseTTL/6 {
		return nil
	}
	if err := h.renew(); err != nil {
		return fmt.Errorf("renew the lease before acting: %w", err)
	}
	return nil
}

// lost reports the error that ended the lease, if it was lost.
func (h *holding) lost() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr
}

// gaveUp records that the run's last checkpoint gave the lease up.
func (h *holding) gaveUp() { h.given.Store(true) }

// release stops the heartbeat and gives the lease up (unless it was lost,
// or went with the run's last checkpoint).
func (h *holding) release() {
	h.r.beats.stop(h)
	h.cancel(nil)
	defer h.cancelDurable(nil)
	if h.lost() == nil && !h.given.Load() {
		// The drive's context may be cancelled (an interrupt): the
		// release must still happen, or the run stays held until expiry
		// (as it does when the store does not answer in time).
		l := h.lease()
		_, _ = within(h.base, h.storeDeadline(), func(ctx context.Context) (struct{}, error) {
			return struct{}{}, h.r.store.Release(ctx, l)
		})
	}
}

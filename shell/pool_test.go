package shell_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// claimAndDrive is one worker's turn: claim a runnable run and drive it.
func claimAndDrive(t *testing.T, db shell.Store, r *shell.Runner, ag *shell.Agent) shell.Outcome {
	t.Helper()
	l, err := db.Claim(context.Background(), store.LeaseRequest{Owner: shell.NewOwner(), TTL: time.Minute})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	out, err := r.Pool().Drive(context.Background(), ag, l, time.Now(), nil)
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	return out
}

// TestWorkersDriveRunsRequestsPrepared: a run created for a worker is
// runnable; answers to a pause are durable when Answer returns and leave
// the run runnable; a stalled run is requeued at once; a fork is left
// runnable; a worker's drive finishes each.
func TestWorkersDriveRunsRequestsPrepared(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"e1","name":"ask","arguments":{"x":"q"}}]}`, `{"text":"done"}`))
	ag.Config.Tools = []core.Tool{external("ask")}
	r := shell.NewRunner(db, nil)
	id, err := r.Pool().Create(ctx, ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := db.Run(ctx, id); info.Status != store.StatusRunning || info.Lease.Owner != "" || info.LastSeq != 0 {
		t.Fatalf("created: %+v", info)
	}
	out := claimAndDrive(t, db, r, ag)
	if out.RunID != id || out.Status != store.StatusAwaitingToolResults {
		t.Fatalf("first drive: %+v", out)
	}
	if _, err := db.Claim(ctx, store.LeaseRequest{Owner: "w/1/x", TTL: time.Minute}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a paused run was claimable: %v", err)
	}
	out, err = r.Pool().Answer(ctx, ag, id, shell.Answers{Results: []core.ToolResult{{CallID: "e1", Output: "yes"}}})
	if err != nil || out.Status != store.StatusRunning {
		t.Fatalf("answer: %+v %v", out, err)
	}
	info, _ := db.Run(ctx, id)
	rec, _ := db.LoadLatest(ctx, id)
	if info.Lease.Owner != "" || info.Status != store.StatusRunning || rec.Result == nil {
		t.Fatalf("after the answer: %+v, last step's result %v", info, rec.Result)
	}
	if out := claimAndDrive(t, db, r, ag); out.Status != store.StatusCompleted || out.Answer != "done" {
		t.Fatalf("after the answer: %+v", out)
	}
	if _, err := r.Pool().Answer(ctx, ag, id, shell.Answers{Results: []core.ToolResult{{CallID: "e1", Output: "again"}}}); !errors.Is(err, shell.ErrAlreadyAnswered) {
		t.Fatalf("answering again: %v", err)
	}
	// A fork left runnable.
	f, err := r.Pool().Fork(ctx, ag, id, 2, core.ToolResults{Results: []core.ToolResult{{CallID: "e1", Output: "no"}}})
	if err != nil || f.Status != store.StatusRunning || f.RunID == id {
		t.Fatalf("fork: %+v %v", f, err)
	}
	if out := claimAndDrive(t, db, r, ag); out.RunID != f.RunID || out.Status != store.StatusCompleted {
		t.Fatalf("the fork driven: %+v", out)
	}
}

func TestRequeueAndCancel(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	down := modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return core.ModelReply{}, &shell.TransientError{Err: errors.New("503"), RetryAfter: time.Hour}
	})
	ag := newAgent(t, down)
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusStalled {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := db.Claim(ctx, store.LeaseRequest{Owner: "w/1/x", TTL: time.Minute}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run stalled for an hour was claimable: %v", err)
	}
	if o, err := r.Pool().Requeue(ctx, ag, out.RunID); err != nil || o.Status != store.StatusRunning {
		t.Fatalf("requeue: %+v %v", o, err)
	}
	ag.Models[core.Primary] = scripted(t, `{"text":"back"}`)
	if o := claimAndDrive(t, db, r, ag); o.Status != store.StatusCompleted || o.Answer != "back" {
		t.Fatalf("after the requeue: %+v", o)
	}
	// Cancel a paused run; an ended run cannot be cancelled.
	ag = newAgent(t, scripted(t, `{"tool_calls":[{"id":"e1","name":"ask","arguments":{}}]}`))
	ag.Config.Tools = []core.Tool{external("ask")}
	out, _ = r.Start(ctx, ag, "go")
	c, err := r.Cancel(ctx, ag, out.RunID, "the user gave up")
	if err != nil || c.Status != store.StatusCancelled || c.Failure == nil || c.Failure.Code != core.FailCancelled {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	if info, _ := db.Run(ctx, out.RunID); info.Status != store.StatusCancelled || info.Lease.Owner != "" {
		t.Fatalf("stored after cancel: %+v", info)
	}
	if _, err := r.Cancel(ctx, ag, out.RunID, ""); !errors.Is(err, shell.ErrNotCancellable) {
		t.Fatalf("cancel an ended run: %v", err)
	}
	// A run created for a worker and cancelled before any worker saw it.
	id, _ := r.Pool().Create(ctx, ag, "go")
	if c, err := r.Cancel(ctx, ag, id, ""); err != nil || c.Status != store.StatusCancelled {
		t.Fatalf("cancel a new run: %+v %v", c, err)
	}
}

// TestDriveHandsOff: a drive told to stop does so before its next request,
// and one whose context ends with ErrHandOff leaves the run running and
// free (a server shutting down), not interrupted.
func TestDriveHandsOff(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	var calls int
	started := make(chan struct{})
	slow := fnTool{spec: core.Tool{Name: "slow", Idempotent: true}, run: func(tctx context.Context, c core.ToolCall) core.ToolResult {
		calls++
		close(started)
		<-tctx.Done()
		return core.ToolResult{Error: "cut short"}
	}}
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"s1","name":"slow"}]}`, `{"text":"done"}`), slow)
	r := shell.NewRunner(db, nil)
	id, _ := r.Pool().Create(ctx, ag, "go")
	stop := make(chan struct{})
	close(stop)
	l, _ := db.Claim(ctx, store.LeaseRequest{Owner: "w/1/a", TTL: time.Minute})
	out, err := r.Pool().Drive(ctx, ag, l, time.Now(), stop)
	if err != nil || out.Status != store.StatusRunning || out.Steps != 1 {
		t.Fatalf("stopped drive: %+v %v", out, err)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	go func() { <-started; cancel(shell.ErrHandOff) }()
	l, _ = db.Claim(ctx, store.LeaseRequest{Owner: "w/1/b", TTL: time.Minute})
	out, err = r.Pool().Drive(wctx, ag, l, time.Now(), nil)
	if err != nil || out.Status != store.StatusRunning || calls != 1 {
		t.Fatalf("handed-off drive: %+v %v (%d calls)", out, err, calls)
	}
	if info, _ := db.Run(ctx, id); info.Status != store.StatusRunning || info.Lease.Owner != "" {
		t.Fatalf("after the hand-off: %+v", info)
	}
	started = make(chan struct{})
	slow.run = func(context.Context, core.ToolCall) core.ToolResult { return core.ToolResult{Output: "quick"} }
	ag.Tools["slow"] = slow
	if out := claimAndDrive(t, db, r, ag); out.Status != store.StatusCompleted {
		t.Fatalf("the next worker: %+v", out)
	}
}

// TestDriveRead: a worker that read the run after taking its lease drives
// it from that read, to the same end as Drive; a read of another run is
// refused and the lease given back, the run left runnable.
func TestDriveRead(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"text":"done"}`))
	r := shell.NewRunner(db, nil)
	id, err := r.Pool().Create(ctx, ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.Pool().Create(ctx, ag, "another")
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.Acquire(ctx, id, store.LeaseRequest{Owner: "w/1/a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := db.Run(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Pool().DriveRead(ctx, ag, l, time.Now(), wrong, nil); err == nil || !strings.Contains(err.Error(), other) {
		t.Fatalf("a read of another run: %v", err)
	}
	if info, _ := db.Run(ctx, id); info.Lease.Owner != "" || info.Status != store.StatusRunning || info.LastSeq != 0 {
		t.Fatalf("after the refused drive: %+v", info)
	}
	l, err = db.Acquire(ctx, id, store.LeaseRequest{Owner: "w/1/b", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	info, err := db.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Pool().DriveRead(ctx, ag, l, time.Now(), info, nil)
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "done" {
		t.Fatalf("drive: %+v %v", out, err)
	}
	if info, _ := db.Run(ctx, id); info.Status != store.StatusCompleted || info.Lease.Owner != "" {
		t.Fatalf("after the drive: %+v", info)
	}
}

// inboxCounter counts the inbox reads of the store it wraps.
type inboxCounter struct {
	*sqlite.SQLite
	reads atomic.Int32
}

func (c *inboxCounter) Inbox(ctx context.Context, runID string) ([]store.InboxMessage, error) {
	c.reads.Add(1)
	return c.SQLite.Inbox(ctx, runID)
}

// TestInboxReadWhenAMessageMayWait: a worker's drive reads the run's inbox
// before its first model call only when messages were ever posted to the
// run (RunInfo.Posted, read under the lease): a message posted before the
// drive, from anywhere, is folded in before that call. At the end of a
// turn it reads it only when the answer's checkpoint left the run running
// (store.Runs.CheckpointStatus): a message posted from another process
// while the model answered is folded in then, and the run goes on. A run
// no one wrote to never reads it.
func TestInboxReadWhenAMessageMayWait(t *testing.T) {
	db := &inboxCounter{SQLite: openStore(t)}
	ctx := context.Background()
	r := shell.NewRunner(db, nil)

	quiet := newAgent(t, scripted(t, `{"text":"done"}`))
	id, err := r.Pool().Create(ctx, quiet, "go")
	if err != nil {
		t.Fatal(err)
	}
	if out := claimAndDrive(t, db, r, quiet); out.RunID != id || out.Status != store.StatusCompleted {
		t.Fatalf("quiet run: %+v", out)
	}
	if n := db.reads.Load(); n != 0 {
		t.Fatalf("a run no one wrote to read its inbox %d times, want never", n)
	}

	var saw []string
	talked := newAgent(t, modelFunc(func(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		for _, m := range req.Messages {
			if m.Role == core.RoleUser {
				saw = append(saw, m.Content)
			}
		}
		return core.ModelReply{Text: "done"}, nil
	}))
	id, err = r.Pool().Create(ctx, talked, "go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PostMessage(ctx, id, "and one more thing"); err != nil {
		t.Fatal(err)
	}
	db.reads.Store(0)
	if out := claimAndDrive(t, db, r, talked); out.Status != store.StatusCompleted {
		t.Fatalf("run with a message: %+v", out)
	}
	if strings.Join(saw, "|") != "go|and one more thing" {
		t.Fatalf("the first model call saw the user messages %q, want the input and the posted message", saw)
	}
	if n := db.reads.Load(); n != 1 {
		t.Fatalf("a run with a message posted read its inbox %d times, want once (before its first model call)", n)
	}

	// A message posted straight to the store, as another process does,
	// while the model answers: no note in this process, no heartbeat
	// yet, so only the answer's checkpoint can tell of it.
	saw = nil
	calls := 0
	var lateID string
	late := newAgent(t, modelFunc(func(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		calls++
		if calls == 1 {
			if _, err := db.SQLite.PostMessage(ctx, lateID, "wait, one more"); err != nil {
				return core.ModelReply{}, err
			}
			return core.ModelReply{Text: "first answer"}, nil
		}
		for _, m := range req.Messages {
			if m.Role == core.RoleUser {
				saw = append(saw, m.Content)
			}
		}
		return core.ModelReply{Text: "second answer"}, nil
	}))
	if lateID, err = r.Pool().Create(ctx, late, "go"); err != nil {
		t.Fatal(err)
	}
	db.reads.Store(0)
	out := claimAndDrive(t, db, r, late)
	if out.Status != store.StatusCompleted || out.Answer != "second answer" || calls != 2 {
		t.Fatalf("run with a message posted while the model answered: %+v after %d model calls", out, calls)
	}
	if strings.Join(saw, "|") != "go|wait, one more" {
		t.Fatalf("the second model call saw the user messages %q, want the input and the late message", saw)
	}
	if n := db.reads.Load(); n != 1 {
		t.Fatalf("the run read its inbox %d times, want once (after the first answer)", n)
	}
	if info, _ := db.Run(ctx, lateID); info.Status != store.StatusCompleted || info.Turns != 2 || info.Answer != "second answer" {
		t.Fatalf("after the drive: %+v", info)
	}
}

// readCounter counts the calls of its store that take a run's lease, give
// it back, or read the run.
type readCounter struct {
	*sqlite.SQLite
	takes, releases, reads atomic.Int32
}

func (c *readCounter) Release(ctx context.Context, l store.Lease) error {
	c.releases.Add(1)
	return c.SQLite.Release(ctx, l)
}

func (c *readCounter) Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error) {
	c.takes.Add(1)
	return c.SQLite.Acquire(ctx, runID, req)
}

func (c *readCounter) Run(ctx context.Context, runID string) (store.RunInfo, error) {
	c.reads.Add(1)
	return c.SQLite.Run(ctx, runID)
}

func (c *readCounter) LoadLatest(ctx context.Context, runID string) (store.StepRecord, error) {
	c.reads.Add(1)
	return c.SQLite.LoadLatest(ctx, runID)
}

// TestCreateHeld: a run created held is stored running with its lease
// held by the runner's owner, and DriveCreated drives it to its end from
// the state in hand, taking no lease and reading neither the run nor its
// steps, and gives the lease up with the answer's checkpoint
// (store.Checkpoint.Release), not by a Release of its own; a message
// posted before the drive is taken in its turn, not left behind. A run
// created held and given back (Release) is left runnable, and so is one
// whose drive is told to stop before its first request (its lease
// released).
func TestCreateHeld(t *testing.T) {
	db := &readCounter{SQLite: openStore(t)}
	ctx := context.Background()
	r := shell.NewRunner(db, &shell.Options{Owner: "w/1/held"})
	var saw []string
	ag := newAgent(t, modelFunc(func(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		saw = saw[:0]
		for _, m := range req.Messages {
			if m.Role == core.RoleUser {
				saw = append(saw, m.Content)
			}
		}
		return core.ModelReply{Text: "done"}, nil
	}))

	c, err := r.Pool().CreateHeld(ctx, ag, core.Request{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := db.SQLite.Run(ctx, c.ID); info.Status != store.StatusRunning || info.Lease.Owner != "w/1/held" || info.LastSeq != 0 {
		t.Fatalf("created held: %+v", info)
	}
	if _, err := db.Claim(ctx, store.LeaseRequest{Owner: "w/2/x", TTL: time.Minute}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another worker claimed a run created held: %v", err)
	}
	if _, err := db.PostMessage(ctx, c.ID, "and one more thing"); err != nil {
		t.Fatal(err)
	}
	db.takes.Store(0)
	db.reads.Store(0)
	out, err := r.Pool().DriveCreated(ctx, ag, c, nil)
	if err != nil || out.RunID != c.ID || out.Status != store.StatusCompleted || out.Answer != "done" {
		t.Fatalf("drive: %+v %v", out, err)
	}
	if n, m, k := db.takes.Load(), db.reads.Load(), db.releases.Load(); n != 0 || m != 0 || k != 0 {
		t.Fatalf("the drive took the lease %d times, read the run %d times and released it %d times, want none", n, m, k)
	}
	if strings.Join(saw, "|") != "go|and one more thing" {
		t.Fatalf("the last model call saw the user messages %q, want the input and the posted message", saw)
	}
	if info, _ := db.SQLite.Run(ctx, c.ID); info.Status != store.StatusCompleted || info.Lease.Owner != "" || info.Turns != 2 {
		t.Fatalf("after the drive: %+v", info)
	}

	back, err := r.Pool().CreateHeld(ctx, ag, core.Request{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pool().Release(ctx, back); err != nil {
		t.Fatal(err)
	}
	if info, _ := db.SQLite.Run(ctx, back.ID); info.Status != store.StatusRunning || info.Lease.Owner != "" {
		t.Fatalf("given back: %+v", info)
	}
	if out := claimAndDrive(t, db, r, ag); out.RunID != back.ID || out.Status != store.StatusCompleted {
		t.Fatalf("the run given back, claimed: %+v", out)
	}

	stopped, err := r.Pool().CreateHeld(ctx, ag, core.Request{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	db.releases.Store(0)
	if out, err := r.Pool().DriveCreated(ctx, ag, stopped, stop); err != nil || out.Status != store.StatusRunning {
		t.Fatalf("a drive told to stop: %+v %v", out, err)
	}
	if n := db.releases.Load(); n != 1 {
		t.Fatalf("a drive told to stop released the lease %d times, want once", n)
	}
	if info, _ := db.SQLite.Run(ctx, stopped.ID); info.Status != store.StatusRunning || info.Lease.Owner != "" {
		t.Fatalf("after a drive told to stop: %+v", info)
	}
	if out := claimAndDrive(t, db, r, ag); out.RunID != stopped.ID || out.Status != store.StatusCompleted {
		t.Fatalf("the stopped run, claimed: %+v", out)
	}
}

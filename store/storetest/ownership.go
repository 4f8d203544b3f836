package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// testStatusTransitions: the status follows each action (running, paused,
// completed, failed, cancelled) and SetStatus (interrupted, stalled with a
// retry time, running again); an ended run's status cannot change.
func testStatusTransitions(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	status := func(id string) store.RunInfo {
		t.Helper()
		ri, err := s.Run(ctx, id)
		must(t, err)
		return ri
	}
	l, g := create(t, s, "r", nil)
	must(t, s.Checkpoint(ctx, l, g.next()))
	if ri := status("r"); ri.Status != store.StatusRunning {
		t.Fatalf("after a tool request: %s", ri.Status)
	}
	must(t, s.Checkpoint(ctx, l, g.pause()))
	if ri := status("r"); ri.Status != store.StatusAwaitingToolResults {
		t.Fatalf("after a pause: %s", ri.Status)
	}
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted, Reason: "interrupted by SIGINT"}))
	if ri := status("r"); ri.Status != store.StatusInterrupted || ri.Reason != "interrupted by SIGINT" {
		t.Fatalf("after SetStatus: %+v", ri)
	}
	retry := time.Now().Add(time.Minute).Truncate(time.Microsecond).UTC()
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "429", RetryAt: retry}))
	if ri := status("r"); ri.Status != store.StatusStalled || ri.Reason != "429" || !ri.RetryAt.Equal(retry) {
		t.Fatalf("stalled: %+v", ri)
	}
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusRunning}))
	if ri := status("r"); ri.Status != store.StatusRunning || !ri.RetryAt.IsZero() {
		t.Fatalf("running again: %+v", ri)
	}
	if err := s.SetStatus(ctx, l, store.StatusChange{Status: "bogus"}); err == nil {
		t.Fatal("an unknown status was set")
	}
	if err := s.SetStatus(ctx, store.Lease{RunID: "nope", Owner: "test/1/x", Token: 1}, store.StatusChange{Status: store.StatusRunning}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetStatus of an unknown run: %v", err)
	}
	if ri := status("r"); !ri.Updated.After(ri.Created) {
		t.Fatalf("updated %v is not after created %v", ri.Updated, ri.Created)
	}
	for _, end := range []struct {
		kind   string
		status store.Status
	}{{"complete", store.StatusCompleted}, {"fail", store.StatusFailed}, {"cancel", store.StatusCancelled}} {
		l, g := create(t, s, "end-"+end.kind, nil)
		must(t, s.Checkpoint(ctx, l, g.next()))
		must(t, s.Checkpoint(ctx, l, g.ending(end.kind)))
		ri := status("end-" + end.kind)
		if ri.Status != end.status {
			t.Fatalf("%s: status %s", end.kind, ri.Status)
		}
		switch end.kind {
		case "complete":
			if ri.Answer != "the answer" {
				t.Fatalf("answer %q", ri.Answer)
			}
		default:
			if ri.FailCode == "" || ri.Reason == "" {
				t.Fatalf("%s: code %q reason %q", end.kind, ri.FailCode, ri.Reason)
			}
		}
		if err := s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted}); !errors.Is(err, store.ErrEnded) {
			t.Fatalf("%s: SetStatus on an ended run: %v", end.kind, err)
		}
	}
}

// testLeases: a run is created held; a live lease refuses every other
// acquirer (and its own owner again), naming the holder; renewal moves the
// expiry; a lease not renewed for its TTL, or released, is free; a
// take-over names exactly the holder; each acquisition increments the
// token. Expiry takes real time: every store judges it on one clock that
// no injected Now moves (see clock.go).
func testLeases(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	before := time.Now()
	a, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "a", Initial: initial("r"), Owner: "hostA/1/aa", LeaseTTL: 10 * time.Second})
	must(t, err)
	if a.Token != 1 || a.Owner != "hostA/1/aa" || a.RunID != "r" || !near(a.Expires, before.Add(10*time.Second)) {
		t.Fatalf("lease at creation: %+v", a)
	}
	// The store wrote step 0: its holder's first checkpoint need not
	// read it back.
	remembers(t, h, s, "r", true)
	info, _ := s.Run(ctx, "r")
	if info.Lease != a || info.Orphaned(time.Now()) {
		t.Fatalf("RunInfo.Lease %+v, want %+v (orphaned %v)", info.Lease, a, info.Orphaned(time.Now()))
	}
	// A live lease refuses everyone else, and is not re-entrant.
	for _, owner := range []string{"hostB/2/bb", "hostA/1/aa"} {
		_, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: owner, TTL: time.Second})
		busy, ok := errors.AsType[*store.BusyError](err)
		if !ok || !errors.Is(err, store.ErrBusy) || busy.Holder != a {
			t.Fatalf("%s acquiring a held run: %v", owner, err)
		}
	}
	// Renewal moves the expiry; the holder stays.
	time.Sleep(2 * time.Millisecond)
	renewed, err := s.Renew(ctx, a, 20*time.Second)
	if err != nil || !renewed.Expires.After(a.Expires) || renewed.Token != a.Token || renewed.Owner != a.Owner {
		t.Fatalf("renew: %+v %v", renewed, err)
	}
	a = renewed
	if ri, _ := s.Run(ctx, "r"); ri.Lease != a {
		t.Fatalf("after renewal: %+v, want %+v", ri.Lease, a)
	}
	// A take-over of exactly the holder works before the expiry (the
	// caller found it dead); one naming another token does not.
	wrong := a
	wrong.Token = 9
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: time.Second, TakeOver: &wrong}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("take-over naming another token: %v", err)
	}
	const ttl = 300 * time.Millisecond
	b, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: ttl, TakeOver: &a})
	if err != nil || b.Token != 2 || b.Owner != "hostB/2/bb" {
		t.Fatalf("take-over: %+v %v", b, err)
	}
	if ri, _ := s.Run(ctx, "r"); len(ri.TakeOvers) != 0 {
		t.Fatalf("a take-over of a dead holder was recorded as forced: %q", ri.TakeOvers)
	}
	// The old holder can no longer renew or release.
	if _, err := s.Renew(ctx, a, time.Second); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew of a lost lease: %v", err)
	}
	if err := s.Release(ctx, a); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release of a lost lease: %v", err)
	}
	// A lease not renewed for its TTL is free for a contender that keeps
	// asking (another process), not before; its holder, if no one took it,
	// may still renew it.
	other := reopen(t, h, s, nil)
	renewedAt := time.Now()
	b, err = s.Renew(ctx, b, ttl)
	must(t, err)
	took := takeWhenLapsed(t, other, "r", "hostX/9/xx", renewedAt, ttl, 10*time.Millisecond, false)
	must(t, other.Release(ctx, took))
	c, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostC/3/cc", TTL: 100 * time.Millisecond})
	if err != nil || c.Token != 4 {
		t.Fatalf("acquire after release: %+v %v", c, err)
	}
	time.Sleep(200 * time.Millisecond)
	if c, err = s.Renew(ctx, c, time.Second); err != nil {
		t.Fatalf("renew after expiry with no one else: %v", err)
	}
	must(t, s.Release(ctx, c))
	if err := s.Release(ctx, c); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release twice: %v", err)
	}
	if ri, _ := s.Run(ctx, "r"); ri.Lease.Owner != "" || !ri.Lease.Expires.IsZero() || !ri.Orphaned(time.Now()) {
		t.Fatalf("after release: %+v", ri.Lease)
	}
	d, err := other.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostD/4/dd", TTL: time.Second})
	if err != nil || d.Token != 5 {
		t.Fatalf("acquire after release: %+v %v", d, err)
	}
	if !info.Lease.Live(time.Now().Add(-time.Hour)) || info.Lease.Live(time.Now().Add(time.Hour)) {
		t.Fatal("Live misreads expiry")
	}
	if _, err := s.Acquire(ctx, "nope", store.LeaseRequest{Owner: "x", TTL: time.Second}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquire an unknown run: %v", err)
	}
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{TTL: time.Second}); err == nil {
		t.Fatal("acquire without an owner")
	}
	if _, err := s.Renew(ctx, store.Lease{RunID: "nope", Owner: "x", Token: 1}, time.Second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("renew of an unknown run: %v", err)
	}
}

// testFencing: once another driver took the run over, every write of the
// old holder is refused with ErrLeaseLost and writes nothing (neither what
// the store shows nor, with Harness.Dump, a row), whether its store
// remembered the run's tail or not, whether the checkpoint changes the
// status or not; the new holder writes; a released lease fences nothing.
func testFencing(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	old, g := create(t, s, "r", nil)
	cp1 := g.next()
	must(t, s.Checkpoint(ctx, old, cp1))
	must(t, s.RecordIntent(ctx, old, 1, core.ToolCall{ID: "c1", Name: "search", Args: []byte(`{}`)}))
	// The holder is stopped; an operator has another driver (another
	// process: another store on the database) take the run over. s still
	// remembers the run's tail, so its next checkpoint takes that path.
	other := reopen(t, h, s, clock.Now)
	next, err := other.Acquire(ctx, "r", store.LeaseRequest{Owner: "b/2/y", TTL: time.Hour, TakeOver: &old, Forced: "stepwise resume --take-over"})
	must(t, err)
	remembers(t, h, s, "r", true)
	before, rows := snapshot(t, s, "r"), dump(t, h, s)
	cp2 := g.next()
	closing := cp2
	closing.Action = withAction("external", cp2.Action.Next()) // a status change
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"checkpoint (remembered tail)", func() error { return s.Checkpoint(ctx, old, cp2) }},
		{"intent", func() error {
			return s.RecordIntent(ctx, old, 1, core.ToolCall{ID: "c2", Name: "charge", Args: []byte(`{}`)})
		}},
		{"outcome", func() error { return s.RecordOutcome(ctx, old, 1, core.ToolResult{CallID: "c1", Output: "x"}) }},
		{"status", func() error { return s.SetStatus(ctx, old, store.StatusChange{Status: store.StatusInterrupted}) }},
		{"agent change", func() error { return s.ChangeAgent(ctx, old, []byte(`{"v":2}`)) }},
		{"retract", func() error { return s.RetractIntent(ctx, old, 1, "c1") }},
		{"renew", func() error { _, err := s.Renew(ctx, old, time.Hour); return err }},
		{"release", func() error { return s.Release(ctx, old) }},
		{"checkpoint (read back)", func() error { return s.Checkpoint(ctx, old, cp2) }},
		{"checkpoint (status change, read back)", func() error { return s.Checkpoint(ctx, old, closing) }},
		{"checkpoint (stale seq)", func() error { return s.Checkpoint(ctx, old, cp1) }},
	} {
		if err := w.write(); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with a lost lease: %v, want ErrLeaseLost", w.name, err)
		}
	}
	idle(t, h, s)
	if after := snapshot(t, s, "r"); after != before {
		t.Fatal("a write with a lost lease changed the run")
	}
	if after := dump(t, h, s); !bytes.Equal(rows, after) {
		t.Fatalf("a write with a lost lease changed the database:\n%s\n---\n%s", rows, after)
	}
	// The new holder writes (and the dump shows it).
	must(t, other.Checkpoint(ctx, next, cp2))
	must(t, other.RecordOutcome(ctx, next, 1, core.ToolResult{CallID: "c1", Output: "done"}))
	if h.Dump != nil && bytes.Equal(rows, dump(t, h, s)) {
		t.Fatal("Harness.Dump does not show the new holder's writes")
	}
	// A released lease fences nothing either, on the remembered tail too.
	must(t, other.Release(ctx, next))
	if err := other.Checkpoint(ctx, next, g.next()); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a checkpoint with a released lease: %v", err)
	}
}

// snapshot is everything the store shows of a run, its lease included, for
// comparing.
func snapshot(t *testing.T, s store.Store, id string) string {
	t.Helper()
	ri, err := s.Run(context.Background(), id)
	must(t, err)
	return fmt.Sprintf("%s %d|", ri.Lease.Owner, ri.Lease.Token) + contents(t, s, id)
}

// contents is everything the store shows of a run but its lease.
func contents(t *testing.T, s store.Store, id string) string {
	t.Helper()
	ctx := context.Background()
	ri, err := s.Run(ctx, id)
	must(t, err)
	var b []byte
	b = append(b, ri.Status...)
	b = append(b, ri.Reason...)
	b = append(b, byte(ri.LastSeq))
	b = append(b, ri.Config...)
	must(t, s.Steps(ctx, id, func(rec store.StepRecord) error {
		b = append(b, encoded(t, rec.Action, rec.State, rec.Result)...)
		in, err := s.Intents(ctx, id, rec.Seq)
		for _, i := range in {
			b = append(b, i.CallID...)
			b = append(b, i.State...)
		}
		return err
	}))
	ch, err := s.AgentChanges(ctx, id)
	must(t, err)
	return string(b) + string(rune(len(ch)))
}

// testIntents: an intent is durable before the call and its outcome after;
// the same intent or outcome again is a no-op, a different one a conflict;
// an outcome without an intent, or an intent for a step that does not
// exist, is ErrNotFound; an intent without an outcome can be retracted.
func testIntents(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	l, g := create(t, s, "r", nil)
	calls := []core.ToolCall{{ID: "a", Name: "search", Args: []byte(`{"q":1}`)}, {ID: "b", Name: "search", Args: []byte(`{"q":2}`)}}
	if err := s.RecordIntent(ctx, l, 1, calls[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an intent for a step not stored: %v", err)
	}
	must(t, s.Checkpoint(ctx, l, g.next()))
	for _, c := range calls {
		must(t, s.RecordIntent(ctx, l, 1, c))
	}
	must(t, s.RecordIntent(ctx, l, 1, calls[0]))
	changed := calls[0]
	changed.Args = []byte(`{"q":9}`)
	if err := s.RecordIntent(ctx, l, 1, changed); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an intent recorded again differently: %v", err)
	}
	out := core.ToolResult{CallID: "a", Output: "found", Sources: []string{"https://x"}}
	must(t, s.RecordOutcome(ctx, l, 1, out))
	must(t, s.RecordOutcome(ctx, l, 1, out))
	if err := s.RecordOutcome(ctx, l, 1, core.ToolResult{CallID: "a", Error: "no"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another outcome: %v", err)
	}
	if err := s.RecordOutcome(ctx, l, 1, core.ToolResult{CallID: "zz", Output: "?"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an outcome without an intent: %v", err)
	}
	if err := s.RecordIntent(ctx, l, 1, core.ToolCall{Name: "x"}); err == nil {
		t.Fatal("an intent without a call id")
	}
	in, err := s.Intents(ctx, "r", 1)
	must(t, err)
	if len(in) != 2 || in[0].CallID != "a" || in[0].State != store.IntentCompleted || in[0].Result == nil || in[0].Result.Output != "found" ||
		in[0].Result.Sources[0] != "https://x" || in[0].Completed.IsZero() || in[1].CallID != "b" || in[1].State != store.IntentStarted ||
		in[1].Result != nil || string(in[1].Args) != `{"q":2}` || in[1].Started.IsZero() {
		t.Fatalf("intents: %+v", in)
	}
	if err := s.RetractIntent(ctx, l, 1, "a"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("retracting a completed intent: %v", err)
	}
	must(t, s.RetractIntent(ctx, l, 1, "b"))
	if err := s.RetractIntent(ctx, l, 1, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retracting twice: %v", err)
	}
	if in, _ := s.Intents(ctx, "r", 1); len(in) != 1 {
		t.Fatalf("after the retraction: %+v", in)
	}
	if in, err := s.Intents(ctx, "r", 0); err != nil || len(in) != 0 {
		t.Fatalf("intents of a step without any: %+v %v", in, err)
	}
}

// testAgentChanges: each change is recorded at the run's last step, the
// run is driven by the last one, and the start config stays.
func testAgentChanges(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	l, g := create(t, s, "r", nil)
	must(t, s.ChangeAgent(ctx, l, []byte(`{"v":2}`)))
	must(t, s.Checkpoint(ctx, l, g.next()))
	must(t, s.Checkpoint(ctx, l, g.next()))
	must(t, s.ChangeAgent(ctx, l, []byte(`{"v":3}`)))
	ch, err := s.AgentChanges(ctx, "r")
	must(t, err)
	ri, _ := s.Run(ctx, "r")
	if len(ch) != 2 || ch[0].Seq != 0 || string(ch[0].Config) != `{"v":2}` || ch[1].Seq != 2 || string(ch[1].Config) != `{"v":3}` ||
		ch[0].Created.IsZero() || string(ri.Config) != `{"v":3}` || string(ri.StartConfig) != `{"v":1}` {
		t.Fatalf("changes %+v, config %s, start %s", ch, ri.Config, ri.StartConfig)
	}
	must(t, s.Checkpoint(ctx, l, g.ending("complete")))
	if err := s.ChangeAgent(ctx, l, []byte(`{"v":4}`)); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("a change after the end: %v", err)
	}
	if _, err := s.AgentChanges(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("changes of an unknown run: %v", err)
	}
}

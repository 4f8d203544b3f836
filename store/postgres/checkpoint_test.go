package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

func TestCheckpointRefuses(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	st := newRun(t, s, "r1")
	next := func(extra ...core.Message) core.State {
		n := st
		n.Messages = append(append([]core.Message{}, st.Messages...), extra...)
		return n
	}
	ok := store.Checkpoint{Seq: 1, Action: withAction("model", next(core.Message{Role: core.RoleAssistant, Content: "a"}))}
	cases := []struct {
		name string
		id   string
		cp   store.Checkpoint
		want error
	}{
		{"unknown run", "nope", ok, store.ErrNotFound},
		{"seq too far", "r1", store.Checkpoint{Seq: 2, Action: ok.Action}, store.ErrSeq},
		{"seq zero", "r1", store.Checkpoint{Seq: 0, Action: ok.Action}, store.ErrSeq},
		{"fewer messages", "r1", store.Checkpoint{Seq: 1, Action: withAction("model", baseState("q", st.Messages[:1]))}, store.ErrNotAppend},
		{"changed message", "r1", store.Checkpoint{Seq: 1, Action: withAction("model", baseState("q", []core.Message{
			st.Messages[0], {Role: core.RoleUser, Content: "another question"}, {Role: core.RoleAssistant}}))}, store.ErrNotAppend},
	}
	for _, c := range cases {
		l := store.Lease{RunID: c.id, Owner: "test/1/x", Token: 1}
		if c.id != "nope" {
			l = leaseOf(t, s, c.id)
		}
		err := s.Checkpoint(ctx, l, c.cp)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "run "+c.id) {
			t.Errorf("%s: error does not name the run: %v", c.name, err)
		}
	}
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), store.Checkpoint{Seq: 1}); err == nil {
		t.Error("checkpoint without an action was accepted")
	}
	bad := baseState("q", st.Messages)
	bad.Answer = "invalid \xff UTF-8" // core's strict decoder would refuse it
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), store.Checkpoint{Seq: 1, Action: core.RequestModelCall{Role: core.Primary, State: bad}}); err == nil {
		t.Error("a state that would not load back was accepted")
	}
	badMsg := baseState("q", append(st.Messages[:2:2], core.Message{Role: core.RoleTool, Content: "\xc3"}))
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), store.Checkpoint{Seq: 1, Action: core.RequestModelCall{Role: core.Primary, State: badMsg}}); err == nil {
		t.Error("a message that would not load back was accepted")
	}
	// Nothing of the refused checkpoints was written.
	if info, err := s.Run(ctx, "r1"); err != nil || info.LastSeq != 0 {
		t.Fatalf("after refusals: %+v, %v", info, err)
	}
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), ok); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), ok); !errors.Is(err, store.ErrSeq) {
		t.Errorf("same seq twice: %v", err)
	}
	// Re-stepping the same state (no new messages) is fine.
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), store.Checkpoint{Seq: 2, Action: ok.Action}); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), store.Checkpoint{Seq: 3, Action: withAction("complete", ok.Action.Next())}); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), store.Checkpoint{Seq: 4, Action: ok.Action}); !errors.Is(err, store.ErrEnded) {
		t.Errorf("checkpoint after complete: %v", err)
	}
	if err := s.SetStatus(ctx, leaseOf(t, s, "r1"), store.StatusChange{Status: store.StatusInterrupted, Reason: "x"}); !errors.Is(err, store.ErrEnded) {
		t.Errorf("set status after complete: %v", err)
	}
}

func TestStatusFollowsAction(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	st := newRun(t, s, "r")
	steps := []struct {
		kind   string
		status store.Status
	}{
		{"model", store.StatusRunning},
		{"external", store.StatusAwaitingToolResults},
		{"tools", store.StatusRunning},
		{"fail", store.StatusFailed},
	}
	for i, c := range steps {
		if err := s.Checkpoint(ctx, leaseOf(t, s, "r"), store.Checkpoint{Seq: i + 1, Action: withAction(c.kind, st)}); err != nil {
			t.Fatal(err)
		}
		info, err := s.Run(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != c.status {
			t.Fatalf("after %s: status %s, want %s", c.kind, info.Status, c.status)
		}
		if i == 1 {
			if err := s.SetStatus(ctx, leaseOf(t, s, "r"), store.StatusChange{Status: store.StatusInterrupted, Reason: "SIGINT"}); err != nil {
				t.Fatal(err)
			}
			if info, _ := s.Run(ctx, "r"); info.Status != store.StatusInterrupted || info.Reason != "SIGINT" {
				t.Fatalf("after SetStatus: %+v", info)
			}
		}
	}
	info, _ := s.Run(ctx, "r")
	if info.FailCode != core.FailMaxSteps || info.Reason != "too many steps" || info.Answer != "" {
		t.Fatalf("failed run: %+v", info)
	}
	if !info.Updated.After(info.Created) {
		t.Fatalf("updated %v not after created %v", info.Updated, info.Created)
	}
	if err := s.SetStatus(ctx, leaseOf(t, s, "r"), store.StatusChange{Status: "bogus", Reason: ""}); err == nil {
		t.Error("unknown status accepted")
	}
	if err := s.SetStatus(ctx, store.Lease{RunID: "nope", Owner: "test/1/x", Token: 1}, store.StatusChange{Status: store.StatusRunning, Reason: ""}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}

	cst := newRun(t, s, "c")
	if err := s.Checkpoint(ctx, leaseOf(t, s, "c"), store.Checkpoint{Seq: 1, Action: withAction("complete", cst)}); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Run(ctx, "c"); info.Status != store.StatusCompleted || info.Answer != "the answer" {
		t.Fatalf("completed run: %+v", info)
	}
}

func TestRunsAndList(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	if _, err := s.CreateRun(ctx, store.NewRun{ID: ""}); err == nil {
		t.Error("empty id accepted")
	}
	for i := 0; i < 5; i++ {
		newRun(t, s, fmt.Sprintf("r%d", i))
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "r1", Initial: baseState("q", nil)}); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "x", Agent: "other", Initial: baseState("q", nil)}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.LoadLatest(ctx, "r2")
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r2"), store.Checkpoint{Seq: 1, Action: withAction("external", st.State)}); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListRuns(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range all {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, ","); got != "x,r4,r3,r2,r1,r0" {
		t.Errorf("newest first: %s", got)
	}
	if l, _ := s.ListRuns(ctx, store.Filter{Agent: "agent", Limit: 2}); len(l) != 2 || l[0].ID != "r4" {
		t.Errorf("agent filter with limit: %+v", l)
	}
	if l, _ := s.ListRuns(ctx, store.Filter{Status: store.StatusAwaitingToolResults}); len(l) != 1 || l[0].ID != "r2" {
		t.Errorf("status filter: %+v", l)
	}
	if l, _ := s.ListRuns(ctx, store.Filter{Status: store.StatusAwaitingToolResults, Statuses: []store.Status{store.StatusCompleted}}); len(l) != 1 {
		t.Errorf("status and statuses: %+v", l)
	}
	info, err := s.Run(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if info.Agent != "agent" || info.ConfigHash != "h" || string(info.Config) != `{"name":"agent"}` || info.Input != "question r2" ||
		info.LastSeq != 1 || info.Steps != 2 || info.Created.Location().String() != "UTC" || info.Updated != all[3].Updated {
		t.Errorf("run info: %+v", info)
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	if _, err := s.LoadLatest(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("load unknown run: %v", err)
	}
	if _, err := s.LoadStep(ctx, "r2", 7); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "step 7") {
		t.Errorf("load unknown step: %v", err)
	}
	if _, err := s.LoadStep(ctx, "r2", -1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("load step -1: %v", err)
	}
	if err := s.Steps(ctx, "nope", func(store.StepRecord) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("steps of unknown run: %v", err)
	}
	stop := errors.New("stop")
	if err := s.Steps(ctx, "r2", func(store.StepRecord) error { return stop }); err != stop {
		t.Errorf("Steps returns fn's error as is: %v", err)
	}
}

// TestListRunsCursor: runs created at the same moment are ordered by id,
// byte by byte (as SQLite orders them, whatever the database's collation),
// and the cursor selects exactly the runs after it.
func TestListRunsCursor(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := openWith(t, &Options{Now: clock.now})
	ctx := context.Background()
	ids := []string{"b", "B", "a", "_x", "é", "Z", "a0", "a-"}
	for _, id := range ids {
		newRun(t, s, id) // the clock does not move: one creation time
	}
	clock.add(1)
	newRun(t, s, "later")
	all, err := s.ListRuns(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range all {
		got = append(got, r.ID)
	}
	// "later" first (newest), then byte order: B Z _x a a- a0 b é.
	if want := "later,B,Z,_x,a,a-,a0,b,é"; strings.Join(got, ",") != want {
		t.Fatalf("order %s, want %s", strings.Join(got, ","), want)
	}
	for i := range all {
		page, err := s.ListRuns(ctx, store.Filter{Before: store.CursorOf(all[i]), Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range page {
			if r.ID != got[i+1+j] {
				t.Fatalf("after %s: %s at %d, want %s", got[i], r.ID, j, got[i+1+j])
			}
		}
		if want := min(3, len(all)-i-1); len(page) != want {
			t.Fatalf("after %s: %d runs, want %d", got[i], len(page), want)
		}
	}
}

func TestFork(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	log := newRun(t, s, "parent").Messages
	var cp store.Checkpoint
	for seq := 1; seq <= 6; seq++ {
		cp, log = turnStep(log, seq, 50)
		if err := s.Checkpoint(ctx, leaseOf(t, s, "parent"), cp); err != nil {
			t.Fatal(err)
		}
	}
	at, err := s.LoadStep(ctx, "parent", 3)
	if err != nil {
		t.Fatal(err)
	}
	fork := store.NewRun{ID: "child", Agent: "agent", Initial: at.State, ParentID: "parent", ParentStep: 3}
	if _, err := s.CreateRun(ctx, fork); err != nil {
		t.Fatal(err)
	}
	// The fork diverges: its step 1 appends a different message.
	div := at.State
	div.Messages = append(at.State.Messages, core.Message{Role: core.RoleTool, CallID: "c3", Content: "another output"})
	a := withAction("model", div)
	if err := s.Checkpoint(ctx, leaseOf(t, s, "child"), store.Checkpoint{Seq: 1, Result: core.ToolResults{}, Action: a}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadLatest(ctx, "child")
	if err != nil {
		t.Fatal(err)
	}
	sameStep(t, got, 1, a.Next(), a, core.ToolResults{})
	parent, _ := s.LoadLatest(ctx, "parent")
	sameStep(t, parent, 6, cp.Action.Next(), cp.Action, cp.Result)
	info, _ := s.Run(ctx, "child")
	if info.ParentID != "parent" || info.ParentStep != 3 {
		t.Errorf("fork info: %+v", info)
	}
	for _, bad := range []store.NewRun{
		{ID: "c2", Initial: at.State, ParentID: "nope"},
		{ID: "c3", Initial: at.State, ParentID: "parent", ParentStep: 7},
		{ID: "c4", Initial: at.State, ParentID: "parent", ParentStep: -1},
	} {
		if _, err := s.CreateRun(ctx, bad); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("fork of %s step %d: %v", bad.ParentID, bad.ParentStep, err)
		}
	}
}

func TestCheckpointCancelled(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	st := newRun(t, s, "r1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cp, _ := turnStep(st.Messages, 1, 10)
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), cp); !errors.Is(err, context.Canceled) {
		t.Fatalf("checkpoint under a cancelled context: %v", err)
	}
	if info, err := s.Run(context.Background(), "r1"); err != nil || info.LastSeq != 0 {
		t.Fatalf("after a cancelled checkpoint: %+v, %v", info, err)
	}
}

// The common checkpoint runs on the run's remembered tail. When another
// writer (here a second store on the same schema, as another process would
// be) appended in between, that checkpoint fails whole, and the next one
// reads the truth back.
func TestCheckpointAfterAnotherWriter(t *testing.T) {
	t.Parallel()
	a := openTest(t)
	b := reopen(t, a, nil)
	ctx := context.Background()
	log := newRun(t, a, "r").Messages
	var cp1, cp2, cp3 store.Checkpoint
	cp1, log = turnStep(log, 1, 10)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), cp1); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.cache.Tail("r"); !ok {
		t.Fatal("a does not remember the run's tail")
	}
	cp2, log = turnStep(log, 2, 10)
	if err := b.Checkpoint(ctx, leaseOf(t, b, "r"), cp2); err != nil {
		t.Fatal(err)
	}
	// a's own step 2, with other messages: its tail says step 1 is the
	// last, and b took the run over, so a's lease no longer fences.
	mine, _ := turnStep(cp1.Action.Next().Messages, 2, 99)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), mine); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a appended over b's step 2, or failed otherwise: %v", err)
	}
	if _, ok := a.cache.Tail("r"); ok {
		t.Fatal("a still trusts its stale tail")
	}
	// a takes the run back: its step 2 is now out of order.
	forgetLease(a, "r")
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), mine); !errors.Is(err, store.ErrSeq) {
		t.Fatalf("a's step 2 again: %v, want store.ErrSeq", err)
	}
	cp3, log = turnStep(log, 3, 10)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), cp3); err != nil {
		t.Fatalf("a's step 3 after b's step 2: %v", err)
	}
	rec, err := b.LoadLatest(ctx, "r")
	if err != nil || rec.Seq != 3 || len(rec.State.Messages) != len(log) || rec.State.Messages[len(log)-2].Content != cp2.Action.Next().Messages[len(log)-2].Content {
		t.Fatalf("latest: step %d, %d messages (want 3, %d): %v", rec.Seq, len(rec.State.Messages), len(log), err)
	}
}

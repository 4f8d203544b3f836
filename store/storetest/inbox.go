package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The cases of a run's inbox (Runs.PostMessage, Runs.Inbox,
// Checkpoint.Delivered) and of its turns (RunInfo.Turns), on runs that
// core drives: real states, from core.Start, core.Step and core.Resume.

// talk drives a run through core with the default agent, one step per
// checkpoint.
type talk struct {
	cfg core.Config
	st  core.State
	seq int
}

// newTalk creates run id, held by the suite's lease (leaseOf), from req's
// first state.
func newTalk(t *testing.T, s store.Store, id string, req core.Request) *talk {
	t.Helper()
	c := &talk{cfg: core.DefaultConfig()}
	var err error
	c.st, err = core.Start(c.cfg, req)
	must(t, err)
	_, err = s.CreateRun(context.Background(), store.NewRun{ID: id, Agent: "agent", ConfigHash: "h", Config: []byte(`{"name":"agent"}`),
		Input: req.Input, Initial: c.st})
	must(t, err)
	return c
}

// next is the checkpoint of the step after res (nil: none) folded in. It
// moves the talk on only once keep is called, so that a refused
// checkpoint can be tried again.
func (c *talk) next(t *testing.T, res core.Result) (cp store.Checkpoint, keep func()) {
	t.Helper()
	st := c.st
	if res != nil {
		var err error
		st, err = core.Resume(c.cfg, st, res)
		must(t, err)
	}
	a, err := core.Step(c.cfg, st)
	must(t, err)
	return store.Checkpoint{Seq: c.seq + 1, Result: res, Action: a}, func() { c.st, c.seq = a.Next(), c.seq+1 }
}

// step checkpoints the step after res through s with l, and moves on. The
// status CheckpointStatus says it left the run in must be the run's.
func (c *talk) step(t *testing.T, s store.Store, l store.Lease, res core.Result, delivered int) {
	t.Helper()
	cp, keep := c.next(t, res)
	cp.Delivered = delivered
	left, err := s.CheckpointStatus(context.Background(), l, cp)
	must(t, err)
	if ri := runInfo(t, s, l.RunID); left != ri.Status {
		t.Fatalf("step %d left the run %q, says CheckpointStatus; the run is %q", cp.Seq, left, ri.Status)
	}
	keep()
}

// runInfo is the run's description.
func runInfo(t *testing.T, s store.Store, id string) store.RunInfo {
	t.Helper()
	ri, err := s.Run(context.Background(), id)
	must(t, err)
	return ri
}

// wantInbox checks the numbers and contents of the run's inbox, oldest
// first.
func wantInbox(t *testing.T, s store.Store, id string, ns []int, texts ...string) {
	t.Helper()
	got, err := s.Inbox(context.Background(), id)
	must(t, err)
	var gotNs []int
	var gotTexts []string
	for _, m := range got {
		gotNs, gotTexts = append(gotNs, m.N), append(gotTexts, m.Content)
		if m.Posted.IsZero() || m.Posted.Location() != time.UTC {
			t.Fatalf("run %s: message %d posted at %v", id, m.N, m.Posted)
		}
	}
	if !slices.Equal(gotNs, ns) || !slices.Equal(gotTexts, texts) {
		t.Fatalf("run %s: inbox %v %q, want %v %q", id, gotNs, gotTexts, ns, texts)
	}
}

// post posts content to the run and checks the number it gets.
func post(t *testing.T, s store.Store, id, content string, want int) {
	t.Helper()
	n, err := s.PostMessage(context.Background(), id, content)
	must(t, err)
	if n != want {
		t.Fatalf("run %s: message %q got number %d, want %d", id, content, n, want)
	}
}

// testInboxPost: a message is posted without a lease to a run at work
// (its status stays) and numbered 1, 2, 3 in order, its text kept byte
// for byte; the inbox lists the messages oldest first, from another store
// too. An unknown run is ErrNotFound (and has an empty inbox); a failed
// or cancelled run is ErrEnded and stores nothing.
func testInboxPost(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	if _, err := s.PostMessage(ctx, "nope", "hello"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a message to an unknown run: %v", err)
	}
	if got, err := s.Inbox(ctx, "nope"); err != nil || len(got) != 0 {
		t.Fatalf("the inbox of an unknown run: %v %v", got, err)
	}
	c := newTalk(t, s, "r", core.Request{Input: "question"})
	wantInbox(t, s, "r", nil)
	c.step(t, s, leaseOf(t, s, "r"), nil, 0)
	before := runInfo(t, s, "r")
	odd := "nul \x00 and \xff, not UTF-8"
	post(t, s, "r", "first", 1)
	post(t, s, "r", odd, 2)
	post(t, s, "r", "third", 3)
	after := runInfo(t, s, "r")
	if after.Status != store.StatusRunning || after.Turns != 1 || after.LastSeq != before.LastSeq || after.Lease != before.Lease {
		t.Fatalf("after the posts: %+v (before %+v)", after, before)
	}
	wantInbox(t, s, "r", []int{1, 2, 3}, "first", odd, "third")
	wantInbox(t, reopen(t, h, s, nil), "r", []int{1, 2, 3}, "first", odd, "third")
	for _, end := range []struct {
		kind   string
		status store.Status
	}{{"fail", store.StatusFailed}, {"cancel", store.StatusCancelled}} {
		id := "end-" + end.kind
		l, g := create(t, s, id, nil)
		must(t, s.Checkpoint(ctx, l, g.next()))
		must(t, s.Checkpoint(ctx, l, g.ending(end.kind)))
		d := dump(t, h, s)
		if _, err := s.PostMessage(ctx, id, "anyone there?"); !errors.Is(err, store.ErrEnded) {
			t.Fatalf("a message to a run that ended %s: %v", end.status, err)
		}
		if !bytes.Equal(d, dump(t, h, s)) {
			t.Fatalf("a message to a run that ended %s wrote something", end.status)
		}
		wantInbox(t, s, id, nil)
		if ri := runInfo(t, s, id); ri.Status != end.status {
			t.Fatalf("after a refused message: %s, want %s", ri.Status, end.status)
		}
	}
}

// testInboxDelivery: a checkpoint with Delivered removes exactly that
// message, the oldest, and counts a turn; one that names another message
// (a later one, or none) is ErrConflict and writes nothing, and one whose
// result is not a user message writes nothing either.
func testInboxDelivery(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	c := newTalk(t, s, "r", core.Request{Input: "question"})
	l := leaseOf(t, s, "r")
	c.step(t, s, l, nil, 0)
	post(t, s, "r", "a", 1)
	post(t, s, "r", "b", 2)
	for _, n := range []int{2, 7} {
		cp, _ := c.next(t, core.UserMessage{Content: "b"})
		cp.Delivered = n
		d := dump(t, h, s)
		if err := s.Checkpoint(ctx, l, cp); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("delivering message %d before message 1: %v", n, err)
		}
		if !bytes.Equal(d, dump(t, h, s)) {
			t.Fatalf("a refused delivery of message %d wrote something", n)
		}
		idle(t, h, s)
	}
	// A delivered message is the step's result.
	cp, _ := c.next(t, core.UserMessage{Content: "a"})
	cp.Result, cp.Delivered = core.ToolResults{}, 1
	if err := s.Checkpoint(ctx, l, cp); err == nil {
		t.Fatal("a delivery whose result is no user message was taken")
	}
	wantInbox(t, s, "r", []int{1, 2}, "a", "b")
	if ri := runInfo(t, s, "r"); ri.LastSeq != 1 || ri.Turns != 1 {
		t.Fatalf("after refused deliveries: step %d, %d turns", ri.LastSeq, ri.Turns)
	}
	c.step(t, s, l, core.UserMessage{Content: "a"}, 1)
	wantInbox(t, s, "r", []int{2}, "b")
	if ri := runInfo(t, s, "r"); ri.LastSeq != 2 || ri.Turns != 2 || ri.Status != store.StatusRunning {
		t.Fatalf("after delivering message 1: %+v", ri)
	}
	// The second from another store on the database.
	o := reopen(t, h, s, nil)
	ol := leaseOf(t, o, "r")
	c.step(t, o, ol, core.UserMessage{Content: "b"}, 2)
	wantInbox(t, s, "r", nil)
	c.step(t, o, ol, core.ModelReply{Text: "the answer"}, 0)
	if ri := runInfo(t, s, "r"); ri.LastSeq != 4 || ri.Turns != 3 || ri.Status != store.StatusCompleted || ri.Answer != "the answer" {
		t.Fatalf("after the answer: %+v", ri)
	}
	post(t, s, "r", "c", 3) // numbers are never given twice
}

// testInboxCompleted: a completed run takes no more steps but a user
// message (which begins a turn) and a cancellation (which closes the
// conversation). A message posted to it makes it running, for a worker to
// claim, its answer kept; a message posted while it works and not
// delivered when it answers leaves it running.
func testInboxCompleted(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	c := newTalk(t, s, "r", core.Request{Input: "question"})
	l := leaseOf(t, s, "r")
	c.step(t, s, l, nil, 0)
	c.step(t, s, l, core.ModelReply{Text: "the answer"}, 0)
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusCompleted || ri.Answer != "the answer" || ri.Turns != 1 {
		t.Fatalf("after the answer: %+v", ri)
	}
	cp, _ := c.next(t, core.UserMessage{Content: "more"})
	cp.Result = core.ModelReply{Text: "not asked for"}
	if err := s.Checkpoint(ctx, l, cp); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("a model reply after the answer: %v", err)
	}
	must(t, s.Release(ctx, l))
	forgetLease(s, "r")
	req := store.LeaseRequest{Owner: "worker/1/w", TTL: time.Hour}
	if _, err := s.Claim(ctx, req); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claiming a completed run: %v", err)
	}
	// The message comes from another store, as from another process:
	// this one still remembers the run completed.
	o := reopen(t, h, s, nil)
	post(t, o, "r", "more", 1)
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusRunning || ri.Answer != "the answer" || ri.Turns != 1 || ri.LastSeq != 2 {
		t.Fatalf("after a message to the completed run: %+v", ri)
	}
	w, err := s.Claim(ctx, req)
	if err != nil || w.RunID != "r" {
		t.Fatalf("claim after the message: %+v %v", w, err)
	}
	c.step(t, s, w, core.UserMessage{Content: "more"}, 1)
	wantInbox(t, s, "r", nil)
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusRunning || ri.Turns != 2 {
		t.Fatalf("after the message's step: %+v", ri)
	}
	// A message posted while the run works, not delivered when it
	// answers: the run stays running.
	post(t, o, "r", "and then?", 2)
	c.step(t, s, w, core.ModelReply{Text: "answer 2"}, 0) // CheckpointStatus: running
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusRunning || ri.Turns != 2 || ri.Answer != "answer 2" {
		t.Fatalf("an answer while a message waits: %+v", ri)
	}
	c.step(t, s, w, core.UserMessage{Content: "and then?"}, 2)
	c.step(t, s, w, core.ModelReply{Text: "answer 3"}, 0)
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusCompleted || ri.Answer != "answer 3" || ri.Turns != 3 {
		t.Fatalf("after the third answer: %+v", ri)
	}
	// A user message with nothing posted (a fork substitutes one) is a
	// turn too.
	c.step(t, s, w, core.UserMessage{Content: "one more"}, 0)
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusRunning || ri.Turns != 4 {
		t.Fatalf("after a user message not posted: %+v", ri)
	}
	c.step(t, s, w, core.ModelReply{Text: "answer 4"}, 0)
	// A cancellation closes the conversation: the run ends cancelled and
	// takes no more messages or steps.
	c.step(t, s, w, core.Cancelled{Reason: "bye"}, 0)
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusCancelled || ri.Turns != 4 {
		t.Fatalf("after closing the conversation: %+v", ri)
	}
	if _, err := s.PostMessage(ctx, "r", "wait"); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("a message to a closed conversation: %v", err)
	}
	if err := s.Checkpoint(ctx, w, store.Checkpoint{Seq: c.seq + 1, Result: core.UserMessage{Content: "wait"}, Action: cp.Action}); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("a user message after the cancellation: %v", err)
	}
}

// testReleasingCheckpoint: a step that ends the run with
// Checkpoint.Release gives the lease up with it: the run is free, another
// driver acquires it without a take-over, and the old holder is fenced out.
// A step that does not end the run, and a completion that a waiting
// message keeps running, keep the lease, and the holder goes on. A
// cancellation that ends the run releases it too.
func testReleasingCheckpoint(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	c := newTalk(t, s, "r", core.Request{Input: "question"})
	l := leaseOf(t, s, "r")
	held := func(want bool, when string) {
		t.Helper()
		ri := runInfo(t, s, "r")
		if got := ri.Lease.Owner == l.Owner && ri.Lease.Token == l.Token; got != want {
			t.Fatalf("%s: the run's lease is %+v; held by %s: %v, want %v", when, ri.Lease, l.Owner, got, want)
		}
	}
	step := func(res core.Result, delivered int, want store.Status) {
		t.Helper()
		cp, keep := c.next(t, res)
		cp.Delivered, cp.Release = delivered, true
		left, err := s.CheckpointStatus(ctx, l, cp)
		must(t, err)
		if left != want {
			t.Fatalf("step %d left the run %q, want %q", cp.Seq, left, want)
		}
		keep()
	}
	step(nil, 0, store.StatusRunning)
	held(true, "after a step that does not end the run")
	post(t, reopen(t, h, s, nil), "r", "one more", 1)
	step(core.ModelReply{Text: "first answer"}, 0, store.StatusRunning)
	held(true, "after an answer while a message waits")
	step(core.UserMessage{Content: "one more"}, 1, store.StatusRunning)
	step(core.ModelReply{Text: "second answer"}, 0, store.StatusCompleted)
	held(false, "after the answer")
	if ri := runInfo(t, s, "r"); ri.Status != store.StatusCompleted || ri.Answer != "second answer" || ri.Lease.Owner != "" {
		t.Fatalf("after the answer: %+v", ri)
	}
	next, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "next/2/y", TTL: time.Hour})
	if err != nil || next.Token != l.Token+1 {
		t.Fatalf("acquiring the run its answer released: %+v %v", next, err)
	}
	if err := s.Release(ctx, l); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the old holder's release: %v, want ErrLeaseLost", err)
	}
	forgetLease(s, "r")

	// A cancellation ends the run: released.
	c = newTalk(t, s, "x", core.Request{Input: "question"})
	l = leaseOf(t, s, "x")
	c.step(t, s, l, nil, 0)
	cp, _ := c.next(t, core.Cancelled{Reason: "stop"})
	cp.Release = true
	if left, err := s.CheckpointStatus(ctx, l, cp); err != nil || left != store.StatusCancelled {
		t.Fatalf("the cancellation: %q %v", left, err)
	}
	if ri := runInfo(t, s, "x"); ri.Status != store.StatusCancelled || ri.Lease.Owner != "" {
		t.Fatalf("after the cancellation: %+v", ri)
	}
}

// testInboxRacingPosts: posts racing from goroutines of two stores on one
// database get distinct numbers, 1 to n, and none is lost.
func testInboxRacingPosts(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	newTalk(t, s, "r", core.Request{Input: "question"})
	stores := []store.Store{s, reopen(t, h, s, nil)}
	const posters, each = 4, 10
	var mu sync.Mutex
	got := map[int]string{}
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*posters)
	for i, st := range stores {
		for p := range posters {
			wg.Go(func() {
				for k := range each {
					content := fmt.Sprintf("store %d poster %d message %d", i, p, k)
					n, err := st.PostMessage(ctx, "r", content)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if prev, ok := got[n]; ok {
						mu.Unlock()
						errs <- fmt.Errorf("number %d given to %q and %q", n, prev, content)
						return
					}
					got[n] = content
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const total = 2 * posters * each
	inbox, err := s.Inbox(ctx, "r")
	must(t, err)
	if len(got) != total || len(inbox) != total {
		t.Fatalf("%d numbers given, %d messages in the inbox, want %d", len(got), len(inbox), total)
	}
	for i, m := range inbox {
		if m.N != i+1 || m.Content != got[m.N] {
			t.Fatalf("inbox message %d: %d %q, want %d %q", i, m.N, m.Content, i+1, got[i+1])
		}
	}
}

// testTurns: a run starts with one turn, or with the user messages of the
// history it starts from; an export and import keeps the count (the file
// does not carry it: the steps do), and drops the inbox.
func testTurns(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	history := []core.Message{
		{Role: core.RoleUser, Content: "hi"},
		{Role: core.RoleAssistant, Content: "hello"},
		{Role: core.RoleUser, Content: "what now?"},
	}
	c := newTalk(t, s, "r", core.Request{Messages: history})
	if ri := runInfo(t, s, "r"); ri.Turns != 2 {
		t.Fatalf("a run from a history of two user messages: %d turns", ri.Turns)
	}
	l := leaseOf(t, s, "r")
	c.step(t, s, l, nil, 0)
	c.step(t, s, l, core.ModelReply{Text: "the answer"}, 0)
	post(t, s, "r", "more", 1)
	c.step(t, s, l, core.UserMessage{Content: "more"}, 1)
	post(t, s, "r", "left in the inbox", 2)
	if ri := runInfo(t, s, "r"); ri.Turns != 3 {
		t.Fatalf("after a message: %d turns", ri.Turns)
	}
	var file bytes.Buffer
	must(t, s.Export(ctx, "r", &file))
	o := open(t, h, nil)
	if _, err := o.Import(ctx, bytes.NewReader(file.Bytes())); err != nil {
		t.Fatal(err)
	}
	if ri := runInfo(t, o, "r"); ri.Turns != 3 {
		t.Fatalf("imported: %d turns, want 3", ri.Turns)
	}
	wantInbox(t, o, "r", nil)
	newRun(t, s, "plain")
	if ri := runInfo(t, s, "plain"); ri.Turns != 1 {
		t.Fatalf("a run from an input: %d turns", ri.Turns)
	}
	if runs, err := s.ListRuns(ctx, store.Filter{}); err != nil || len(runs) != 2 || runs[0].Turns+runs[1].Turns != 4 {
		t.Fatalf("listed: %+v %v", runs, err)
	}
}

// testInboxCorrupt: a damaged message is reported, never returned.
func testInboxCorrupt(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	newTalk(t, s, "r", core.Request{Input: "question"})
	post(t, s, "r", "fine", 1)
	post(t, s, "r", "damaged", 2)
	damage(t, h, s, Damage{Kind: DamageInbox, RunID: "r", Seq: 2, At: 3})
	got, err := s.Inbox(ctx, "r")
	wantCorrupt(t, err, "run r", "message 2")
	if got != nil {
		t.Fatalf("a corrupt inbox returned %+v", got)
	}
}

package shell_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
	"pgregory.net/rapid"
)

// modelFunc is a model provider whose behaviour is a function.
type modelFunc func(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error)

func (f modelFunc) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	return f(ctx, req)
}

// gate is a model that blocks its first call until released, then answers
// from replies in order.
type gate struct {
	entered, release chan struct{}
	calls            atomic.Int32
	replies          []core.ModelReply
}

func newGate(replies ...core.ModelReply) *gate {
	return &gate{entered: make(chan struct{}, 1), release: make(chan struct{}), replies: replies}
}

func (g *gate) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	n := g.calls.Add(1)
	if n == 1 {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return core.ModelReply{}, ctx.Err()
		}
	}
	return g.replies[min(int(n)-1, len(g.replies)-1)], nil
}

// TestASecondRunnerIsRefusedWhileTheFirstDrives: a live driver's run is
// refused at once (ErrBusy, naming the holder), or waited for with Wait.
func TestASecondRunnerIsRefusedWhileTheFirstDrives(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	g := newGate(core.ModelReply{Text: "done"})
	ag := newAgent(t, g)
	first := shell.NewRunner(db, &shell.Options{Owner: "first/1/a", NewID: func() string { return "r1" }})
	done := make(chan shell.Outcome, 1)
	go func() {
		out, err := first.Start(ctx, ag, "go")
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	<-g.entered
	second := shell.NewRunner(db, &shell.Options{Owner: "second/2/b"})
	_, err := second.Resume(ctx, ag, "r1")
	busy, ok := errors.AsType[*store.BusyError](err)
	if !errors.Is(err, shell.ErrBusy) || !ok || busy.Holder.Owner != "first/1/a" || !strings.Contains(err.Error(), "first") {
		t.Fatalf("resume of a driven run: %v", err)
	}
	if g.calls.Load() != 1 {
		t.Fatal("the refused resumer called the model")
	}
	// With Wait, the second runner takes the run once the first releases it.
	waiting := shell.NewRunner(db, &shell.Options{Owner: "third/3/c", Wait: 5 * time.Second})
	got := make(chan error, 1)
	go func() {
		out, err := waiting.Resume(ctx, ag, "r1")
		if err == nil && out.Status != store.StatusCompleted {
			err = fmt.Errorf("status %s", out.Status)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	close(g.release)
	if out := <-done; out.Status != store.StatusCompleted {
		t.Fatalf("first: %+v", out)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting resumer: %v", err)
	}
	if info, _ := db.Run(ctx, "r1"); info.Lease.Owner != "" {
		t.Fatalf("the lease was not released: %+v", info.Lease)
	}
}

// TestADeadHoldersRunIsTakenOverAtOnce: a lease whose holder is a process
// of this host that died is taken over without waiting for its expiry.
func TestADeadHoldersRunIsTakenOverAtOnce(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s/%d/dead", host, dead.Process.Pid)
	ag := newAgent(t, scripted(t, `{"text":"finished"}`))
	st, _ := core.Start(ag.Config, core.Request{Input: "go"})
	if _, err := db.CreateRun(ctx, store.NewRun{ID: "r", Agent: "a", Initial: st, Owner: owner, LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if alive, known := shell.HolderAlive(owner); alive || !known {
		t.Fatalf("HolderAlive(dead) = %v, %v", alive, known)
	}
	if alive, known := shell.HolderAlive(shell.NewOwner()); !alive || !known {
		t.Fatalf("HolderAlive(self) = %v, %v", alive, known)
	}
	if _, known := shell.HolderAlive("otherhost/1/x"); known {
		t.Fatal("a holder on another host is known")
	}
	info, _ := db.Run(ctx, "r")
	if shell.Driven(info.Lease, time.Now()) || !strings.Contains(shell.DescribeLease(info.Lease, time.Now()), "dead") {
		t.Fatalf("a dead holder's run looks driven: %s", shell.DescribeLease(info.Lease, time.Now()))
	}
	out, err := shell.NewRunner(db, nil).Resume(ctx, ag, "r")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "finished" {
		t.Fatalf("take-over: %+v %v", out, err)
	}
}

// TestALostLeaseStartsNothing: a driver whose run is taken over while it
// waits (stopped past its lease, say) writes nothing and runs no tool:
// its next fenced write is refused before the non-idempotent call starts.
func TestALostLeaseStartsNothing(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	var charged atomic.Int32
	charge := fnTool{spec: core.Tool{Name: "charge"}, run: func(context.Context, core.ToolCall) core.ToolResult {
		charged.Add(1)
		return core.ToolResult{Output: "charged"}
	}}
	g := newGate(core.ModelReply{Calls: []core.NativeCall{{ID: "c1", Name: "charge", Arguments: "{}"}}}, core.ModelReply{Text: "done"})
	ag := newAgent(t, g, charge)
	first := shell.NewRunner(db, &shell.Options{Owner: "first/1/a", NewID: func() string { return "r" }, LeaseTTL: time.Hour})
	res := make(chan error, 1)
	go func() {
		_, err := first.Start(ctx, ag, "go")
		res <- err
	}()
	<-g.entered
	info, _ := db.Run(ctx, "r")
	before, _ := db.LoadLatest(ctx, "r")
	// Another driver takes the run over (as if the first were stopped
	// past its lease) and finishes it.
	l, err := db.Acquire(ctx, "r", store.LeaseRequest{Owner: "second/2/b", TTL: time.Hour, TakeOver: &info.Lease})
	if err != nil {
		t.Fatal(err)
	}
	close(g.release)
	err = <-res
	if !errors.Is(err, shell.ErrLeaseLost) {
		t.Fatalf("the first driver after losing its lease: %v", err)
	}
	if charged.Load() != 0 {
		t.Fatal("a driver without the lease ran a tool")
	}
	after, _ := db.LoadLatest(ctx, "r")
	if after.Seq != before.Seq {
		t.Fatalf("a driver without the lease wrote step %d", after.Seq)
	}
	if info, _ := db.Run(ctx, "r"); info.Lease != l {
		t.Fatalf("the lost driver changed the lease: %+v", info.Lease)
	}
}

// TestTheFenceRefusesAnIntentBeforeTheCallRuns: the run is taken over
// between the checkpoint and a non-idempotent call: its intent (or the
// outcome of the call before it) is refused and the call never runs.
func TestTheFenceRefusesAnIntentBeforeTheCallRuns(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	var charged atomic.Int32
	took := make(chan struct{})
	slow := fnTool{spec: core.Tool{Name: "slow", Idempotent: true}, run: func(context.Context, core.ToolCall) core.ToolResult {
		info, _ := db.Run(ctx, "r")
		if _, err := db.Acquire(ctx, "r", store.LeaseRequest{Owner: "second/2/b", TTL: time.Hour, TakeOver: &info.Lease}); err != nil {
			t.Error(err)
		}
		close(took)
		return core.ToolResult{Output: "slow done"}
	}}
	charge := fnTool{spec: core.Tool{Name: "charge"}, run: func(context.Context, core.ToolCall) core.ToolResult {
		charged.Add(1)
		return core.ToolResult{Output: "charged"}
	}}
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"s1","name":"slow"},{"id":"c1","name":"charge"}]}`, `{"text":"done"}`), slow, charge)
	_, err := shell.NewRunner(db, &shell.Options{Owner: "first/1/a", NewID: func() string { return "r" }, LeaseTTL: time.Hour}).Start(ctx, ag, "go")
	<-took
	if !errors.Is(err, shell.ErrLeaseLost) || charged.Load() != 0 {
		t.Fatalf("err %v, charge ran %d times", err, charged.Load())
	}
	intents, _ := db.Intents(ctx, "r", 2)
	for _, in := range intents {
		if in.CallID == "c1" {
			t.Fatalf("an intent was recorded without the lease: %+v", in)
		}
	}
}

// TestTransientModelFailureStallsAndResumeRetries: a provider that gives
// up on a transient failure stalls the run (resumable, reason and retry
// time recorded); a permanent failure fails it.
func TestTransientModelFailureStallsAndResumeRetries(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	down := modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return core.ModelReply{}, &shell.TransientError{Err: errors.New("gave up after 5 attempts (last: status 429 Too Many Requests)"), Attempts: 5, RetryAfter: 30 * time.Second}
	})
	ag := newAgent(t, down)
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusStalled || !strings.Contains(out.Reason, "429") || out.RetryAt.Before(time.Now().Add(20*time.Second)) {
		t.Fatalf("stalled = %+v, %v", out, err)
	}
	info, _ := db.Run(ctx, out.RunID)
	if info.Status != store.StatusStalled || !strings.Contains(info.Reason, "429") || info.RetryAt.IsZero() || info.Lease.Owner != "" {
		t.Fatalf("stored: %+v", info)
	}
	// The endpoint is back: resume performs the pending call again.
	ag.Models[core.Primary] = scripted(t, `{"text":"answered at last"}`)
	out, err = r.Resume(ctx, ag, out.RunID)
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "answered at last" {
		t.Fatalf("resumed = %+v, %v", out, err)
	}
	// A plain error from a provider is transient too; a permanent one fails the run.
	for _, c := range []struct {
		err  error
		want store.Status
	}{
		{errors.New("connection refused"), store.StatusStalled},
		{fmt.Errorf("401: %w", shell.ErrModelPermanent), store.StatusFailed},
	} {
		ag.Models[core.Primary] = modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) { return core.ModelReply{}, c.err })
		out, err := r.Start(ctx, ag, "go")
		if err != nil || out.Status != c.want {
			t.Errorf("%v: %+v %v", c.err, out, err)
		}
	}
}

// TestIdempotentToolRetriesThenStalls: an idempotent tool's transient
// failure is retried by its policy; past it the run stalls; a
// non-idempotent tool is never retried, its failure reaches the model.
func TestIdempotentToolRetriesThenStalls(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	var calls atomic.Int32
	flaky := func(idem bool, failures int32) fnTool {
		return fnTool{spec: core.Tool{Name: "fetch", Idempotent: idem}, run: func(context.Context, core.ToolCall) core.ToolResult {
			if calls.Add(1) <= failures {
				return core.ToolResult{Error: "connection refused", Transient: true}
			}
			return core.ToolResult{Output: "page"}
		}}
	}
	policy := map[string]shell.RetryPolicy{"fetch": {Attempts: 3, Backoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: -1}}
	script := []string{`{"tool_calls":[{"id":"f1","name":"fetch"}]}`, `{"text":"done"}`}

	ag := newAgent(t, scripted(t, script...), flaky(true, 2))
	ag.ToolRetry = policy
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusCompleted || calls.Load() != 3 {
		t.Fatalf("two transient failures then success: %+v %v, %d calls", out, err, calls.Load())
	}

	calls.Store(0)
	ag = newAgent(t, scripted(t, script...), flaky(true, 100))
	ag.ToolRetry = policy
	out, err = shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusStalled || calls.Load() != 3 || !strings.Contains(out.Reason, "connection refused") {
		t.Fatalf("always failing: %+v %v, %d calls", out, err, calls.Load())
	}
	ag.Tools["fetch"] = flaky(true, 0)
	if out, err = shell.NewRunner(db, nil).Resume(ctx, ag, out.RunID); err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("resumed after the outage: %+v %v", out, err)
	}

	calls.Store(0)
	ag = newAgent(t, scripted(t, script...), flaky(false, 100))
	ag.ToolRetry = policy
	out, err = shell.NewRunner(db, nil).Start(ctx, ag, "go")
	rec, _ := db.LoadLatest(ctx, out.RunID)
	msgs := rec.State.Messages
	if err != nil || out.Status != store.StatusCompleted || calls.Load() != 1 || msgs[len(msgs)-2].Content != "connection refused" {
		t.Fatalf("non-idempotent: %+v %v, %d calls", out, err, calls.Load())
	}
}

// inDoubtRun leaves a run whose non-idempotent call was in flight when
// its driver was interrupted (an intent and no outcome).
func inDoubtRun(t *testing.T, db *sqlite.SQLite, calls *atomic.Int32) (*shell.Agent, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	charge := fnTool{spec: core.Tool{Name: "charge"}, run: func(tctx context.Context, c core.ToolCall) core.ToolResult {
		if calls.Add(1) == 1 {
			cancel()
			<-tctx.Done()
			return core.ToolResult{Error: "interrupted"}
		}
		return core.ToolResult{Output: "charged again"}
	}}
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"c1","name":"charge"}]}`, `{"text":"end"}`), charge)
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusInterrupted {
		t.Fatalf("interrupted = %+v %v", out, err)
	}
	return ag, out.RunID
}

func toolMessage(t *testing.T, db *sqlite.SQLite, id string) string {
	t.Helper()
	rec, err := db.LoadLatest(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleTool {
			return m.Content
		}
	}
	return ""
}

// TestInDoubtCallsAreListedAndDecidable: an in-flight non-idempotent call
// is in doubt; an operator may answer it (what it did, or that it did not
// run), or the agent's policy decides (unknown, rerun, wait).
func TestInDoubtCallsAreListedAndDecidable(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		policy     shell.InDoubtPolicy
		ans        *shell.Answers
		status     store.Status
		calls      int32
		resolution string
		msg        string
	}{
		{"policy unknown", "", nil, store.StatusCompleted, 1, "unknown", "outcome unknown"},
		{"policy rerun", shell.InDoubtRerun, nil, store.StatusCompleted, 2, "rerun", "charged again"},
		{"policy wait", shell.InDoubtWait, nil, store.StatusStalled, 1, "waiting", ""},
		{"operator: what it did", shell.InDoubtWait, &shell.Answers{Results: []core.ToolResult{{CallID: "c1", Output: "charged 42 EUR"}}}, store.StatusCompleted, 1, "answered", "charged 42 EUR"},
		{"operator: it did not run", "", &shell.Answers{NotRun: []string{"c1"}}, store.StatusCompleted, 2, "not_run", "charged again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openStore(t)
			var calls atomic.Int32
			ag, id := inDoubtRun(t, db, &calls)
			ag.InDoubt = c.policy
			r := shell.NewRunner(db, nil)
			list, err := r.InDoubt(ctx, ag, id)
			if err != nil || len(list) != 1 || list[0].Call.ID != "c1" || list[0].Call.Name != "charge" || list[0].Started.IsZero() {
				t.Fatalf("in doubt: %+v %v", list, err)
			}
			var out shell.Outcome
			if c.ans != nil {
				out, err = r.Submit(ctx, ag, id, *c.ans)
			} else {
				out, err = r.Resume(ctx, ag, id)
			}
			if err != nil || out.Status != c.status || calls.Load() != c.calls {
				t.Fatalf("outcome %+v %v, %d calls", out, err, calls.Load())
			}
			if len(out.InDoubt) != 1 || out.InDoubt[0].Resolution != c.resolution {
				t.Fatalf("in doubt in the outcome: %+v", out.InDoubt)
			}
			if c.msg != "" && !strings.Contains(toolMessage(t, db, id), c.msg) {
				t.Fatalf("the model read %q, want %q", toolMessage(t, db, id), c.msg)
			}
			if c.status == store.StatusStalled && !strings.Contains(out.Reason, "c1 (charge)") {
				t.Fatalf("stall reason %q", out.Reason)
			}
		})
	}
	// Answers that name no in-doubt call are refused, and change nothing.
	db := openStore(t)
	var calls atomic.Int32
	ag, id := inDoubtRun(t, db, &calls)
	if _, err := shell.NewRunner(db, nil).Submit(ctx, ag, id, shell.Answers{Results: []core.ToolResult{{CallID: "zz", Output: "x"}}}); !errors.Is(err, core.ErrUnknownCall) {
		t.Fatalf("an answer for an unknown call: %v", err)
	}
	if list, _ := shell.NewRunner(db, nil).InDoubt(ctx, ag, id); len(list) != 1 {
		t.Fatal("a refused answer changed the journal")
	}
}

// TestSecretsNeverReachTheStore: a secret in the input, a tool's output,
// a model's reply and a model's error is replaced by a marker before the
// run stores or shows it.
func TestSecretsNeverReachTheStore(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	const key = "sk-test-0123456789abcdef"
	leak := fnTool{spec: core.Tool{Name: "leak", Idempotent: true, Parameters: []byte(anyArgs)}, run: func(context.Context, core.ToolCall) core.ToolResult {
		return core.ToolResult{Output: "env: OPENAI_API_KEY=" + key, Sources: []string{"https://x/?key=" + key}}
	}}
	ag := newAgent(t, scripted(t,
		`{"text":"I will use `+key+`","tool_calls":[{"id":"l1","name":"leak","arguments":{"x":"`+key+`"}}]}`,
		`{"text":"the key was `+key+`"}`), leak)
	ag.Secrets = []shell.Secret{{Name: "OPENAI_API_KEY", Value: key}}
	var events bytes.Buffer
	out, err := shell.NewRunner(db, &shell.Options{Observer: observerFunc(func(e shell.Event) { events.WriteString(e.Text + "\n") })}).Start(ctx, ag, "use "+key)
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	var export bytes.Buffer
	if err := db.Export(ctx, out.RunID, &export); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(export.String(), key) || strings.Contains(events.String(), key) || strings.Contains(out.Answer, key) {
		t.Fatal("the key reached the store, the export or the events")
	}
	if !strings.Contains(export.String(), "[redacted:OPENAI_API_KEY]") || !strings.Contains(out.Answer, "[redacted:OPENAI_API_KEY]") {
		t.Fatalf("no marker where the key was: %s", out.Answer)
	}
	// A permanent model error that echoes the key.
	ag.Models[core.Primary] = modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return core.ModelReply{}, fmt.Errorf("401: Incorrect API key provided: %s: %w", key, shell.ErrModelPermanent)
	})
	out, err = shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusFailed || strings.Contains(out.Failure.Reason, key) {
		t.Fatalf("%+v %v", out, err)
	}
	info, _ := db.Run(ctx, out.RunID)
	if strings.Contains(info.Reason, key) || !strings.Contains(info.Reason, "[redacted:OPENAI_API_KEY]") {
		t.Fatalf("stored reason: %s", info.Reason)
	}
}

type observerFunc func(shell.Event)

func (f observerFunc) Event(e shell.Event) { f(e) }

// TestWhateverAModelReturnsIsReadBack: a reply with invalid UTF-8 (in its
// text, its calls' arguments, names and ids) is stored valid, and the run
// loads, replays and exports.
func TestWhateverAModelReturnsIsReadBack(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	bad := "\xff\xfe\xc3("
	add := fnTool{spec: core.Tool{Name: "add", Parameters: []byte(anyArgs)}, run: func(context.Context, core.ToolCall) core.ToolResult {
		return core.ToolResult{Output: "out" + bad}
	}}
	replies := []core.ModelReply{
		{Text: "thinking" + bad, Calls: []core.NativeCall{{ID: "c" + bad, Name: "add", Arguments: `{"x":"` + bad + `"}`}}},
		{Text: "done" + bad},
	}
	var n atomic.Int32
	ag := newAgent(t, modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return replies[min(int(n.Add(1))-1, 1)], nil
	}), add)
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := db.LoadLatest(ctx, out.RunID); err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := db.Steps(ctx, out.RunID, func(store.StepRecord) error { return nil }); err != nil {
		t.Fatalf("steps: %v", err)
	}
	if err := db.Export(ctx, out.RunID, new(bytes.Buffer)); err != nil {
		t.Fatalf("export: %v", err)
	}
	rep, err := shell.Replay(ctx, db, out.RunID, ag.Config)
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay: %+v %v", rep, err)
	}
}

// TestResumeWithAChangedAgentIsRecorded: resume with another agent
// source records the change with the run.
func TestResumeWithAChangedAgentIsRecorded(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return core.ModelReply{}, errors.New("dial tcp 127.0.0.1:9: connection refused")
	}))
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusStalled {
		t.Fatalf("%+v %v", out, err)
	}
	fixed := newAgent(t, scripted(t, `{"text":"ok"}`))
	fixed.Source = []byte(`{"fixed":true}`)
	if out, err = shell.NewRunner(db, nil).Resume(ctx, fixed, out.RunID); err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	changes, _ := db.AgentChanges(ctx, out.RunID)
	info, _ := db.Run(ctx, out.RunID)
	if len(changes) != 1 || string(changes[0].Config) != `{"fixed":true}` || string(info.Config) != `{"fixed":true}` {
		t.Fatalf("changes %+v, config %s", changes, info.Config)
	}
}

// TestAnyProviderBytesReadBack is the property behind
// TestWhateverAModelReturnsIsReadBack: whatever bytes a provider returns in
// a reply's text, finish reason, calls' ids, names and arguments, and
// whatever a tool returns, the stored run loads, iterates, exports and
// replays.
func TestAnyProviderBytesReadBack(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	anyBytes := rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 40), func(b []byte) string { return string(b) })
	rapid.Check(t, func(rt *rapid.T) {
		out := anyBytes.Draw(rt, "tool output")
		tool := fnTool{spec: core.Tool{Name: "any", Parameters: []byte(`{"type":"object"}`)}, run: func(context.Context, core.ToolCall) core.ToolResult {
			return core.ToolResult{Output: out, Sources: []string{out}}
		}}
		replies := []core.ModelReply{
			{Text: anyBytes.Draw(rt, "text"), FinishReason: anyBytes.Draw(rt, "finish"),
				Calls: []core.NativeCall{{ID: anyBytes.Draw(rt, "id"), Name: rapid.SampledFrom([]string{"any", "\xffany"}).Draw(rt, "name"), Arguments: anyBytes.Draw(rt, "args")}}},
			{Text: anyBytes.Draw(rt, "answer") + "done"},
		}
		var n atomic.Int32
		ag := newAgent(t, modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
			return replies[min(int(n.Add(1))-1, 1)], nil
		}), tool)
		res, err := shell.NewRunner(db, nil).Start(ctx, ag, anyBytes.Draw(rt, "input"))
		if err != nil {
			rt.Fatalf("run: %v", err)
		}
		if _, err := db.LoadLatest(ctx, res.RunID); err != nil {
			rt.Fatalf("load: %v", err)
		}
		if err := db.Steps(ctx, res.RunID, func(store.StepRecord) error { return nil }); err != nil {
			rt.Fatalf("steps: %v", err)
		}
		if err := db.Export(ctx, res.RunID, new(bytes.Buffer)); err != nil {
			rt.Fatalf("export: %v", err)
		}
		if rep, err := shell.Replay(ctx, db, res.RunID, ag.Config); err != nil || rep.Diverged != nil {
			rt.Fatalf("replay: %+v %v", rep.Diverged, err)
		}
	})
}

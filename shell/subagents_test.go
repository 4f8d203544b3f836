package shell_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// treeAgents is a manager whose tool "research" is a sub-agent; the
// researcher asks a person (an external tool) before it answers.
func treeAgents(t *testing.T, manager, researcher []string) *shell.Agent {
	t.Helper()
	child := newAgent(t, scripted(t, researcher...))
	child.Config.Name = "researcher"
	child.Config.Tools = []core.Tool{external("ask_person")}
	parent := newAgent(t, scripted(t, manager...))
	parent.Config.Name = "manager"
	parent.Config.Tools = append(parent.Config.Tools, core.Tool{Name: "research", Description: "ask the researcher",
		Parameters: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}`), Idempotent: true})
	parent.SubAgents = map[string]*shell.SubAgent{"research": {Agent: child, Task: true}}
	return parent
}

// A sub-agent's pause surfaces at the root with namespaced call ids;
// answering through the root resumes the child, then the parent, whose
// model reads the child's answer; the tree's spending is counted at the
// root; each run replays on its own; nothing runs twice when the answer is
// sent again.
func TestSubAgentPauseSurfacesAtTheRoot(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := treeAgents(t,
		[]string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"find the best lamp"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`,
			`{"text":"The researcher says: the brass lamp."}`},
		[]string{`{"tool_calls":[{"id":"e1","name":"ask_person","arguments":{"x":"brass or steel?"}}],"usage":{"prompt_tokens":100,"completion_tokens":50}}`,
			`{"text":"the brass lamp","usage":{"prompt_tokens":200,"completion_tokens":20}}`})
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "buy a lamp")
	if err != nil || out.Status != store.StatusAwaitingToolResults || len(out.Pending) != 1 || out.Pending[0].ID != "c1/e1" || out.Pending[0].Name != "ask_person" {
		t.Fatalf("the root's pause: %+v %v", out, err)
	}
	child := shell.ChildID(out.RunID, "c1")
	if info, err := db.Run(ctx, child); err != nil || info.Status != store.StatusAwaitingToolResults || info.Agent != "researcher" {
		t.Fatalf("the child run: %+v %v", info, err)
	}
	rec, _ := db.LoadLatest(ctx, out.RunID)
	if pending, err := shell.PendingCalls(ctx, db, out.RunID, rec.State); err != nil || len(pending) != 1 || pending[0].ID != "c1/e1" {
		t.Fatalf("PendingCalls of the root: %+v %v", pending, err)
	}
	done, err := r.Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "c1/e1", Output: "brass"}}})
	if err != nil || done.Status != store.StatusCompleted || done.Answer != "The researcher says: the brass lamp." {
		t.Fatalf("after answering through the root: %+v %v", done, err)
	}
	rec, _ = db.LoadLatest(ctx, out.RunID)
	if c := rec.State.Counters; c.PromptTokens != 10+100+200 || c.CompletionTokens != 5+50+20 {
		t.Fatalf("the root counts the tree's tokens: %+v", c)
	}
	var result string
	_ = db.Steps(ctx, out.RunID, func(s store.StepRecord) error {
		if tr, ok := s.Result.(core.ToolResults); ok {
			result = tr.Results[0].Output
		}
		return nil
	})
	if result != "the brass lamp" {
		t.Fatalf("the call's recorded result: %q", result)
	}
	if _, err := r.Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "c1/e1", Output: "brass"}}}); err == nil {
		t.Fatal("an answer sent again was taken")
	}
	for _, id := range []string{out.RunID, child} {
		cfg := ag.Config
		if id == child {
			cfg = ag.SubAgents["research"].Config
		}
		rep, err := shell.Replay(ctx, db, id, cfg)
		if err != nil || rep.Diverged != nil {
			t.Fatalf("replay %s: %+v %v", id, rep.Diverged, err)
		}
	}
}

// A child that fails is the call's error, which the parent's model reads;
// cancelling a paused root cancels its paused child.
func TestSubAgentFailureAndCancellation(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := treeAgents(t,
		[]string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"x"}}]}`, `{"text":"it failed, sorry"}`},
		[]string{`{"error":"boom"}`})
	ag.SubAgents["research"].Models[core.Primary] = failing{}
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "it failed, sorry" {
		t.Fatalf("%+v %v", out, err)
	}
	rec, _ := db.LoadLatest(ctx, out.RunID)
	var saw bool
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleTool && m.IsError && strings.Contains(m.Content, "the sub-agent research failed (model_error)") {
			saw = true
		}
	}
	if !saw {
		t.Fatal("the parent's model did not read the child's failure")
	}

	paused := treeAgents(t, []string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"x"}}]}`},
		[]string{`{"tool_calls":[{"id":"e1","name":"ask_person","arguments":{}}]}`})
	out, err = r.Start(ctx, paused, "go")
	if err != nil || out.Status != store.StatusAwaitingToolResults {
		t.Fatalf("%+v %v", out, err)
	}
	if c, err := r.Cancel(ctx, paused, out.RunID, "stop"); err != nil || c.Status != store.StatusCancelled {
		t.Fatalf("cancel the root: %+v %v", c, err)
	}
	if info, _ := db.Run(ctx, shell.ChildID(out.RunID, "c1")); info.Status != store.StatusCancelled {
		t.Fatalf("the child after the root's cancellation: %s", info.Status)
	}
}

// failing is a model that fails for good.
type failing struct{}

func (failing) Complete(context.Context, shell.ModelRequest) (core.ModelReply, error) {
	return core.ModelReply{}, shell.ErrModelPermanent
}

// A sub-agent with an output schema hands its parent the value.
func TestSubAgentHandsItsOutput(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := treeAgents(t,
		[]string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"rate it"}}]}`, `{"text":"done"}`},
		[]string{`{"text":"{\"score\": 7}"}`})
	sub := ag.SubAgents["research"]
	sub.Config.Output = &core.OutputPolicy{Schema: json.RawMessage(`{"type":"object","properties":{"score":{"type":"integer"}},"required":["score"]}`)}
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	var result string
	_ = db.Steps(ctx, out.RunID, func(s store.StepRecord) error {
		if tr, ok := s.Result.(core.ToolResults); ok {
			result = tr.Results[0].Output
		}
		return nil
	})
	if result != `{"score":7}` {
		t.Fatalf("the parent's result: %q", result)
	}
	child, _ := db.LoadLatest(ctx, shell.ChildID(out.RunID, "c1"))
	info, _ := db.Run(ctx, shell.ChildID(out.RunID, "c1"))
	if !child.State.Structured || info.Status != store.StatusCompleted {
		t.Fatalf("the child: %+v", info)
	}
}

// A handoff: the front desk hands the conversation to billing, which goes
// on in the same run with its own prompt and tools (recorded as an agent
// change) and hands back; the run replays following the changes.
func TestHandoffGoesOnInTheSameRun(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	handoffSchema := json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}}}`)
	front := newAgent(t, scripted(t,
		`{"tool_calls":[{"id":"h1","name":"billing","arguments":{"reason":"an invoice question"}}]}`,
		`{"text":"(unused)"}`, `{"text":"(unused)"}`, `{"text":"(unused)"}`,
		`{"text":"Back at the front desk: anything else?"}`))
	front.Config.Name, front.Config.SystemPrompt = "front", "You are the front desk."
	front.Source = []byte(`{"agent":"front"}`)
	billing := newAgent(t, scripted(t, `{"text":"(unused)"}`,
		`{"tool_calls":[{"id":"i1","name":"invoice","arguments":{"x":"42"}}]}`,
		`{"text":"Invoice 42 is paid."}`,
		`{"tool_calls":[{"id":"h2","name":"front","arguments":{}}]}`),
		fnTool{spec: core.Tool{Name: "invoice", Parameters: json.RawMessage(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
			return core.ToolResult{CallID: c.ID, Output: "paid"}
		}})
	billing.Config.Name, billing.Config.SystemPrompt = "billing", "You handle invoices."
	billing.Source = []byte(`{"agent":"billing"}`)
	front.Config.Tools = append(front.Config.Tools, core.Tool{Name: "billing", Parameters: handoffSchema, Idempotent: true})
	front.Handoffs = map[string]*shell.Handoff{"billing": {Name: "billing", Load: func(context.Context) (*shell.Agent, error) { return billing, nil }}}
	billing.Config.Tools = append(billing.Config.Tools, core.Tool{Name: "front", Parameters: handoffSchema, Idempotent: true})
	billing.Handoffs = map[string]*shell.Handoff{"front": {Name: "front", Load: func(context.Context) (*shell.Agent, error) { return front, nil }}}

	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, front, "Is invoice 42 paid?")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "Invoice 42 is paid." {
		t.Fatalf("%+v %v", out, err)
	}
	changes, _ := db.AgentChanges(ctx, out.RunID)
	if len(changes) != 1 || string(changes[0].Config) != `{"agent":"billing"}` {
		t.Fatalf("the handoff's agent change: %+v", changes)
	}
	rec, _ := db.LoadLatest(ctx, out.RunID)
	var told bool
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleTool && strings.Contains(m.Content, "now with the billing agent") && strings.Contains(m.Content, "You handle invoices.") {
			told = true
		}
	}
	if !told || strings.Join(rec.State.ToolsUsed, ",") != "billing,invoice" {
		t.Fatalf("the model was not told of the handoff, or the tools: %v", rec.State.ToolsUsed)
	}
	rep, err := shell.ReplayChanges(ctx, db, out.RunID, front.Config, []shell.ConfigFrom{{Seq: changes[0].Seq, Config: billing.Config}})
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay following the handoff: %+v %v", rep.Diverged, err)
	}

	// The next turn: billing hands back, and the front desk answers.
	out, err = r.Say(ctx, billing, out.RunID, "Thanks, back to the front desk please")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "Back at the front desk: anything else?" {
		t.Fatalf("the handback: %+v %v", out, err)
	}
	if changes, _ = db.AgentChanges(ctx, out.RunID); len(changes) != 2 || string(changes[1].Config) != `{"agent":"front"}` {
		t.Fatalf("the handback's agent change: %+v", changes)
	}
}

// gatedModel answers from a script, but its call number gate blocks until
// released (or its context ends): a process killed mid-call.
type gatedModel struct {
	inner   shell.ModelProvider
	gate    int
	reached chan struct{}
	calls   map[int]int
	mu      *sync.Mutex
}

func (g gatedModel) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	g.mu.Lock()
	g.calls[req.Call]++
	g.mu.Unlock()
	if req.Call == g.gate {
		select {
		case g.reached <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return core.ModelReply{}, ctx.Err()
	}
	return g.inner.Complete(ctx, req)
}

// A drive interrupted inside a child's model call (its process stopped)
// resumes from the root: the child is found again, not started twice, and
// goes on from its checkpoint; no model call is made twice but the one cut
// short.
func TestSubAgentSurvivesAnInterruptedDrive(t *testing.T) {
	db := openStore(t)
	ag := treeAgents(t,
		[]string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"x"}}]}`, `{"text":"parent done"}`},
		[]string{`{"tool_calls":[{"id":"n1","name":"note","arguments":{"x":"a"}}]}`, `{"text":"child done"}`})
	sub := ag.SubAgents["research"]
	sub.Config.Tools = []core.Tool{{Name: "note", Parameters: json.RawMessage(anyArgs)}}
	notes := 0
	sub.Tools["note"] = fnTool{spec: sub.Config.Tools[0], run: func(_ context.Context, c core.ToolCall) core.ToolResult {
		notes++
		return core.ToolResult{CallID: c.ID, Output: "noted"}
	}}
	mu := &sync.Mutex{}
	calls := map[int]int{}
	reached := make(chan struct{}, 1)
	sub.Models[core.Primary] = gatedModel{inner: sub.Models[core.Primary], gate: 2, reached: reached, calls: calls, mu: mu}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan shell.Outcome, 1)
	r := shell.NewRunner(db, nil)
	go func() {
		out, _ := r.Start(ctx, ag, "go")
		done <- out
	}()
	<-reached
	cancel()
	out := <-done
	if out.Status != store.StatusInterrupted {
		t.Fatalf("the root after the stop: %+v", out)
	}
	sub.Models[core.Primary] = gatedModel{inner: sub.Models[core.Primary].(gatedModel).inner, gate: -1, reached: reached, calls: calls, mu: mu}
	out, err := shell.NewRunner(db, nil).Resume(context.Background(), ag, out.RunID)
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "parent done" {
		t.Fatalf("resumed: %+v %v", out, err)
	}
	runs, _ := db.ListRuns(context.Background(), store.Filter{})
	if len(runs) != 2 || notes != 1 || calls[1] != 1 || calls[2] != 2 {
		t.Fatalf("%d runs, the note ran %d times, child model calls %v", len(runs), notes, calls)
	}
}

// Two answerers race to answer a root paused on its child: one answer is
// taken, the other refused (busy or already answered), and the child's
// call is answered and its next model call made exactly once.
func TestRacingAnswersAcrossATree(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := treeAgents(t,
		[]string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"x"}}]}`, `{"text":"parent done"}`},
		[]string{`{"tool_calls":[{"id":"e1","name":"ask_person","arguments":{}}]}`, `{"text":"child done"}`})
	sub := ag.SubAgents["research"]
	mu := &sync.Mutex{}
	calls := map[int]int{}
	sub.Models[core.Primary] = gatedModel{inner: sub.Models[core.Primary], gate: -1, reached: make(chan struct{}, 1), calls: calls, mu: mu}
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusAwaitingToolResults {
		t.Fatalf("%+v %v", out, err)
	}
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			_, results[i] = shell.NewRunner(db, nil).Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "c1/e1", Output: "yes"}}})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		}
	}
	info, _ := db.Run(ctx, out.RunID)
	if ok != 1 || info.Status != store.StatusCompleted || calls[2] != 1 {
		t.Fatalf("%d answers taken (%v), root %s, the child's second model call made %d times", ok, results, info.Status, calls[2])
	}
}

// A child is started with no more budget than its root has left: with
// two tool calls allowed and one spent on the call that started it, a
// child that asks for two fails its budget, which the parent's model
// reads; with room left, the same child completes.
func TestSubAgentBudgetIsWhatTheRootHasLeft(t *testing.T) {
	for _, limit := range []int{2, 10} {
		db := openStore(t)
		ag := treeAgents(t,
			[]string{`{"tool_calls":[{"id":"c1","name":"research","arguments":{"task":"x"}}]}`, `{"text":"parent done"}`},
			[]string{`{"tool_calls":[{"id":"n1","name":"note","arguments":{"x":"a"}},{"id":"n2","name":"note","arguments":{"x":"b"}}]}`, `{"text":"child done"}`})
		sub := ag.SubAgents["research"]
		sub.Config.Tools = []core.Tool{{Name: "note", Parameters: json.RawMessage(anyArgs)}}
		sub.Tools["note"] = fnTool{spec: sub.Config.Tools[0], run: func(_ context.Context, c core.ToolCall) core.ToolResult {
			return core.ToolResult{CallID: c.ID, Output: "noted"}
		}}
		ag.Config.Budget = core.Budget{MaxToolCalls: limit}
		out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "go")
		if err != nil || out.Status != store.StatusCompleted {
			t.Fatalf("limit %d: %+v %v", limit, out, err)
		}
		child, _ := db.LoadLatest(context.Background(), shell.ChildID(out.RunID, "c1"))
		failedBudget := child.State.Failure != nil && child.State.Failure.Code == core.FailBudget
		if failedBudget != (limit == 2) {
			t.Fatalf("limit %d: the child ended %s %+v", limit, child.State.Phase, child.State.Failure)
		}
		rec, _ := db.LoadLatest(context.Background(), out.RunID)
		if limit == 10 && rec.State.Counters.ToolCalls != 3 {
			t.Fatalf("the root counts its call and the child's two: %d", rec.State.Counters.ToolCalls)
		}
	}
}

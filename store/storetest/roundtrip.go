package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"pgregory.net/rapid"
)

// testRoundTrip: for generated runs (messages growing append-only, actions
// and results of every kind), the state loaded at every step equals byte
// for byte the state saved, and so do the actions and results; LoadLatest,
// Steps and StepsFrom agree.
func testRoundTrip(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		id := fmt.Sprintf("run-%d", runs)
		var log []core.Message
		for i, n := 0, rapid.IntRange(0, 3).Draw(t, "initial"); i < n; i++ {
			log = append(log, genMessage(t, fmt.Sprintf("m%d", len(log))))
		}
		initial := genHead(t, "head0")
		initial.Messages = log[:len(log):len(log)]
		if len(log) == 0 {
			initial.Messages = nil
		}
		l, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "a", Input: genText(t, "input"), Initial: initial, Owner: "test/1/x", LeaseTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		type saved struct {
			st core.State
			a  core.Action
			r  core.Result
		}
		want := []saved{{st: initial}}
		steps := rapid.IntRange(0, 12).Draw(t, "steps")
		for seq := 1; seq <= steps; seq++ {
			for i, n := 0, rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("add%d", seq)); i < n; i++ {
				log = append(log, genMessage(t, fmt.Sprintf("m%d", len(log))))
			}
			st := genHead(t, fmt.Sprintf("head%d", seq))
			if len(log) > 0 {
				st.Messages = log[:len(log):len(log)]
			}
			var a core.Action
			if seq == steps && rapid.Bool().Draw(t, "ends") {
				a = endAction(rapid.SampledFrom([]string{"complete", "fail"}).Draw(t, "end"), st)
			} else {
				a = genAction(t, fmt.Sprintf("action%d", seq), st)
			}
			r := genResult(t, fmt.Sprintf("result%d", seq))
			if err := s.Checkpoint(ctx, l, store.Checkpoint{Seq: seq, Result: r, Action: a}); err != nil {
				t.Fatalf("checkpoint %d: %v", seq, err)
			}
			want = append(want, saved{st: a.Next(), a: a, r: r})
		}
		same := func(what string, rec store.StepRecord, seq int) {
			w := want[seq]
			if rec.Seq != seq {
				t.Fatalf("%s: seq %d, want %d", what, rec.Seq, seq)
			}
			if encoded(t, rec.Action, rec.State, rec.Result) != encoded(t, w.a, w.st, w.r) {
				t.Fatalf("%s: step %d differs from what was saved", what, seq)
			}
			if w.a != nil && encoded(t, nil, rec.Action.Next(), nil) != encoded(t, nil, w.st, nil) {
				t.Fatalf("%s: step %d: the action's Next() is not the state", what, seq)
			}
		}
		for seq := range want {
			rec, err := s.LoadStep(ctx, id, seq)
			if err != nil {
				t.Fatal(err)
			}
			same("LoadStep", rec, seq)
		}
		last, err := s.LoadLatest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		same("LoadLatest", last, len(want)-1)
		n := 0
		if err := s.Steps(ctx, id, func(rec store.StepRecord) error {
			same("Steps", rec, n)
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Fatalf("Steps visited %d steps, want %d", n, len(want))
		}
		from := rapid.IntRange(0, steps+1).Draw(t, "from")
		n = from
		if err := s.StepsFrom(ctx, id, from, func(rec store.StepRecord) error {
			same("StepsFrom", rec, n)
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != max(from, len(want)) {
			t.Fatalf("StepsFrom(%d) ended at %d, want %d", from, n, len(want))
		}
		info, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.LastSeq != steps || info.Steps != steps+1 {
			t.Fatalf("run info: last seq %d, steps %d; want %d, %d", info.LastSeq, info.Steps, steps, steps+1)
		}
		if w := want[len(want)-1]; w.a != nil && info.Status != store.StatusOf(w.a) {
			t.Fatalf("status %s, want %s", info.Status, store.StatusOf(w.a))
		}
	})
}

// endAction ends a run on st: "complete" or "fail".
func endAction(kind string, st core.State) core.Action {
	st.Pending = nil
	if kind == "complete" {
		st.Phase, st.Answer = core.PhaseDone, "the answer"
		return core.Complete{Answer: "the answer", ToolsUsed: []string{"search"}, State: st}
	}
	st.Phase = core.PhaseFailed
	st.Failure = &core.Failure{Code: core.FailMaxSteps, Reason: "too many steps"}
	return core.Fail{Code: core.FailMaxSteps, Reason: "too many steps", State: st}
}

// Generators for rapid.

func genText(t *rapid.T, label string) string {
	return rapid.StringN(0, 40, -1).Draw(t, label)
}

func genCall(t *rapid.T, label string) core.ToolCall {
	return core.ToolCall{
		ID:   rapid.StringMatching(`[a-z0-9_]{0,8}`).Draw(t, label+".id"),
		Name: rapid.StringMatching(`[a-z_]{1,8}`).Draw(t, label+".name"),
		Args: rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, label+".args"),
	}
}

func genMessage(t *rapid.T, label string) core.Message {
	m := core.Message{
		Role:    rapid.SampledFrom([]core.Role{core.RoleSystem, core.RoleUser, core.RoleAssistant, core.RoleTool, ""}).Draw(t, label+".role"),
		Content: genText(t, label+".content"),
	}
	for i, n := 0, rapid.IntRange(0, 2).Draw(t, label+".calls"); i < n; i++ {
		m.Calls = append(m.Calls, genCall(t, fmt.Sprintf("%s.call%d", label, i)))
	}
	if rapid.Bool().Draw(t, label+".answers") {
		m.CallID = genText(t, label+".call_id")
		m.Name = genText(t, label+".name")
	}
	return m
}

// genHead draws the non-message parts of a state.
func genHead(t *rapid.T, label string) core.State {
	st := baseState(genText(t, label+".input"), nil)
	st.Counters = core.Counters{
		Steps:        rapid.IntRange(0, 1000).Draw(t, label+".steps"),
		PromptTokens: rapid.IntRange(0, 1<<40).Draw(t, label+".tokens"),
		LastCall:     genText(t, label+".last"),
	}
	st.ToolsUsed = rapid.SliceOfN(rapid.StringMatching(`[a-z]{1,6}`), 0, 3).Draw(t, label+".tools")
	if len(st.ToolsUsed) == 0 {
		st.ToolsUsed = nil
	}
	if rapid.Bool().Draw(t, label+".escalating") {
		st.Phase, st.Escalation = core.PhaseEscalate, genText(t, label+".why")
	}
	return st
}

// genAction draws a non-final action of any kind around st.
func genAction(t *rapid.T, label string, st core.State) core.Action {
	switch rapid.SampledFrom([]string{"model", "helper", "tools", "external", "memory_search", "memory_create", "memory_traverse"}).Draw(t, label+".kind") {
	case "helper":
		st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Helper}
		return core.RequestModelCall{Role: core.Helper, Messages: []core.Message{genMessage(t, label+".helper_msg")}, State: st}
	case "tools":
		call := core.ToolCall{ID: "c1", Name: "search", Args: []byte(`{"q":"x"}`)}
		st.Phase = core.PhaseTools
		st.Turn = &core.Turn{Calls: []core.ToolCall{call}, Results: make([]core.ToolResult, 1)}
		st.Pending = &core.Pending{Kind: core.PendingTools, CallIDs: []string{"c1"}}
		return core.RequestToolCalls{Calls: []core.ToolCall{call}, State: st}
	case "external":
		call := core.ToolCall{ID: "e1", Name: "ask_user", Args: []byte(`{}`)}
		st.Phase = core.PhaseTools
		st.Turn = &core.Turn{Calls: []core.ToolCall{call}, Results: make([]core.ToolResult, 1)}
		st.Pending = &core.Pending{Kind: core.PendingExternal, CallIDs: []string{"e1"}}
		return core.RequestExternalToolCalls{Calls: []core.ToolCall{call}, State: st}
	case "memory_search":
		st.Pending = &core.Pending{Kind: core.PendingMemorySearch}
		return core.RequestMemorySearch{Namespace: "ns", Query: genText(t, label+".query"), Limit: 5, State: st}
	case "memory_create":
		st.Pending = &core.Pending{Kind: core.PendingMemoryCreate, CallIDs: []string{"m1"}}
		return core.RequestMemoryCreate{CallID: "m1", Namespace: "ns",
			Entities: []core.Entity{{Name: genText(t, label+".entity"), Observations: []string{genText(t, label+".obs")}}}, State: st}
	case "memory_traverse":
		st.Pending = &core.Pending{Kind: core.PendingMemoryTraverse, CallIDs: []string{"m2"}}
		return core.RequestMemoryTraverse{CallID: "m2", Namespace: "ns", From: genText(t, label+".from"), Depth: 2, State: st}
	default:
		st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
		return core.RequestModelCall{Role: core.Primary, Messages: st.Messages, State: st}
	}
}

func genResult(t *rapid.T, label string) core.Result {
	switch rapid.IntRange(0, 6).Draw(t, label+".kind") {
	case 0:
		return nil
	case 1:
		return core.ModelReply{Text: genText(t, label+".text"), FinishReason: "stop",
			Calls: []core.NativeCall{{ID: "n1", Name: "search", Arguments: genText(t, label+".args")}}}
	case 2:
		return core.ToolResults{Results: []core.ToolResult{{CallID: "c1", Output: genText(t, label+".out")}, {CallID: "c2", Error: "boom"}}}
	case 3:
		return core.MemoryHits{Hits: []core.MemoryHit{{Entity: core.Entity{Name: genText(t, label+".hit")}, Score: 1.5}}}
	case 4:
		return core.MemoryCreated{Entities: []string{"a"}, Relations: 2}
	case 5:
		return core.MemoryTraversed{Entities: []core.Entity{{Name: "a"}}, Relations: []core.Relation{{From: "a", To: "b", Type: "knows"}}}
	default:
		return core.Cancelled{Reason: genText(t, label+".reason")}
	}
}

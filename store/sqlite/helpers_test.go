package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// openTest opens a fresh store in a temporary directory, closed at the end
// of the test, with a clock that ticks one millisecond per reading.
func openTest(t testing.TB) *SQLite {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "test.db"), &Options{Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fakeClock returns a deterministic clock that advances one millisecond
// per reading; safe for concurrent use.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func encState(t tb, st core.State) []byte {
	t.Helper()
	b, err := core.EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encAction(t tb, a core.Action) []byte {
	t.Helper()
	if a == nil {
		return nil
	}
	b, err := core.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encResult(t tb, r core.Result) []byte {
	t.Helper()
	if r == nil {
		return nil
	}
	b, err := core.EncodeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// baseState is a valid state in phase model holding msgs.
func baseState(input string, msgs []core.Message) core.State {
	return core.State{Version: core.StateVersion, Request: core.Request{Input: input}, Phase: core.PhaseModel, Messages: msgs}
}

// withAction wraps st in an action of the given kind.
func withAction(kind string, st core.State) core.Action {
	switch kind {
	case "complete":
		st.Phase, st.Pending, st.Answer = core.PhaseDone, nil, "the answer"
		return core.Complete{Answer: "the answer", ToolsUsed: []string{"search"}, State: st}
	case "fail":
		st.Phase, st.Pending = core.PhaseFailed, nil
		st.Failure = &core.Failure{Code: core.FailMaxSteps, Reason: "too many steps"}
		return core.Fail{Code: core.FailMaxSteps, Reason: "too many steps", State: st}
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
	default:
		st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
		return core.RequestModelCall{Role: core.Primary, Messages: st.Messages, State: st}
	}
}

// newRun creates a run holding one system and one user message.
func newRun(t testing.TB, s *SQLite, id string) core.State {
	t.Helper()
	st := baseState("question "+id, []core.Message{
		{Role: core.RoleSystem, Content: "be brief"},
		{Role: core.RoleUser, Content: "question " + id},
	})
	if _, err := s.CreateRun(context.Background(), store.NewRun{ID: id, Agent: "agent", ConfigHash: "h", Config: []byte(`{"name":"agent"}`), Input: "question " + id, Initial: st}); err != nil {
		t.Fatal(err)
	}
	return st
}

// turnStep is step seq of a synthetic run whose log starts with log: odd
// steps ask for tools after an assistant message, even steps ask the model
// again after the tool's answer. It returns the checkpoint and the longer log.
func turnStep(log []core.Message, seq int, payload int) (store.Checkpoint, []core.Message) {
	var res core.Result
	var kind string
	if seq%2 == 1 {
		log = append(log, core.Message{Role: core.RoleAssistant, Content: fmt.Sprintf("step %d: let me search", seq),
			Calls: []core.ToolCall{{ID: fmt.Sprintf("c%d", seq), Name: "search", Args: []byte(fmt.Sprintf(`{"q":"topic %d"}`, seq))}}})
		res = core.ModelReply{Text: "let me search", Usage: core.Usage{PromptTokens: 100 + seq, CompletionTokens: 10}}
		kind = "tools"
	} else {
		out := fmt.Sprintf("result of step %d: ", seq)
		out += strings.Repeat("x", max(0, payload-len(out)))
		log = append(log, core.Message{Role: core.RoleTool, CallID: fmt.Sprintf("c%d", seq-1), Name: "search", Content: out})
		res = core.ToolResults{Results: []core.ToolResult{{CallID: fmt.Sprintf("c%d", seq-1), Output: out}}}
		kind = "model"
	}
	st := baseState("question", log[:len(log):len(log)])
	st.Counters = core.Counters{Steps: seq, ModelCalls: seq / 2, Bytes: 100 * seq}
	return store.Checkpoint{Seq: seq, Result: res, Action: withAction(kind, st)}, log
}

// sameStep checks that a loaded record equals, byte for byte, what was saved.
func sameStep(t tb, rec store.StepRecord, seq int, st core.State, a core.Action, r core.Result) {
	t.Helper()
	if rec.Seq != seq {
		t.Fatalf("seq %d, want %d", rec.Seq, seq)
	}
	if got, want := encState(t, rec.State), encState(t, st); !bytes.Equal(got, want) {
		t.Fatalf("step %d: state differs:\n got %x\nwant %x", seq, got, want)
	}
	if got, want := encAction(t, rec.Action), encAction(t, a); !bytes.Equal(got, want) {
		t.Fatalf("step %d: action differs:\n got %x\nwant %x", seq, got, want)
	}
	if a != nil && !bytes.Equal(encState(t, rec.Action.Next()), encState(t, st)) {
		t.Fatalf("step %d: the action's Next() is not the state", seq)
	}
	if got, want := encResult(t, rec.Result), encResult(t, r); !bytes.Equal(got, want) {
		t.Fatalf("step %d: result differs:\n got %x\nwant %x", seq, got, want)
	}
}

// testLeases are the leases the tests of this package hold, by store and run.
var testLeases sync.Map // leaseKey -> store.Lease

type leaseKey struct {
	s  *SQLite
	id string
}

// leaseOf returns a lease on run id through s for a test, acquiring it the
// first time and taking it over from any other holder: the tests that
// predate leases write as the one driver of their runs (storetest
// tests leases themselves).
func leaseOf(t tb, s *SQLite, id string) store.Lease {
	t.Helper()
	k := leaseKey{s, id}
	if l, ok := testLeases.Load(k); ok {
		return l.(store.Lease)
	}
	ctx := context.Background()
	l, err := s.Acquire(ctx, id, store.LeaseRequest{Owner: "test/1/x", TTL: time.Hour})
	if busy, ok := errors.AsType[*store.BusyError](err); ok {
		l, err = s.Acquire(ctx, id, store.LeaseRequest{Owner: "test/1/x", TTL: time.Hour, TakeOver: &busy.Holder})
	}
	if err != nil {
		t.Fatalf("lease of %s: %v", id, err)
	}
	testLeases.Store(k, l)
	return l
}

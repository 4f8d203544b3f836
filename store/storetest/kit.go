package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The helpers of the cases that drive runs step by step with turnStep, and
// hold their leases through leaseOf.

// stillClock is a clock that moves only by hand: every reading is the
// same until add.
type stillClock struct{ ns atomic.Int64 }

func newStillClock() *stillClock {
	c := &stillClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *stillClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *stillClock) add(d time.Duration) { c.ns.Add(int64(d)) }

func encState(t fataler, st core.State) []byte {
	t.Helper()
	b, err := core.EncodeState(st)
	must(t, err)
	return b
}

func encAction(t fataler, a core.Action) []byte {
	t.Helper()
	if a == nil {
		return nil
	}
	b, err := core.EncodeAction(a)
	must(t, err)
	return b
}

func encResult(t fataler, r core.Result) []byte {
	t.Helper()
	if r == nil {
		return nil
	}
	b, err := core.EncodeResult(r)
	must(t, err)
	return b
}

// WithAction wraps st in an action of the given kind: complete, fail,
// tools, external or (anything else) model. A backend's own tests build
// synthetic steps with it, as the suite does.
func WithAction(kind string, st core.State) core.Action {
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

// RunCreator is what NewRun needs of a store.
type RunCreator interface {
	CreateRun(ctx context.Context, r store.NewRun) (store.Lease, error)
}

// NewRun creates run id, held by no one, holding one system and one user
// message, and returns its first state.
func NewRun(t testing.TB, s RunCreator, id string) core.State {
	t.Helper()
	st := initial(id)
	if _, err := s.CreateRun(context.Background(), store.NewRun{ID: id, Agent: "agent", ConfigHash: "h", Config: []byte(`{"name":"agent"}`), Input: "question " + id, Initial: st}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TurnStep is step seq of a synthetic run whose log starts with log: odd
// steps ask for tools after an assistant message, even steps ask the model
// again after the tool's answer of payload bytes. It returns the
// checkpoint and the longer log.
func TurnStep(log []core.Message, seq int, payload int) (store.Checkpoint, []core.Message) {
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
	st := BaseState("question", log[:len(log):len(log)])
	st.Counters = core.Counters{Steps: seq, ModelCalls: seq / 2, Bytes: 100 * seq}
	return store.Checkpoint{Seq: seq, Result: res, Action: WithAction(kind, st)}, log
}

// longRun stores run "r" of n steps of turnStep in a fresh store.
func longRun(t *testing.T, h Harness, n int) store.Store {
	t.Helper()
	s := open(t, h, nil)
	log := newRun(t, s, "r").Messages
	for seq := 1; seq <= n; seq++ {
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 200)
		must(t, s.Checkpoint(context.Background(), leaseOf(t, s, "r"), cp))
	}
	return s
}

// sameStep checks that a loaded record equals, byte for byte, what was
// saved.
func sameStep(t fataler, rec store.StepRecord, seq int, st core.State, a core.Action, r core.Result) {
	t.Helper()
	if rec.Seq != seq {
		t.Fatal(fmt.Sprintf("seq %d, want %d", rec.Seq, seq))
	}
	if got, want := encState(t, rec.State), encState(t, st); !bytes.Equal(got, want) {
		t.Fatal(fmt.Sprintf("step %d: state differs:\n got %x\nwant %x", seq, got, want))
	}
	if got, want := encAction(t, rec.Action), encAction(t, a); !bytes.Equal(got, want) {
		t.Fatal(fmt.Sprintf("step %d: action differs:\n got %x\nwant %x", seq, got, want))
	}
	if a != nil && !bytes.Equal(encState(t, rec.Action.Next()), encState(t, st)) {
		t.Fatal(fmt.Sprintf("step %d: the action's Next() is not the state", seq))
	}
	if got, want := encResult(t, rec.Result), encResult(t, r); !bytes.Equal(got, want) {
		t.Fatal(fmt.Sprintf("step %d: result differs:\n got %x\nwant %x", seq, got, want))
	}
}

// leases are the leases the cases hold through leaseOf, by store and run.
var leases sync.Map // leaseKey -> store.Lease

type leaseKey struct {
	s  LeaseAcquirer
	id string
}

// LeaseAcquirer is what LeaseOf needs of a store.
type LeaseAcquirer interface {
	Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error)
}

// LeaseOf returns a lease on run id through s, acquiring it the first time
// and taking it over from any other holder, then the same lease again: for
// tests (the suite's and a backend's own) that write as the one driver of
// their runs, leases being tested elsewhere.
func LeaseOf(t interface {
	Helper()
	Fatal(args ...any)
}, s LeaseAcquirer, id string) store.Lease {
	t.Helper()
	k := leaseKey{s, id}
	if l, ok := leases.Load(k); ok {
		return l.(store.Lease)
	}
	ctx := context.Background()
	l, err := s.Acquire(ctx, id, store.LeaseRequest{Owner: "test/1/x", TTL: time.Hour})
	if busy, ok := errors.AsType[*store.BusyError](err); ok {
		l, err = s.Acquire(ctx, id, store.LeaseRequest{Owner: "test/1/x", TTL: time.Hour, TakeOver: &busy.Holder})
	}
	if err != nil {
		t.Fatal(fmt.Sprintf("lease of %s: %v", id, err))
	}
	leases.Store(k, l)
	return l
}

func leaseOf(t fataler, s store.Store, id string) store.Lease { t.Helper(); return LeaseOf(t, s, id) }

// forgetLease drops the lease of run id through s that leaseOf holds
// (after another store took the run over).
func forgetLease(s store.Store, id string) { leases.Delete(leaseKey{s, id}) }

// idle checks, when h can tell, that s holds no write half done.
func idle(t *testing.T, h Harness, s store.Store) {
	t.Helper()
	if h.Idle != nil && !h.Idle(t, s) {
		t.Fatal("a failed write left a transaction open")
	}
}

// remembers checks, when h can tell, whether s holds run id's tail.
func remembers(t *testing.T, h Harness, s store.Store, id string, want bool) {
	t.Helper()
	if h.Remembers != nil && h.Remembers(s, id) != want {
		t.Fatalf("the store remembers run %s's tail: %v, want %v", id, !want, want)
	}
}

// dump is h.Dump of s, or nil without one.
func dump(t *testing.T, h Harness, s store.Store) []byte {
	t.Helper()
	if h.Dump == nil {
		return nil
	}
	return h.Dump(t, s)
}

// The suite's own names for the exported kit.
var (
	withAction = WithAction
	turnStep   = TurnStep
	baseState  = BaseState
)

func newRun(t *testing.T, s store.Store, id string) core.State { t.Helper(); return NewRun(t, s, id) }

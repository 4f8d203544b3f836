package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The tests need a PostgreSQL server: STEPWISE_TEST_POSTGRES, or the
// default URL (defaultTestURL). Without one they skip, saying so loudly,
// unless STEPWISE_REQUIRE_POSTGRES=1, which makes them fail. Each test
// works in a schema of its own, dropped when it ends, so tests run in
// parallel and leave nothing behind.

var server struct {
	once sync.Once
	url  string
	ok   bool
	why  string
}

func checkServer() {
	server.once.Do(func() { server.url, server.ok, server.why = TestURL() })
}

// required reports whether a missing server fails the tests.
func required() bool { return os.Getenv("STEPWISE_REQUIRE_POSTGRES") == "1" }

func unreachable() string {
	return fmt.Sprintf("no PostgreSQL server at %s (%s). To run the store/postgres tests, start one or set "+
		"STEPWISE_TEST_POSTGRES to the URL of one (a database the tests may create schemas in); "+
		"set STEPWISE_REQUIRE_POSTGRES=1 to make a missing server fail the tests", server.url, server.why)
}

func TestMain(m *testing.M) {
	checkServer()
	if !server.ok && !required() {
		bar := strings.Repeat("!", 78)
		fmt.Fprintf(os.Stderr, "%s\nSKIPPING store/postgres tests: %s\n%s\n", bar, unreachable(), bar)
	}
	code := m.Run()
	for _, cleanup := range benchCleanups {
		if err := cleanup(); err != nil {
			fmt.Fprintln(os.Stderr, "drop a benchmark's schema:", err)
		}
	}
	os.Exit(code)
}

// serverURL returns the test server's URL, or skips (fails, when required)
// the test.
func serverURL(t testing.TB) string {
	t.Helper()
	checkServer()
	if !server.ok {
		if required() {
			t.Fatal("STEPWISE_REQUIRE_POSTGRES=1: " + unreachable())
		}
		t.Skip("SKIPPED: " + unreachable())
	}
	return server.url
}

// openTest opens a store in a fresh schema, dropped at the end of the
// test, with a clock that ticks one millisecond per reading.
func openTest(t testing.TB) *Postgres { return openWith(t, &Options{Now: fakeClock()}) }

// openWith opens a store in a fresh schema with options (their Schema is
// the fresh one's).
func openWith(t testing.TB, o *Options) *Postgres {
	t.Helper()
	url := serverURL(t)
	ctx := context.Background()
	s, cleanup, err := OpenTestSchemaOptions(ctx, url, t.Name(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cleanup(); err != nil {
			t.Errorf("drop the test's schema: %v", err)
		}
	})
	return s
}

// reopen opens another store on s's schema, as another process would,
// closed at the end of the test.
func reopen(t testing.TB, s *Postgres, o *Options) *Postgres {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.Schema = s.Schema()
	other, err := Open(context.Background(), serverURL(t), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// exec runs SQL on the store's database (for tests that damage it).
func exec(t testing.TB, s *Postgres, sql string, args ...any) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// fakeClock returns a deterministic clock that advances one millisecond
// per reading; safe for concurrent use.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// manualClock is a clock the test moves by hand.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *manualClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *manualClock) add(d time.Duration) { c.ns.Add(int64(d)) }

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

// runStore is what newRun needs of a store (ours, or SQLite's in the tests
// that compare them).
type runStore interface {
	CreateRun(ctx context.Context, r store.NewRun) (store.Lease, error)
}

// newRun creates a run holding one system and one user message.
func newRun(t testing.TB, s runStore, id string) core.State {
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

// synthInitial is the initial state of the synthetic runs of these tests.
func synthInitial(id string) core.State {
	return baseState("question "+id, []core.Message{
		{Role: core.RoleSystem, Content: "be brief"},
		{Role: core.RoleUser, Content: "question " + id},
	})
}

// synth generates the checkpoints of the synthetic run id in order.
type synth struct {
	log []core.Message
	seq int
}

func newSynth(id string) *synth { return &synth{log: synthInitial(id).Messages} }

func (g *synth) next() store.Checkpoint {
	g.seq++
	var cp store.Checkpoint
	cp, g.log = turnStep(g.log, g.seq, 200)
	return cp
}

// leases are the leases the tests hold, by store and run.
var leases sync.Map // leaseKey -> store.Lease

type leaseKey struct {
	s  any
	id string
}

// leaseStore is what leaseOf needs of a store.
type leaseStore interface {
	Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error)
}

// leaseOf returns a lease on run id through s for a test, acquiring it the
// first time and taking it over from any other holder: the tests that are
// not about leases write as the one driver of their runs.
func leaseOf(t tb, s leaseStore, id string) store.Lease {
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
		t.Fatalf("lease of %s: %v", id, err)
	}
	leases.Store(k, l)
	return l
}

// flip inverts one byte (at, modulo its length) of a bytea column of the
// row of table where matches, leaving its checksum as it is.
func flip(t *testing.T, s *Postgres, table, column, where string, at int) {
	t.Helper()
	ctx := context.Background()
	var b []byte
	if err := s.pool.QueryRow(ctx, `SELECT `+column+` FROM `+table+` WHERE `+where).Scan(&b); err != nil {
		t.Fatal(err)
	}
	b[at%len(b)] ^= 0x20
	exec(t, s, `UPDATE `+table+` SET `+column+` = $1 WHERE `+where, b)
}

// rkOf is the run's key.
func rkOf(t testing.TB, s *Postgres, id string) int64 {
	t.Helper()
	var rk int64
	if err := s.pool.QueryRow(context.Background(), `SELECT rk FROM runs WHERE id = $1`, id).Scan(&rk); err != nil {
		t.Fatal(err)
	}
	return rk
}

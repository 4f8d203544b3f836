package shell_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
	"github.com/stepwise-agent/stepwise/store/sqlite"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

type lookupArgs struct {
	Q string `json:"q"`
}

// counted is an idempotent Go tool "lookup" that counts its runs per
// query; the query "fail" fails.
type counted struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *counted) tool() *shell.GoTool {
	c.runs = map[string]int{}
	t := shell.NewTool("lookup", "Look a thing up.", func(ctx context.Context, a lookupArgs) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.runs[a.Q]++
		switch a.Q {
		case "fail":
			return "", errors.New("lookup failed")
		case "key":
			return "the key is sk-cache-0123456789", nil
		}
		return fmt.Sprintf("%s, looked up (run %d)", a.Q, c.runs[a.Q]), nil
	})
	t.Idempotent = true
	return t
}

func (c *counted) count(q string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[q]
}

// cachingAgent is an agent named name with lookup, cached by p, and the
// external tool approve, answering from lines.
func cachingAgent(t *testing.T, name string, c *counted, p shell.CachePolicy, lines ...string) *shell.Agent {
	t.Helper()
	reg := shell.NewRegistry()
	if err := reg.Internal(c.tool(), &shell.ToolSettings{Cache: &p}); err != nil {
		t.Fatal(err)
	}
	if err := reg.External(external("approve")); err != nil {
		t.Fatal(err)
	}
	cfg := core.DefaultConfig()
	cfg.Name = name
	ag, err := reg.Agent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ag.Models[core.Primary] = scripted(t, lines...)
	ag.Source = []byte(`{}`)
	return ag
}

func lookupCall(id, q string) string {
	return fmt.Sprintf(`{"id":%q,"name":"lookup","arguments":{"q":%q}}`, id, q)
}

// resultsOf is every tool result the run recorded, by call id.
func resultsOf(t *testing.T, db shell.Store, runID string) map[string]core.ToolResult {
	t.Helper()
	out := map[string]core.ToolResult{}
	err := db.Steps(context.Background(), runID, func(rec store.StepRecord) error {
		if res, ok := rec.Result.(core.ToolResults); ok {
			for _, r := range res.Results {
				out[r.CallID] = r
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCacheWithinARun: a call of a tool cached for the run with arguments
// seen before is answered from the earlier result, marked cached, without
// running the tool: in the same turn's batch and after the run paused for
// an external tool and was resumed by another drive. Failed results are
// not cached. The recorded run replays identically, and its description
// says which results were cached.
func TestCacheWithinARun(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	var c counted
	ag := cachingAgent(t, "cacher", &c, shell.CachePolicy{},
		`{"tool_calls":[`+lookupCall("l1", "lamp")+`,`+lookupCall("f1", "fail")+`]}`,
		`{"tool_calls":[`+lookupCall("l2", "lamp")+`,`+lookupCall("d1", "desk")+`,`+lookupCall("f2", "fail")+`]}`,
		`{"tool_calls":[{"id":"a1","name":"approve","arguments":{"x":"lamp"}}]}`,
		`{"tool_calls":[`+lookupCall("l3", "lamp")+`]}`,
		`{"text":"done"}`)
	var events bytes.Buffer
	r := shell.NewRunner(db, &shell.Options{Observer: observerFunc(func(e shell.Event) { events.WriteString(e.Text + "\n") })})
	out, err := r.Start(ctx, ag, "buy a lamp")
	if err != nil || out.Status != store.StatusAwaitingToolResults {
		t.Fatalf("%+v %v", out, err)
	}
	out, err = shell.NewRunner(db, nil).Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "a1", Output: "approved"}}})
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if c.count("lamp") != 1 || c.count("desk") != 1 || c.count("fail") != 2 {
		t.Fatalf("runs: %v", c.runs)
	}
	res := resultsOf(t, db, out.RunID)
	first := res["l1"]
	if first.Cached || first.Output != "lamp, looked up (run 1)" {
		t.Fatalf("l1 = %+v", first)
	}
	for _, id := range []string{"l2", "l3"} {
		if r := res[id]; !r.Cached || r.Output != first.Output || r.CallID != id {
			t.Fatalf("%s = %+v, want l1's output, cached", id, r)
		}
	}
	if res["d1"].Cached || res["f2"].Cached || !res["f2"].Failed() {
		t.Fatalf("d1 = %+v, f2 = %+v", res["d1"], res["f2"])
	}
	if !strings.Contains(events.String(), "lookup#l2 ok (23 bytes, cached)") {
		t.Fatalf("events:\n%s", events.String())
	}
	rep, err := shell.Replay(ctx, db, out.RunID, ag.Config)
	if err != nil || rep.Diverged != nil || rep.Steps != out.Steps {
		t.Fatalf("replay %+v %v", rep, err)
	}
	rec, _ := db.LoadStep(ctx, out.RunID, 5)
	if d := core.DescribeResult(rec.Result); !strings.Contains(d, `l2 ok (cached) "lamp, looked up (run 1)"`) {
		t.Fatalf("described as %s", d)
	}
}

// TestCacheAcrossRunsExpires runs TestCacheAcrossRuns on SQLite.
func TestCacheAcrossRunsExpires(t *testing.T) {
	clock := storetest.NewClock()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), &sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	testCacheAcrossRuns(t, db, clock)
	// What the tool wrote (a secret among it) is in the store redacted,
	// the cache included, and answers the second run.
	var c counted
	ag := cachingAgent(t, "leaky", &c, shell.CachePolicy{TTL: time.Hour},
		`{"tool_calls":[`+lookupCall("s1", "key")+`]}`, `{"text":"done"}`)
	ag.Secrets = []shell.Secret{{Name: "API_KEY", Value: "sk-cache-0123456789"}}
	for range 2 {
		if out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "go"); err != nil || out.Status != store.StatusCompleted {
			t.Fatalf("%+v %v", out, err)
		}
	}
	if c.count("key") != 1 {
		t.Fatalf("the second run ran the tool again: %v", c.runs)
	}
	db.Close()
	for _, f := range []string{db.Path(), db.Path() + "-wal"} {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte("sk-cache-0123456789")) {
			t.Fatalf("the secret is in %s", f)
		}
	}
}

// TestCacheAcrossRunsPostgres runs TestCacheAcrossRuns on PostgreSQL.
func TestCacheAcrossRunsPostgres(t *testing.T) {
	clock := storetest.NewClock()
	db, cleanup, err := postgres.OpenTestSchemaOptions(context.Background(), pgtest.URL(t), t.Name(), &postgres.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanup() })
	testCacheAcrossRuns(t, db, clock)
}

// testCacheAcrossRuns: a tool cached across runs answers a later run of
// the same agent from the store, until the entry expires by the store's
// clock; another agent, another version of the tool, or other arguments,
// do not share it.
func testCacheAcrossRuns(t *testing.T, db shell.Store, clock *storetest.Clock) {
	ctx := context.Background()
	var c counted
	runVersion := func(agent, version, q string) core.ToolResult {
		t.Helper()
		ag := cachingAgent(t, agent, &c, shell.CachePolicy{TTL: time.Hour, Version: version}, `{"tool_calls":[`+lookupCall("l1", q)+`]}`, `{"text":"done"}`)
		out, err := shell.NewRunner(db, nil).Start(ctx, ag, "look "+q)
		if err != nil || out.Status != store.StatusCompleted {
			t.Fatalf("%+v %v", out, err)
		}
		rep, err := shell.Replay(ctx, db, out.RunID, ag.Config)
		if err != nil || rep.Diverged != nil {
			t.Fatalf("replay %+v %v", rep, err)
		}
		return resultsOf(t, db, out.RunID)["l1"]
	}
	run := func(agent, q string) core.ToolResult { t.Helper(); return runVersion(agent, "v1", q) }
	first := run("cacher", "lamp")
	if first.Cached || first.Output != "lamp, looked up (run 1)" {
		t.Fatalf("first run: %+v", first)
	}
	check := func(what string, got core.ToolResult, cached bool, output string) {
		t.Helper()
		if got.Cached != cached || got.Output != output {
			t.Fatalf("%s: %+v, want cached %v, output %q", what, got, cached, output)
		}
	}
	// Each run builds its agent, and c.tool() starts the counts again: an
	// output says how many times the tool ran in its run.
	check("a second run", run("cacher", "lamp"), true, "lamp, looked up (run 1)")
	clock.Add(59 * time.Minute)
	check("a run before the expiry", run("cacher", "lamp"), true, "lamp, looked up (run 1)")
	check("other arguments", run("cacher", "desk"), false, "desk, looked up (run 1)")
	check("another agent", run("other", "lamp"), false, "lamp, looked up (run 1)")
	check("a changed tool (another version)", runVersion("cacher", "v2", "lamp"), false, "lamp, looked up (run 1)")
	check("a failure is not cached", run("cacher", "fail"), false, "")
	if c.count("fail") != 1 {
		t.Fatal("the failed lookup did not run")
	}
	check("a failure is not cached, again", run("cacher", "fail"), false, "")
	clock.Add(2 * time.Minute)
	again := run("cacher", "lamp")
	check("a run after the expiry", again, false, "lamp, looked up (run 1)")
	if c.count("lamp") != 1 {
		t.Fatal("the expired entry was used")
	}
	check("the run after it", run("cacher", "lamp"), true, "lamp, looked up (run 1)")
}

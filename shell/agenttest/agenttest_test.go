package agenttest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell/agenttest"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

const runs = "../../testdata/runs"

// The project's own golden runs: good recordings replay identically against
// the agent files they name and meet their assertions; bad-* recordings
// are caught diverging at their step.
func TestProjectGoldenRuns(t *testing.T) {
	out := agenttest.Run(t, runs)
	if len(out) < 6 {
		t.Fatalf("%d golden runs", len(out))
	}
	for _, o := range out {
		bad := strings.HasPrefix(filepath.Base(o.Name), "bad-")
		if want := map[bool]agenttest.Verdict{true: agenttest.Diverged, false: agenttest.Identical}[bad]; o.Verdict != want {
			t.Errorf("%s: %s, want %s", o.Name, o.Verdict, want)
		}
		if !bad && (o.Agent == nil || o.ExpectFile == "") {
			t.Errorf("%s: a good recording must name its agent file in its expectation file", o.Name)
		}
	}
}

// fakeT records what Run reports.
type fakeT struct {
	mu     sync.Mutex
	errors []string
	fatal  string
}

func (f *fakeT) Helper()                  {}
func (f *fakeT) Context() context.Context { return context.Background() }
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls agenttest.Run with a fakeT, as a test's goroutine would.
func run(dir string) *fakeT {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		agenttest.Run(f, dir)
	}()
	<-done
	return f
}

// golden writes a directory with multi-tool.json and the given expectation
// file text beside it (agent paths made absolute by the caller).
func golden(t *testing.T, expect string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	data, err := os.ReadFile(filepath.Join(runs, "multi-tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "multi-tool.json")
	os.WriteFile(file, data, 0o644)
	if expect != "" {
		os.WriteFile(filepath.Join(dir, "multi-tool"+agenttest.ExpectSuffix), []byte(expect), 0o644)
	}
	return dir, file
}

func agentFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(runs, "../agents", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPassingExpectations(t *testing.T) {
	dir, _ := golden(t, fmt.Sprintf(`agent = %q
status = "completed"
no_failure = true
answer = "The desk lamp and the monitor arm cost about 107 EUR together."
answer_contains = ["107 EUR", "desk lamp"]
tools_used = ["list_files", "read_file", "add"]
max_steps = 8
`, agentFile(t, "analyst.toml")))
	if f := run(dir); len(f.errors) > 0 || f.fatal != "" {
		t.Fatalf("errors %q, fatal %q", f.errors, f.fatal)
	}
}

// Each unmet expectation is reported on its own, naming the run's file and
// the assertion.
func TestFailingExpectationsNameTheRunAndTheAssertion(t *testing.T) {
	dir, file := golden(t, fmt.Sprintf(`agent = %q
status = "failed"
answer = "110 EUR"
answer_contains = ["108 EUR"]
tools_used = ["read_file"]
max_steps = 3
`, agentFile(t, "analyst.toml")))
	f := run(dir)
	want := []string{
		`status = "failed": the run is completed`,
		`answer = "110 EUR": the answer is "The desk lamp and the monitor arm cost about 107 EUR together."`,
		`answer_contains "108 EUR": the answer is "The desk lamp`,
		`tools_used = ["read_file"]: the run used ["list_files", "read_file", "add"]`,
		`max_steps = 3: the run took 8 steps`,
	}
	if len(f.errors) != len(want) {
		t.Fatalf("errors:\n%s", strings.Join(f.errors, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(f.errors[i], file+": "+w) {
			t.Errorf("error %d = %q, want it to start with %q", i, f.errors[i], file+": "+w)
		}
	}
}

// A change to the agent file the run names is caught at the step it
// changes, with the recorded and the replayed decision.
func TestAChangedAgentFileFailsItsGoldenRuns(t *testing.T) {
	orig := agentFile(t, "analyst.toml")
	text, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(text), `"../scripts/`, `"`+filepath.Dir(orig)+`/../scripts/`, 1)
	changed = strings.Replace(changed, `"../data"`, `"`+filepath.Dir(orig)+`/../data"`, 1)
	changed = strings.Replace(changed, `system_prompt = "`, `system_prompt = "Be brief. `, 1)
	agentPath := filepath.Join(t.TempDir(), "analyst.toml")
	os.WriteFile(agentPath, []byte(changed), 0o644)
	dir, file := golden(t, fmt.Sprintf("agent = %q\n", agentPath))
	f := run(dir)
	if len(f.errors) != 1 || !strings.HasPrefix(f.errors[0], file+": replay: diverged at step 1\n  recorded: model primary") ||
		!strings.Contains(f.errors[0], `replayed: system: "Be brief. `) {
		t.Fatalf("errors: %q", f.errors)
	}
	// Expected, the same divergence passes.
	os.WriteFile(filepath.Join(dir, "multi-tool"+agenttest.ExpectSuffix), []byte(fmt.Sprintf("agent = %q\ndiverges_at = 1\n", agentPath)), 0o644)
	if f := run(dir); len(f.errors) > 0 {
		t.Fatalf("errors: %q", f.errors)
	}
	os.WriteFile(filepath.Join(dir, "multi-tool"+agenttest.ExpectSuffix), []byte(fmt.Sprintf("agent = %q\ndiverges_at = 2\n", agentPath)), 0o644)
	if f := run(dir); len(f.errors) != 1 || !strings.HasPrefix(f.errors[0], file+": diverges_at = 2: the replay diverged at step 1") {
		t.Fatalf("errors: %q", f.errors)
	}
	os.WriteFile(filepath.Join(dir, "multi-tool"+agenttest.ExpectSuffix), []byte(fmt.Sprintf("agent = %q\ndiverges_at = 2\n", orig)), 0o644)
	if f := run(dir); len(f.errors) != 1 || f.errors[0] != file+": diverges_at = 2: the replay is identical" {
		t.Fatalf("errors: %q", f.errors)
	}
}

func TestUnreadableRunsAndBadExpectationFiles(t *testing.T) {
	dir, _ := golden(t, "")
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"format": "stepwise-run", "version": 1, "run": {`), 0o644)
	f := run(dir)
	if len(f.errors) != 1 || !strings.HasPrefix(f.errors[0], broken+": could not replay: ") {
		t.Fatalf("errors: %q", f.errors)
	}
	os.Remove(broken)
	for _, tc := range []struct{ name, text, want string }{
		{"multi-tool", "answr = \"x\"\n", `multi-tool.expect.toml:1:1: unknown key "answr"`},
		{"multi-tool", "max_steps = \"8\"\n", `multi-tool.expect.toml:1:`},
		{"multi-tool", "status = \"done\"\n", `status "done" is not a run status`},
		{"multi-tool", "agent = \"nope.toml\"\n", `multi-tool.expect.toml: agent: read agent`},
		{"orphan", "status = \"completed\"\n", `orphan.expect.toml: there is no run orphan.json beside it`},
	} {
		x := filepath.Join(dir, tc.name+agenttest.ExpectSuffix)
		os.WriteFile(x, []byte(tc.text), 0o644)
		if _, err := agenttest.LoadDir(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
		os.Remove(x)
	}
	if f := run(t.TempDir()); !strings.Contains(f.fatal, "no recorded runs") {
		t.Fatalf("an empty directory: %q", f.fatal)
	}
}

// Runs selected from a real SQLite store by status, agent and time, and
// replayed in parallel: the results come in the order given, the same
// at any parallelism.
func TestReplayFromAStore(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, _ := filepath.Glob(filepath.Join(runs, "*.json"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if _, err := db.Import(ctx, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(f agenttest.Filter) string {
		recs, err := agenttest.FromStore(ctx, db, f)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, r := range recs {
			s = append(s, r.RunID)
		}
		return strings.Join(s, " ")
	}
	if got := ids(agenttest.Filter{Statuses: []store.Status{store.StatusFailed}, Agent: "looper"}); got != "r20261121-204701-hnbkki7m2v bad-loop-limit" {
		t.Errorf("failed runs: %q", got)
	}
	if got := ids(agenttest.Filter{Statuses: []store.Status{store.StatusCompleted}, Agent: "looper"}); got != "" {
		t.Errorf("the looper's completed runs: %q", got)
	}
	if got := ids(agenttest.Filter{Agent: "analyst"}); got != "r20261121-204701-7bci76j5v4 bad-prompt" {
		t.Errorf("analyst's runs: %q", got)
	}
	if got := ids(agenttest.Filter{Since: time.Now()}); got != "" {
		t.Errorf("runs since now: %q", got)
	}
	all, err := agenttest.FromStore(ctx, db, agenttest.Filter{})
	if err != nil || len(all) != len(files) {
		t.Fatalf("%d runs, %v", len(all), err)
	}
	describe := func(rs []agenttest.Result) string {
		var b strings.Builder
		for _, r := range rs {
			fmt.Fprintf(&b, "%s %s %d", r.RunID, r.Verdict, r.Steps)
			if r.Divergence != nil {
				fmt.Fprintf(&b, " at %d", r.Divergence.Seq)
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	one := describe(agenttest.Replay(ctx, all, agenttest.Options{Store: db, Parallel: 1}))
	many := describe(agenttest.Replay(ctx, all, agenttest.Options{Store: db, Parallel: 4}))
	good := 0
	for _, f := range files {
		if !strings.HasPrefix(filepath.Base(f), "bad-") {
			good++
		}
	}
	if one != many || strings.Count(one, " identical ") != good || !strings.Contains(one, "bad-prompt diverged 1 at 1") ||
		!strings.Contains(one, "bad-loop-limit diverged 6 at 6") {
		t.Fatalf("parallel 1:\n%sparallel 4:\n%s", one, many)
	}
	// A corpus whose context ends reports the runs not reached as not
	// replayed, with the context's error.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, r := range agenttest.Replay(cancelled, all, agenttest.Options{Store: db}) {
		if r.Verdict != agenttest.Unreplayable || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("after cancel: %+v", r)
		}
	}
	// A run that is not there could not be replayed; the others still are.
	res := agenttest.Replay(ctx, append(all[:1:1], agenttest.Recording{RunID: "missing"}), agenttest.Options{Store: db})
	if res[0].Verdict != agenttest.Identical || res[1].Verdict != agenttest.Unreplayable || res[1].Name != "missing" {
		t.Fatalf("%+v", res)
	}
}

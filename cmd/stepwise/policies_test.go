package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inproc runs the CLI in this process, in the repository root's terms:
// paths in args starting with testdata/ are made relative to this package.
func inprocDB(t *testing.T, db string, args ...string) result {
	t.Helper()
	for i, a := range args {
		if strings.HasPrefix(a, "testdata/") {
			args[i] = filepath.Join("../..", a)
		}
	}
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		switch k {
		case "STEPWISE_DB":
			return db
		case "NO_COLOR":
			return "1"
		}
		return ""
	}}
	return result{e.main(args), out.String(), errb.String()}
}

// policyOutcome is run --json's output with what these tests read.
type policyOutcome struct {
	RunID     string   `json:"run_id"`
	Status    string   `json:"status"`
	Answer    string   `json:"answer"`
	ToolsUsed []string `json:"tools_used"`
	Sources   []string `json:"sources"`
	Failure   *struct {
		Code   string `json:"code"`
		Reason string `json:"reason"`
	} `json:"failure"`
}

func runJSONOutcome(t *testing.T, db, agent string) (policyOutcome, result) {
	t.Helper()
	r := inprocDB(t, db, "run", agent, "go", "--json")
	var o policyOutcome
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
		t.Fatalf("--json output %q: %v\n%s", r.stdout, err, r.stderr)
	}
	return o, r
}

// A primary model whose replies score low twice in a row (hedging, then
// the same reply again) is stuck: the helper is asked, and its plan gets
// the run to the answer.
func TestStuckPrimaryEscalatesAfterMaxRetries(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	o, r := runJSONOutcome(t, db, "testdata/agents/collaborate.toml")
	want(t, r, exitCompleted)
	if o.Answer != "100 C is 212 F." || strings.Join(o.ToolsUsed, ",") != "add" {
		t.Fatalf("outcome %+v", o)
	}
	show := inprocDB(t, db, "show", o.RunID)
	want(t, show, 0)
	for _, s := range []string{
		"Your reply does not read as a final answer: it scored 0.60 (hedging)",
		"model helper",
		"the model's last 2 replies scored below 0.70 (the last: 0.10 (hedging, repeated))",
	} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	if strings.Index(show.stdout, "model helper") < strings.Index(show.stdout, "it scored 0.60") {
		t.Errorf("the helper was asked before the second low reply:\n%s", show.stdout)
	}
	want(t, inprocDB(t, db, "replay", o.RunID), 0) // identical
}

// left, right, left, right: the model is told once (the second right is
// not run), and going round again fails the run.
func TestCycleToldOnceThenFailed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	o, r := runJSONOutcome(t, db, "testdata/agents/cycler.toml")
	want(t, r, exitFailed)
	if o.Failure == nil || o.Failure.Code != "cycle" || !strings.Contains(o.Failure.Reason, "cycle of 2 calls (left → right) 2 times in a row, after it had been told") {
		t.Fatalf("outcome %+v", o)
	}
	show := inprocDB(t, db, "show", o.RunID)
	if n := strings.Count(show.stdout, "your calls go round a cycle (left → right)"); n != 1 {
		t.Errorf("told %d times, want once:\n%s", n, show.stdout)
	}
	// m1, m2 and m3 ran; m4 closed the cycle and m5 went round again.
	for _, id := range []string{"m1", "m2", "m3"} {
		if !strings.Contains(show.stdout, "results "+id+" ok") {
			t.Errorf("%s did not run:\n%s", id, show.stdout)
		}
	}
	for _, id := range []string{"m4", "m5"} {
		if strings.Contains(show.stdout, "results "+id) {
			t.Errorf("%s ran:\n%s", id, show.stdout)
		}
	}
	want(t, inprocDB(t, db, "replay", o.RunID), 0) // identical
}

// max_turns = 2 with on_max_turns = "answer": after two turns the model is
// asked, without tools, for its final answer, and the run completes with it.
func TestMaxTurnsAnswerPolicy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	o, r := runJSONOutcome(t, db, "testdata/agents/turns.toml")
	want(t, r, exitCompleted)
	if o.Answer != "The cheapest item is the desk lamp." || strings.Join(o.ToolsUsed, ",") != "list_files,read_file" {
		t.Fatalf("outcome %+v", o)
	}
	show := inprocDB(t, db, "show", o.RunID)
	if !strings.Contains(show.stdout, "You have used all your turns (2)") {
		t.Errorf("show lacks the final request:\n%s", show.stdout)
	}
	// The same agent with the default policy fails at the limit.
	failing := filepath.Join(t.TempDir(), "turns.toml")
	writeAgent(t, "testdata/agents/turns.toml", failing, func(s string) string {
		return strings.Replace(strings.Replace(s, "on_max_turns = \"answer\"\n", "", 1), "../", repoPath("testdata")+"/", -1)
	})
	o, r = runJSONOutcome(t, db, failing)
	want(t, r, exitFailed)
	if o.Failure == nil || o.Failure.Code != "max_turns" {
		t.Fatalf("outcome %+v", o)
	}
}

// A cost budget: the second reply takes the cost past max_cost, its call is
// never requested, and the run fails naming the budget.
func TestBudgetExhaustedNamesTheBudget(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	o, r := runJSONOutcome(t, db, "testdata/agents/budget.toml")
	want(t, r, exitFailed)
	if o.Failure == nil || o.Failure.Code != "budget_exhausted" || o.Failure.Reason != "the run's budget is used up: max_cost is 0.002 and the run has spent 0.0032" {
		t.Fatalf("outcome %+v", o)
	}
	if strings.Join(o.ToolsUsed, ",") != "list_files" {
		t.Errorf("tools_used %v: read_file never ran", o.ToolsUsed)
	}
	plain := inprocDB(t, db, "run", "testdata/agents/budget.toml", "go")
	want(t, plain, exitFailed)
	if !strings.Contains(plain.stderr, "failed (budget_exhausted): the run's budget is used up: max_cost") {
		t.Errorf("stderr: %s", plain.stderr)
	}
	want(t, inprocDB(t, db, "replay", o.RunID), 0) // identical
}

// citations = "both": the answer ends with a tag per tool used and the
// sources the tools reported; --json has sources and tools_used.
func TestCitationsAppended(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	o, r := runJSONOutcome(t, db, "testdata/agents/cite.toml")
	want(t, r, exitCompleted)
	if o.Answer != "The desk lamp is the cheapest item.\n\n[source:read_file]\n\nSources: prices.txt" ||
		strings.Join(o.Sources, ",") != "prices.txt" || strings.Join(o.ToolsUsed, ",") != "read_file" {
		t.Fatalf("outcome %+v", o)
	}
	plain := inprocDB(t, db, "run", "testdata/agents/cite.toml", "go")
	want(t, plain, exitCompleted)
	if plain.stdout != "The desk lamp is the cheapest item.\n\n[source:read_file]\n\nSources: prices.txt\n" {
		t.Errorf("stdout %q", plain.stdout)
	}
}

// --json always has sources, empty when no tool reported one.
func TestRunJSONHasSources(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := inprocDB(t, db, "run", "testdata/agents/escalate.toml", "100 C in F?", "--json")
	want(t, r, exitCompleted)
	if !strings.Contains(r.stdout, `"sources":[]`) {
		t.Errorf("stdout %s", r.stdout)
	}
}

// repoPath is a path in the repository, absolute.
func repoPath(p string) string {
	abs, err := filepath.Abs(filepath.Join("../..", p))
	if err != nil {
		panic(err)
	}
	return abs
}

// writeAgent writes the agent file from (in the repository) to path to,
// edited.
func writeAgent(t *testing.T, from, to string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(repoPath(from))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/shell/agenttest"
)

// binary is the stepwise CLI built once for the end-to-end tests;
// mcpServer is the project's MCP test server, for the MCP tests.
var binary, mcpServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stepwise-cli-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "stepwise")
	mcpServer = filepath.Join(dir, "mcptestserver")
	for _, b := range [][2]string{{binary, "."}, {mcpServer, "../../internal/mcptest/cmd/mcptestserver"}} {
		build := exec.Command("go", "build", "-o", b[0], b[1])
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", b[1], err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the binary in the repository root with db as its database.
func cli(t *testing.T, db string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "STEPWISE_DB="+db, "NO_COLOR=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

func want(t *testing.T, r result, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, code, r.stdout, r.stderr)
	}
}

type outcome struct {
	RunID     string   `json:"run_id"`
	Status    string   `json:"status"`
	Answer    string   `json:"answer"`
	ToolsUsed []string `json:"tools_used"`
	Pending   []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"pending_tool_calls"`
	Steps int    `json:"steps"`
	Error string `json:"error"`
}

func decodeOutcome(t *testing.T, r result) outcome {
	t.Helper()
	var o outcome
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	return o
}

func TestRunPauseResumeWithJSONAndExitCodes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", "testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	o := decodeOutcome(t, r)
	if o.Status != "awaiting_tool_results" || len(o.Pending) != 1 || o.Pending[0].ID != "call_approve" || o.Pending[0].Name != "approve_purchase" ||
		string(o.Pending[0].Arguments) != `{"amount_eur":42.5,"item":"desk lamp"}` || o.Steps != 4 {
		t.Fatalf("paused outcome = %+v", o)
	}
	bad := cli(t, db, `[{"tool_call_id": "nope", "result": "x"}]`, "resume", o.RunID, "--results", "-")
	want(t, bad, exitUsage)
	if !strings.Contains(bad.stderr, `"nope"`) {
		t.Fatalf("unknown id not named: %s", bad.stderr)
	}
	r = cli(t, db, "", "resume", o.RunID, "--results", "testdata/results/approve.json", "--json")
	want(t, r, exitCompleted)
	o = decodeOutcome(t, r)
	if o.Status != "completed" || !strings.Contains(o.Answer, "desk lamp") || strings.Join(o.ToolsUsed, ",") != "read_file,approve_purchase" || len(o.Pending) != 0 {
		t.Fatalf("completed outcome = %+v", o)
	}
	want(t, cli(t, db, "", "replay", o.RunID), exitCompleted)
	show := cli(t, db, "", "show", o.RunID)
	want(t, show, 0)
	for _, s := range []string{"external call_approve approve_purchase", "results call_approve ok \"approved by Dana\"", "answer: Approved"} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	step := cli(t, db, "", "show", o.RunID, "--step", "3")
	want(t, step, 0)
	if !strings.Contains(step.stdout, "conversation:") || !strings.Contains(step.stdout, "desk lamp,42.50") {
		t.Errorf("show --step lacks the conversation:\n%s", step.stdout)
	}
	ls := cli(t, db, "", "ls", "--status", "completed", "--agent", "shopper")
	want(t, ls, 0)
	if !strings.Contains(ls.stdout, o.RunID) {
		t.Errorf("ls lacks the run:\n%s", ls.stdout)
	}
}

func TestFailedRunAndInputFromStdin(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "Weather in Oslo?\n", "run", "testdata/agents/looper.toml", "--json")
	want(t, r, exitFailed)
	o := decodeOutcome(t, r)
	if o.Status != "failed" || !strings.Contains(o.Error, "same arguments 3 times") {
		t.Fatalf("%+v", o)
	}
}

func TestUsageErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("name = \"x\"\nmodels = 3\n"), 0o644)
	for _, args := range [][]string{
		{"frobnicate"}, {"run"}, {"run", "testdata/agents/nope.toml", "x"}, {"run", bad, "x"},
		{"validate", bad}, {"resume", "no-such-run"}, {"fork", "x"}, {"ls", "--status", "weird"}, {"show", "no-such-run"},
		{"run", "--no-such-flag", "testdata/agents/coder.toml"},
	} {
		r := cli(t, db, "", args...)
		want(t, r, exitUsage, args...)
		if r.stderr == "" {
			t.Errorf("%v: no message", args)
		}
	}
}

func TestHelpVersionValidateTools(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	h := cli(t, db, "", "help")
	want(t, h, 0)
	for _, s := range []string{"Exit codes:", "3  the run is paused", "replay", "fork", "STEPWISE_DB"} {
		if !strings.Contains(h.stdout, s) {
			t.Errorf("help lacks %q", s)
		}
	}
	for name := range commands {
		r := cli(t, db, "", name, "--help")
		want(t, r, 0, name, "--help")
		if !strings.Contains(r.stdout, "usage: stepwise "+name) {
			t.Errorf("%s --help: %s", name, r.stdout)
		}
	}
	want(t, cli(t, db, "", "help", "fork"), 0)
	if v := cli(t, db, "", "version"); v.code != 0 || !strings.HasPrefix(v.stdout, "stepwise ") {
		t.Errorf("version: %+v", v)
	}
	v := cli(t, db, "", "validate", "testdata/agents/format-helpers.toml")
	want(t, v, 0)
	tl := cli(t, db, "", "tools", "testdata/agents/format-helpers.toml")
	want(t, tl, 0)
	if !strings.Contains(tl.stdout, "add(a: int, b: int)") || !strings.Contains(tl.stdout, "<helpers>") {
		t.Errorf("tools output lacks the helpers signature:\n%s", tl.stdout)
	}
}

func TestForkWithADifferentResult(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", "testdata/agents/format-native.toml", "add", "--json")
	want(t, r, 0)
	o := decodeOutcome(t, r)
	f := cli(t, db, `[{"tool_call_id": "a1", "result": "41"}]`, "fork", o.RunID, "--at", "2", "--result", "-", "--json")
	want(t, f, 0)
	fo := decodeOutcome(t, f)
	if fo.RunID == o.RunID || fo.Status != "completed" {
		t.Fatalf("fork = %+v", fo)
	}
	step := cli(t, db, "", "show", fo.RunID, "--step", "1")
	if !strings.Contains(step.stdout, "41") || !strings.Contains(cli(t, db, "", "show", fo.RunID).stdout, "forked from "+o.RunID+" at step 2") {
		t.Fatalf("fork does not carry the new result:\n%s", step.stdout)
	}
	// A different model reply at step 1, continued live on a new script.
	script := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(script, []byte(`{"text": "forked answer"}`+"\n"), 0o644)
	f = cli(t, db, `{"tool_calls": [{"id": "z", "name": "add", "arguments": {"a": 1, "b": 1}}]}`, "fork", o.RunID, "--at", "1", "--result", "-", "--script", script, "--json")
	want(t, f, 0)
	if fo = decodeOutcome(t, f); fo.Answer != "forked answer" {
		t.Fatalf("fork on a script = %+v", fo)
	}
	want(t, cli(t, db, "", "fork", o.RunID, "--at", "4"), exitUsage) // the last step has ended
}

func TestExportImportRoundTrip(t *testing.T) {
	db := filepath.Join(t.TempDir(), "a.db")
	o := decodeOutcome(t, cli(t, db, "", "run", "testdata/agents/analyst.toml", "cost?", "--json"))
	file := filepath.Join(t.TempDir(), "run.json")
	want(t, cli(t, db, "", "export", o.RunID, "-o", file), 0)
	other := filepath.Join(t.TempDir(), "b.db")
	imp := cli(t, other, "", "import", file)
	want(t, imp, 0)
	if strings.TrimSpace(imp.stdout) != o.RunID {
		t.Fatalf("import printed %q", imp.stdout)
	}
	want(t, cli(t, other, "", "replay", o.RunID), 0)
	again := cli(t, other, "", "export", o.RunID)
	first, _ := os.ReadFile(file)
	if again.stdout != string(first) {
		t.Fatal("export after import differs from the original export")
	}
	want(t, cli(t, other, "", "import", file), exitUsage) // the id exists
}

// TestRecordedRuns replays every run under testdata/runs: good recordings
// must match; bad-* recordings must diverge at the step their expectation
// file's diverges_at says.
func TestRecordedRuns(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/runs/*.json")
	if len(files) < 6 {
		t.Fatalf("want the recorded runs, found %d", len(files))
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			imp := cli(t, db, "", "import", "testdata/runs/"+filepath.Base(f))
			want(t, imp, 0)
			id := strings.TrimSpace(imp.stdout)
			rep := cli(t, db, "", "replay", id)
			if !strings.HasPrefix(name, "bad-") {
				want(t, rep, 0)
				return
			}
			want(t, rep, exitFailed)
			x, err := agenttest.ReadExpect(strings.TrimSuffix(f, ".json") + agenttest.ExpectSuffix)
			if err != nil || x.DivergesAt == nil {
				t.Fatalf("a bad-* recording needs diverges_at in its expectation file: %v", err)
			}
			if w := fmt.Sprintf("diverges at step %d:", *x.DivergesAt); !strings.Contains(rep.stdout, w) {
				t.Fatalf("want %q, got:\n%s", w, rep.stdout)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// openAIServer answers chat completions: with status (and body) for the
// first fail requests, then with a reply saying text.
func openAIServer(t *testing.T, fail int32, status int, body, text string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) <= fail {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
			fmt.Fprint(w, body)
			return
		}
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, text)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func openAIAgent(t *testing.T, dir, name, baseURL string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	os.WriteFile(path, []byte(fmt.Sprintf(`name = "remote"
[models.primary]
provider = "openai"
model = "m"
base_url = %q
api_key_env = "TRUTH_KEY"
[models.primary.retry]
attempts = 3
backoff = "10ms"
max_elapsed = "5s"
`, baseURL)), 0o644)
	return path
}

// TestAnOutageStallsAndResumeWithAFixedAgentFinishes: 429s past the retry
// policy stall the run (exit 7, resumable); so does a refused connection;
// resume retries, and resume --agent continues with a fixed endpoint,
// recorded with the run; a 401 still fails the run.
func TestAnOutageStallsAndResumeWithAFixedAgentFinishes(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	t.Setenv("TRUTH_KEY", "sk-truth-0123456789")
	busy, hits := openAIServer(t, 100, http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached"}}`, "")
	r := cli(t, db, "", "run", openAIAgent(t, dir, "busy.toml", busy.URL+"/v1"), "hello", "--json")
	want(t, r, exitStalled, "run against a rate-limited endpoint")
	o := decodeOutcome(t, r)
	if o.Status != "stalled" || hits.Load() != 3 {
		t.Fatalf("%+v after %d requests", o, hits.Load())
	}
	var j map[string]any
	json.Unmarshal([]byte(r.stdout), &j)
	if !strings.Contains(fmt.Sprint(j["reason"]), "429") {
		t.Fatalf("the stall reason does not say why: %v", j["reason"])
	}
	ls := cli(t, db, "", "ls", "--status", "stalled")
	want(t, ls, 0)
	if !strings.Contains(ls.stdout, o.RunID) {
		t.Fatalf("ls --status stalled lacks the run:\n%s", ls.stdout)
	}
	// resume tries again (still down: stalled again).
	want(t, cli(t, db, "", "resume", o.RunID), exitStalled, "resume while still down")
	// A refused connection stalls too.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	want(t, cli(t, db, "", "run", openAIAgent(t, dir, "down.toml", closed.URL+"/v1"), "hello"), exitStalled, "refused connection")
	// The endpoint moved: resume with a fixed agent file.
	good, _ := openAIServer(t, 0, 0, "", "hello back")
	fixed := openAIAgent(t, dir, "fixed.toml", good.URL+"/v1")
	r = cli(t, db, "", "resume", o.RunID, "--agent", fixed, "--json")
	want(t, r, exitCompleted, "resume --agent")
	if o2 := decodeOutcome(t, r); o2.Answer != "hello back" {
		t.Fatalf("%+v", o2)
	}
	show := cli(t, db, "", "show", o.RunID)
	if !strings.Contains(show.stdout, "agent changed after step") {
		t.Fatalf("show lacks the agent change:\n%s", show.stdout)
	}
	want(t, cli(t, db, "", "replay", o.RunID), 0, "replay with the recorded change")
	// A permanent error fails the run.
	refused, _ := openAIServer(t, 100, http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided"}}`, "")
	want(t, cli(t, db, "", "run", openAIAgent(t, dir, "refused.toml", refused.URL+"/v1"), "hello"), exitFailed, "401")
}

func TestExitCodesForBadResults(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", "testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	id := decodeOutcome(t, r).RunID
	before := cli(t, db, "", "export", id).stdout
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"missing results file", "", []string{"--results", "/no/such/file.json"}},
		{"an entry with neither result nor error", `[{"tool_call_id": "call_approve"}]`, []string{"--results", "-"}},
		{"an empty error", `[{"tool_call_id": "call_approve", "error": ""}]`, []string{"--results", "-"}},
		{"an unknown id", `[{"tool_call_id": "nope", "result": "x"}]`, []string{"--results", "-"}},
	} {
		r := cli(t, db, c.stdin, append([]string{"resume", id}, c.args...)...)
		want(t, r, exitUsage, c.name)
		if r.stderr == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	if after := cli(t, db, "", "export", id).stdout; after != before {
		t.Fatal("a refused resume changed the run")
	}
	want(t, cli(t, db, "", "resume", id, "--results", "testdata/results/approve.json"), exitCompleted)
	// The same results again: the pause was answered already; the caller
	// lost a race, exit 6.
	r = cli(t, db, "", "resume", id, "--results", "testdata/results/approve.json")
	want(t, r, exitBusy, "results for an answered pause")
	if !strings.Contains(r.stderr, "already answered") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	h := cli(t, db, "", "help")
	for _, s := range []string{"6  busy", "7  the run stalled", "stalled, completed, failed, cancelled"} {
		if !strings.Contains(h.stdout, s) {
			t.Errorf("help lacks %q", s)
		}
	}
}

func TestLsAndShowTellTheTruth(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	// Read-only commands neither create a database nor a directory.
	missing := filepath.Join(dir, "absent.db")
	for _, args := range [][]string{{"ls"}, {"show", "x"}, {"export", "x"}, {"replay", "x"}} {
		want(t, cli(t, missing, "", args...), exitUsage, args...)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("a read-only command created the database")
	}
	want(t, cli(t, filepath.Join(dir, "no", "dir", "t.db"), "", "run", "testdata/agents/format-native.toml", "add"), exitUsage, "missing directory")

	// A run whose tool takes 300 ms: its tools step carries the duration.
	slow := filepath.Join(dir, "slow.toml")
	os.WriteFile(filepath.Join(dir, "slow.jsonl"), []byte(`{"tool_calls": [{"id": "s1", "name": "nap", "arguments": {}}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}
{"text": "rested"}
`), 0o644)
	os.WriteFile(slow, []byte(`name = "napper"
[models.primary]
provider = "script"
script = "slow.jsonl"
[[tools]]
name = "nap"
command = ["sleep", "0.3"]
`), 0o644)
	var ids []string
	for range 3 {
		r := cli(t, db, "", "run", slow, "rest", "--json")
		want(t, r, 0)
		ids = append(ids, decodeOutcome(t, r).RunID)
	}
	r := cli(t, db, "", "show", ids[0], "--json")
	want(t, r, 0)
	var show showJSON
	if err := json.Unmarshal([]byte(r.stdout), &show); err != nil {
		t.Fatal(err)
	}
	if show.Run.Status != "completed" || show.Run.Answer != "rested" || len(show.Steps) != 5 || show.Tokens.Prompt != 10 {
		t.Fatalf("show --json: %+v", show)
	}
	model, tools := show.Steps[1], show.Steps[2]
	if !strings.HasPrefix(tools.Action, "tools") || tools.DurationMS == nil || *tools.DurationMS < 250 ||
		model.DurationMS == nil || *model.DurationMS > 250 || model.Tokens == nil || model.Tokens.Prompt != 10 {
		t.Fatalf("durations and tokens on the wrong steps: model %+v, tools %+v", model, tools)
	}
	text := cli(t, db, "", "show", ids[0]).stdout
	if !strings.Contains(text, "10+3 tokens") || !strings.Contains(text, "<- results s1 ok") {
		t.Fatalf("show:\n%s", text)
	}
	step := cli(t, db, "", "show", ids[0], "--step", "3", "--json")
	var full jsonStepFull
	if err := json.Unmarshal([]byte(step.stdout), &full); err != nil || len(full.Messages) != 3 || full.Messages[2].CallID != "s1" {
		t.Fatalf("show --step --json: %v\n%s", err, step.stdout)
	}

	// ls says when more runs match than it lists.
	r = cli(t, db, "", "ls", "--limit", "2")
	if !strings.Contains(r.stdout, "more runs match") || strings.Count(r.stdout, "napper") != 2 {
		t.Fatalf("ls --limit 2:\n%s", r.stdout)
	}
	var list struct {
		Runs []jsonRun `json:"runs"`
		More bool      `json:"more"`
	}
	r = cli(t, db, "", "ls", "--limit", "3", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Runs) != 3 || list.More || list.Runs[0].Holder != nil {
		t.Fatalf("ls --json: %v %+v", err, list)
	}
}

// TestAKilledRunIsNotShownRunning: after kill -9 the run is shown
// interrupted (its driver is dead), and resume takes it over at once.
func TestAKilledRunIsNotShownRunning(t *testing.T) {
	agentFile := killAgent(t)
	dir := t.TempDir()
	db, log := filepath.Join(dir, "k.db"), filepath.Join(dir, "k.log")
	cmd := stepwiseCmd(db, log, "run", agentFile, "go")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRun(t, db)
	cmd.Process.Kill()
	cmd.Wait()
	r := cli(t, db, "", "ls", "--json")
	var list struct{ Runs []jsonRun }
	json.Unmarshal([]byte(r.stdout), &list)
	if len(list.Runs) != 1 || list.Runs[0].Status != "interrupted" || list.Runs[0].StoredStatus != "running" || list.Runs[0].Holder == nil ||
		list.Runs[0].Holder.Alive == nil || *list.Runs[0].Holder.Alive {
		t.Fatalf("ls after kill -9: %s", r.stdout)
	}
	if r := cli(t, db, "", "ls", "--status", "interrupted"); !strings.Contains(r.stdout, list.Runs[0].ID) {
		t.Fatalf("ls --status interrupted lacks the killed run:\n%s", r.stdout)
	}
	if r := cli(t, db, "", "ls", "--status", "running"); strings.Contains(r.stdout, list.Runs[0].ID) {
		t.Fatalf("ls --status running lists the killed run:\n%s", r.stdout)
	}
	if show := cli(t, db, "", "show", list.Runs[0].ID); !strings.Contains(show.stdout, "status interrupted") || !strings.Contains(show.stdout, "(dead)") {
		t.Fatalf("show after kill -9:\n%s", show.stdout)
	}
	out, err := stepwiseCmd(db, log, "resume", list.Runs[0].ID).CombinedOutput()
	if err != nil {
		t.Fatalf("resume after kill -9: %v\n%s", err, out)
	}
}

func waitForRun(t *testing.T, db string) {
	t.Helper()
	for i := 0; runID(t, db) == ""; i++ {
		if i > 2000 {
			t.Fatal("the run never started")
		}
		exec.Command("sleep", "0.005").Run()
	}
}

func TestInputAndScriptPaths(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	r := cli(t, db, "  \n", "run", "testdata/agents/format-native.toml")
	want(t, r, exitUsage, "empty stdin")
	if !strings.Contains(r.stderr, "input is empty") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	want(t, cli(t, db, "", "run", "testdata/agents/format-native.toml", " "), exitUsage, "empty argument")

	// --script is relative to the current directory, at run and at resume
	// (run from another directory).
	work := t.TempDir()
	data, _ := os.ReadFile("../../testdata/scripts/external.jsonl")
	os.WriteFile(filepath.Join(work, "mine.jsonl"), data, 0o644)
	abs, _ := filepath.Abs("../../testdata/agents/external.toml")
	run := exec.Command(binary, "run", abs, "Buy a desk lamp", "--script", "mine.jsonl", "--json")
	run.Dir, run.Env = work, append(os.Environ(), "STEPWISE_DB="+db)
	out, _ := run.Output()
	var o outcome
	if err := json.Unmarshal(out, &o); err != nil || o.Status != "awaiting_tool_results" {
		t.Fatalf("run with a relative --script: %v %s", err, out)
	}
	want(t, cli(t, db, "", "resume", o.RunID, "--results", "testdata/results/approve.json"), exitCompleted, "resume elsewhere")

	// validate catches a missing script, and errors carry their line.
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("name = \"x\"\n[models.primary]\nprovider = \"script\"\nscript = \"missing.jsonl\"\n"), 0o644)
	if r := cli(t, db, "", "validate", bad); r.code != exitUsage || !strings.Contains(r.stderr, "bad.toml:") || !strings.Contains(r.stderr, "missing.jsonl") {
		t.Fatalf("validate with a missing script: %+v", r)
	}
	os.WriteFile(bad, []byte("name = \"x\"\n[models.primary]\nprovider = \"script\"\nscript = \""+filepath.Join(work, "mine.jsonl")+"\"\n[limits]\nmax_steps = -5\n"), 0o644)
	if r := cli(t, db, "", "validate", bad); r.code != exitUsage || !strings.Contains(r.stderr, "bad.toml:6") {
		t.Fatalf("validate with max_steps = -5: %+v", r)
	}
}

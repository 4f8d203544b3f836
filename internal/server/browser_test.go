package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/modeltest"
)

// browserDir holds the browser test's script and its npm package
// (playwright-core, which drives an installed Chromium and downloads none).
const browserDir = "testdata/browser"

// browserTools finds node, Chromium and playwright-core; when one is
// missing the test skips, loudly, or fails with STEPWISE_REQUIRE_BROWSER=1.
func browserTools(t *testing.T) (node, chromium string) {
	t.Helper()
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node (apt-get install nodejs npm)")
	}
	chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if chromium, err = exec.LookPath("chromium"); err != nil {
			missing = append(missing, "chromium at /usr/bin/chromium or on PATH (apt-get install chromium)")
		}
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "playwright-core (npm ci --prefix internal/server/"+browserDir+")")
	}
	if len(missing) == 0 {
		return node, chromium
	}
	bar := strings.Repeat("!", 78)
	msg := bar + "\nTHE INSPECTOR'S BROWSER TEST DID NOT RUN: missing " + strings.Join(missing, "; ") +
		".\nInstall them (make test runs npm ci when node, npm and chromium are present);\n" +
		"STEPWISE_REQUIRE_BROWSER=1 makes this a failure.\n" + bar
	if os.Getenv("STEPWISE_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return "", ""
}

// TestInspectorInBrowser drives the inspector page in a real Chromium
// against a real server (testdata/browser/inspector.mjs says what it
// does: a token prompt, the list read at a glance with its ids copied,
// keyboard use, answering a paused run and watching it complete live, a
// fork with an edited tool result, replay, a run with tool calls and a
// compaction shown in words with its waterfall and a model request, a
// failed and a stalled run, a conversation carried on from the message
// box, both colour schemes, and every page at 1280 and at 390 pixels wide
// with nothing wider than the window), then checks from the API that what
// the page did happened. A third run streams its model's reply, which the
// page shows as it comes. The screenshots go to a temporary directory, or
// to STEPWISE_SHOTS.
func TestInspectorInBrowser(t *testing.T) {
	node, chromium := browserTools(t)
	const token = "inspector test;token \"=%+" // a cookie cannot hold it verbatim
	// The streamer's model streams its reply: the first pieces once the
	// page watches the run (the script says "WATCHING STREAM"), the rest
	// once the page showed them ("SEEN STREAM").
	watching, seen := make(chan struct{}), make(chan struct{})
	model := modeltest.New(t, modeltest.Reply{
		Events: modeltest.Data(
			streamChunk(`{"role":"assistant","content":""}`, ""),
			streamChunk(`{"content":"Hello"}`, ""),
			streamChunk(`{"content":" from"}`, ""),
			streamChunk(`{"content":" the stream."}`, ""),
			streamChunk(`{}`, "stop"),
			"[DONE]",
		),
		Before: func(i int) {
			switch i {
			case 1:
				<-watching
			case 3:
				<-seen
			}
		},
	})
	t.Cleanup(func() { openOnce(watching); openOnce(seen) }) // runs before the model server's
	dir := agentsDir(t)
	if err := os.WriteFile(filepath.Join(dir, "streamer.toml"), []byte(fmt.Sprintf("name = \"streamer\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"%s/v1\"\n", model.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	browserAgents(t, dir)
	f := newFixture(t, Config{Workers: 2, Tokens: []string{token}, AgentsDir: dir})
	auth := []string{"Authorization", "Bearer " + token}
	paused := func() string {
		r := f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp", "options": map[string]string{"wait": "5s"}}, auth...)
		want(t, r, http.StatusCreated)
		var run apiRun
		r.json(t, &run)
		if run.Status != "awaiting_tool_results" {
			t.Fatalf("shopper run: %s", r.body)
		}
		return run.ID
	}
	want(t, f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi", "options": map[string]string{"wait": "5s"}}, auth...), http.StatusCreated)
	byMouse, byKeys, waiting := paused(), paused(), paused()
	stalled := stallRun(t, f, paused())
	// A run that read a menu with tools, compacted its conversation and
	// answered, at a price; and one that failed.
	ended := func(agent, input, status string) string {
		r := f.do("POST", "/v1/runs", map[string]any{"agent": agent, "input": input, "options": map[string]string{"wait": "10s"}}, auth...)
		want(t, r, http.StatusCreated)
		var run apiRun
		r.json(t, &run)
		if run.Status != status {
			t.Fatalf("%s run: %s", agent, r.body)
		}
		return run.ID
	}
	research := ended("researcher", "Which dessert is the cheapest on the hotel restaurant's menu, and is it made in house? Check every page of the menu before you answer.", "completed")
	failed := ended("tight", "Note that the lamp is sold out.", "failed")
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "streamer", "input": "hi"}, auth...)
	want(t, r, http.StatusCreated)
	var streamed apiRun
	r.json(t, &streamed)
	// A conversation that answered its first turn and waits for the user.
	r = f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "input": "hi", "options": map[string]string{"wait": "5s"}}, auth...)
	want(t, r, http.StatusCreated)
	var chat apiRun
	r.json(t, &chat)
	if chat.Status != "completed" || chat.Answer != "answer 1" {
		t.Fatalf("chat run: %s", r.body)
	}

	shots := os.Getenv("STEPWISE_SHOTS") // a directory to keep the screenshots in
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(browserDir, "inspector.mjs"))
	// SIGTERM lets playwright close Chromium on its way out.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "STEPWISE_URL="+f.url, "STEPWISE_TOKEN="+token, "CHROMIUM="+chromium,
		"RUN_CLICK="+byMouse, "RUN_KEYS="+byKeys, "RUN_STREAM="+streamed.ID, "RUN_STALLED="+stalled, "RUN_CHAT="+chat.ID, "RUN_PAUSED="+waiting, "RUN_RESEARCH="+research, "RUN_FAILED="+failed, "SHOTS="+shots)
	cmd.Stderr = &logWriter{t: t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var result struct{ Fork string }
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		switch line {
		case "WATCHING STREAM":
			openOnce(watching)
		case "SEEN STREAM":
			openOnce(seen)
		}
		if v, ok := strings.CutPrefix(line, "RESULT "); ok {
			if err := json.Unmarshal([]byte(v), &result); err != nil {
				t.Errorf("the script's result %q: %v", v, err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		keep := "set STEPWISE_SHOTS=DIR to keep the screenshots"
		if os.Getenv("STEPWISE_SHOTS") != "" {
			keep = "screenshots in " + shots
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("the browser script did not finish in time (%s)", keep)
		}
		t.Fatalf("the browser script failed: %v (%s)", err, keep)
	}

	// The API agrees with what the page showed.
	for _, id := range []string{byMouse, byKeys} {
		run := runAuthed(t, f, id, auth)
		if run.Status != "completed" || run.Answer != "Bought the lamp." {
			t.Errorf("run %s: %s %q", id, run.Status, run.Answer)
		}
		if got := toolResultsOf(t, f, id, auth); got != "call_approve=approved" {
			t.Errorf("run %s: its call got %s, want the page's approval", id, got)
		}
	}
	if result.Fork == "" {
		t.Fatal("the script named no fork")
	}
	fork := runAuthed(t, f, result.Fork, auth)
	if fork.Parent == nil || fork.Parent.ID != byMouse || fork.Parent.Step != 2 || fork.Status != "completed" {
		t.Fatalf("fork %s: parent %+v, status %s", fork.ID, fork.Parent, fork.Status)
	}
	if got := toolResultsOf(t, f, fork.ID, auth); got != "call_approve=error:over budget" {
		t.Errorf("the fork's call got %s, want the page's edited result", got)
	}
	if run := runAuthed(t, f, streamed.ID, auth); run.Status != "completed" || run.Answer != "Hello from the stream." {
		t.Errorf("the streamed run: %s %q", run.Status, run.Answer)
	}
	if run := runAuthed(t, f, chat.ID, auth); run.Status != "completed" || run.Turns != 2 || run.Answer != "answer 2" {
		t.Errorf("the conversation: %s, %d turns, %q", run.Status, run.Turns, run.Answer)
	}
	var conv messageList
	f.do("GET", "/v1/runs/"+chat.ID+"/messages", nil, auth...).json(t, &conv)
	var users []string
	for _, m := range conv.Messages {
		if m.Role == "user" {
			users = append(users, *m.Content)
		}
	}
	if strings.Join(users, "|") != "hi|How much is the desk lamp?" {
		t.Errorf("the user's messages: %q, want the page's one message after the input", users)
	}
}

// streamChunk is a chat completions stream chunk with a delta.
func streamChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// runAuthed reads a run with the token.
func runAuthed(t *testing.T, f *fixture, id string, auth []string) apiRun {
	t.Helper()
	r := f.do("GET", "/v1/runs/"+id, nil, auth...)
	want(t, r, http.StatusOK)
	var run apiRun
	r.json(t, &run)
	return run
}

// toolResultsOf renders the tool results a run's steps got: "ID=OUTPUT"
// or "ID=error:TEXT", comma-separated.
func toolResultsOf(t *testing.T, f *fixture, id string, auth []string) string {
	t.Helper()
	var steps struct {
		Steps []struct {
			Result *struct {
				Kind string
				Data struct {
					Results []struct {
						ID     string `json:"tool_call_id"`
						Result string `json:"result"`
						Error  string `json:"error"`
					} `json:"results"`
				} `json:"data"`
			} `json:"result"`
		} `json:"steps"`
	}
	f.do("GET", "/v1/runs/"+id+"/steps", nil, auth...).json(t, &steps)
	var got []string
	for _, s := range steps.Steps {
		if s.Result == nil || s.Result.Kind != "tool_results" {
			continue
		}
		for _, r := range s.Result.Data.Results {
			if r.Error != "" {
				got = append(got, r.ID+"=error:"+r.Error)
			} else {
				got = append(got, r.ID+"="+r.Result)
			}
		}
	}
	return strings.Join(got, ",")
}

// logWriter sends the script's stderr to the test log, line by line.
type logWriter struct {
	t    *testing.T
	part string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.part += string(p)
	for {
		line, rest, ok := strings.Cut(w.part, "\n")
		if !ok {
			break
		}
		w.t.Log(line)
		w.part = rest
	}
	return len(p), nil
}

// browserAgents adds the browser test's own agents to dir: researcher
// (the compactor of testdata/agents, with prices, token counts and model
// calls that take a moment: it reads a menu with read_file, compacts its
// conversation, and answers) and tight (its first reply uses up its
// output token budget, so it fails).
func browserAgents(t *testing.T, dir string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "testdata/agents/compactor.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml := strings.NewReplacer(`name = "compactor"`, `name = "researcher"`,
		`script = "../scripts/compactor.jsonl"`, "script = \"researcher.jsonl\"\ninput_price_per_million = 2.5\noutput_price_per_million = 10",
		`root = "../data"`, fmt.Sprintf("root = %q", filepath.Join(root, "testdata/data"))).Replace(string(src))
	if !strings.Contains(toml, "researcher.jsonl") || !strings.Contains(toml, "testdata/data") {
		t.Fatalf("testdata/agents/compactor.toml changed: %s", toml)
	}
	script, err := os.ReadFile(filepath.Join(root, "testdata/scripts/compactor.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, line := range strings.Split(strings.TrimSpace(string(script)), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		extra := fmt.Sprintf(`"delay_ms": %d, "usage": {"prompt_tokens": %d, "completion_tokens": %d}, `, 20+15*(i%4), 300+40*i, 25+5*i)
		lines = append(lines, "{"+extra+line[1:])
	}
	files := map[string]string{
		"researcher.toml":  toml,
		"researcher.jsonl": strings.Join(lines, "\n") + "\n",
		"tight.toml":       "name = \"tight\"\n[models.primary]\nprovider = \"script\"\nscript = \"tight.jsonl\"\n[budget]\nmax_output_tokens = 10\n[[tools]]\nname = \"note\"\ncommand = [\"printf\", \"noted\"]\n",
		"tight.jsonl":      `{"text": "Let me write that down.", "tool_calls": [{"id": "n1", "name": "note", "arguments": {}}], "usage": {"prompt_tokens": 50, "completion_tokens": 40}}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
)

// requestJSON is show --step N --request --json's output.
type requestJSON struct {
	Step     int               `json:"step"`
	Role     string            `json:"role"`
	Call     int               `json:"call"`
	Provider string            `json:"provider"`
	Method   string            `json:"method"`
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers"`
	Body     json.RawMessage   `json:"body"`
}

// bodyOf is the body of show --request's text output: what follows the
// first blank line, less the final newline.
func bodyOf(t *testing.T, out string) string {
	t.Helper()
	_, body, ok := strings.Cut(out, "\n\n")
	if !ok {
		t.Fatalf("no blank line before the body:\n%s", out)
	}
	return strings.TrimSuffix(body, "\n")
}

// TestShowRequestScript: the script provider's requests, numbered by
// the run's model calls, with the agent's system prompt and tools; a step
// that made no model call, and --request without --step, exit 2.
func TestShowRequestScript(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := inprocDB(t, db, "run", "testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	id := decodeOutcome(t, r).RunID

	r = inprocDB(t, db, "show", id, "--step", "1", "--request")
	want(t, r, 0, "show --step 1 --request")
	if first, _, _ := strings.Cut(r.stdout, "\n"); first != "script (no HTTP request)" {
		t.Errorf("first line %q", first)
	}
	var body struct {
		Provider string `json:"provider"`
		Call     int    `json:"call"`
		Reply    int    `json:"reply"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(bodyOf(t, r.stdout)), &body); err != nil {
		t.Fatalf("the body is not JSON: %v\n%s", err, r.stdout)
	}
	if body.Provider != "script" || body.Call != 1 || body.Reply != 1 ||
		len(body.Messages) != 2 || body.Messages[0].Role != "system" || !strings.HasPrefix(body.Messages[0].Content, "You help buy office equipment.") ||
		body.Messages[1].Content != "Buy a desk lamp" || len(body.Tools) != 2 {
		t.Errorf("step 1's request: %+v", body)
	}

	r = inprocDB(t, db, "show", id, "--step", "3", "--request", "--json")
	want(t, r, 0, "show --step 3 --request --json")
	var j requestJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Step != 3 || j.Role != "primary" || j.Call != 2 || j.Provider != "script" || j.Method != "" ||
		!strings.Contains(string(j.Body), `"call":2,"reply":2`) || !strings.Contains(string(j.Body), `"call_id":"call_prices"`) {
		t.Errorf("step 3's request: %+v\n%s", j, j.Body)
	}

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--step", "2", "--request"}, "step 2 made no model call: its action is tools call_prices read_file"},
		{[]string{"--step", "0", "--request"}, "step 0 made no model call: it is the run's start"},
		{[]string{"--request"}, "--request needs --step N"},
		{[]string{"--step", "99", "--request"}, "not found"},
	} {
		r := inprocDB(t, db, append([]string{"show", id}, c.args...)...)
		want(t, r, exitUsage, c.args...)
		if !strings.Contains(r.stderr, c.says) {
			t.Errorf("%v: stderr %q lacks %q", c.args, r.stderr, c.says)
		}
	}
}

// TestShowRequestIsWhatTheModelGot: an agent on an OpenAI-compatible
// endpoint makes two model calls; show --step N --request prints, for
// each, the very body the endpoint received, its method, URL and headers,
// the API key never, whether or not the key's variable is set when it
// shows.
func TestShowRequestIsWhatTheModelGot(t *testing.T) {
	const key = "sk-show-request-4f2a9c1e77"
	t.Setenv("SHOW_REQUEST_KEY", key)
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	srv := mt.New(t,
		mt.Reply{Body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"call_w","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`},
		mt.Reply{Body: `{"id":"c2","object":"chat.completion","created":2,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"It is 18 C & sunny."},"finish_reason":"stop"}]}`},
	)
	agentFile := filepath.Join(dir, "remote.toml")
	os.WriteFile(agentFile, []byte(fmt.Sprintf(`name = "remote"
system_prompt = "You are terse & exact <always>."
format = "native"
[models.primary]
provider = "openai"
model = "gpt-4o-mini"
base_url = %q
api_key_env = "SHOW_REQUEST_KEY"
temperature = 0.2
max_tokens = 300
[[tools]]
name = "weather"
description = "The weather in a city."
command = ["echo", "18 C"]
parameters = '''{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'''
`, srv.URL+"/v1")), 0o644)
	r := inprocDB(t, db, "run", agentFile, "Weather in Paris?", "--json")
	want(t, r, exitCompleted, "run")
	id := decodeOutcome(t, r).RunID
	sent := srv.Requests()
	if len(sent) != 2 {
		t.Fatalf("the endpoint got %d requests, want 2", len(sent))
	}
	for i, step := range []string{"1", "3"} {
		for _, keySet := range []bool{true, false} {
			if !keySet {
				t.Setenv("SHOW_REQUEST_KEY", "")
			}
			r := inprocDB(t, db, "show", id, "--step", step, "--request")
			want(t, r, 0, "show --step", step, "--request")
			if got := bodyOf(t, r.stdout); got != string(sent[i].Body) {
				t.Errorf("step %s: printed body\n%s\nthe endpoint got\n%s", step, got, sent[i].Body)
			}
			lines := strings.Split(r.stdout, "\n")
			if lines[0] != "POST "+srv.URL+"/v1/chat/completions" || !strings.Contains(r.stdout, "\nAuthorization: Bearer [redacted:SHOW_REQUEST_KEY]\n") ||
				!strings.Contains(r.stdout, "\nContent-Type: application/json\n") {
				t.Errorf("step %s: the request line or headers:\n%s", step, r.stdout)
			}
			j := inprocDB(t, db, "show", id, "--step", step, "--request", "--json")
			want(t, j, 0, "show --step", step, "--request --json")
			var out requestJSON
			if err := json.Unmarshal([]byte(j.stdout), &out); err != nil {
				t.Fatal(err)
			}
			if string(out.Body) != string(sent[i].Body) || out.Call != i+1 || out.Provider != "openai" || out.URL != srv.URL+"/v1/chat/completions" {
				t.Errorf("step %s --json: %+v\nbody %s\nsent %s", step, out, out.Body, sent[i].Body)
			}
			if strings.Contains(r.stdout+r.stderr+j.stdout+j.stderr, key) {
				t.Errorf("step %s: the API key is printed", step)
			}
		}
		t.Setenv("SHOW_REQUEST_KEY", key)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("showing the requests sent %d more", n-2)
	}
}

// TestShowRequestAfterAnAgentChange: a run stalls on an endpoint that
// answers 429; resume --agent makes the pending request with a fixed
// agent (another endpoint and model). show --step 1 --request prints what
// the fixed endpoint received, the one that answered.
func TestShowRequestAfterAnAgentChange(t *testing.T) {
	t.Setenv("SHOW_REQUEST_KEY", "sk-show-request-change-1")
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	busy := mt.New(t, mt.Reply{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: `{"error":{"message":"Rate limit reached"}}`})
	fixed := mt.New(t, mt.Reply{Body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`})
	agentOn := func(name, model, url string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(fmt.Sprintf(`name = "remote"
[models.primary]
provider = "openai"
model = %q
base_url = %q
api_key_env = "SHOW_REQUEST_KEY"
stream = false
[models.primary.retry]
attempts = 2
backoff = "10ms"
max_elapsed = "5s"
`, model, url+"/v1")), 0o644)
		return path
	}
	r := inprocDB(t, db, "run", agentOn("busy.toml", "model-busy", busy.URL), "hello", "--json")
	want(t, r, exitStalled, "run against a rate-limited endpoint")
	id := decodeOutcome(t, r).RunID
	want(t, inprocDB(t, db, "resume", id, "--agent", agentOn("fixed.toml", "model-fixed", fixed.URL)), exitCompleted, "resume --agent")
	sent := fixed.Requests()
	if len(sent) != 1 || !strings.Contains(string(sent[0].Body), `"model":"model-fixed"`) {
		t.Fatalf("the fixed endpoint got %d requests", len(sent))
	}
	r = inprocDB(t, db, "show", id, "--step", "1", "--request")
	want(t, r, 0, "show --step 1 --request")
	if got := bodyOf(t, r.stdout); got != string(sent[0].Body) || !strings.HasPrefix(r.stdout, "POST "+fixed.URL+"/v1/chat/completions\n") {
		t.Errorf("printed\n%s\nthe fixed endpoint got\n%s", r.stdout, sent[0].Body)
	}
}

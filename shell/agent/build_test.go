package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func ask(call int) shell.ModelRequest {
	return shell.ModelRequest{Call: call, Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}}
}

func TestRetryTables(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error": {"message": "overloaded"}}`)
	}))
	defer srv.Close()
	src := fmt.Sprintf(`name = "a"
[models.primary]
provider = "openai"
model = "m"
base_url = "%[1]s/v1"
[models.primary.retry]
attempts = 2
backoff = "1ms"
max_backoff = "2ms"
max_elapsed = "1m"
jitter = 0

[models.helper]
provider = "openai"
model = "h"
base_url = "%[1]s/v1"
max_retries = 2
retry = { backoff = "1ms" }

[[tools]]
name = "probe"
command = ["true"]
idempotent = true
retry = { attempts = 4, backoff = "200ms" }

[[tools]]
builtin = "files"
root = "."
retry = { attempts = 5, jitter = 0 }
`, srv.URL)
	spec, err := agent.Parse([]byte(src), "t.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	def := shell.DefaultToolRetry
	files := shell.RetryPolicy{Attempts: 5, Backoff: def.Backoff, MaxBackoff: def.MaxBackoff, MaxElapsed: def.MaxElapsed, Jitter: -1}
	want := map[string]shell.RetryPolicy{
		"probe":      {Attempts: 4, Backoff: 200 * time.Millisecond, MaxBackoff: def.MaxBackoff, MaxElapsed: def.MaxElapsed, Jitter: def.Jitter},
		"read_file":  files,
		"write_file": files,
		"list_files": files,
	}
	if !reflect.DeepEqual(spec.ToolRetry, want) {
		t.Errorf("ToolRetry = %+v\nwant        %+v", spec.ToolRetry, want)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ag.ToolRetry, want) {
		t.Errorf("the agent's ToolRetry = %+v", ag.ToolRetry)
	}

	// The models' tables reach their providers: 2 attempts for the
	// primary, max_retries = 2 (3 attempts) for the helper.
	for _, c := range []struct {
		role     core.ModelRole
		attempts int
	}{{core.Primary, 2}, {core.Helper, 3}} {
		requests.Store(0)
		_, err := ag.Models[c.role].Complete(context.Background(), ask(1))
		var te *shell.TransientError
		if !errors.As(err, &te) || te.Attempts != c.attempts || int(requests.Load()) != c.attempts {
			t.Errorf("%s: err = %v after %d requests; want a TransientError after %d attempts", c.role, err, requests.Load(), c.attempts)
		}
	}
}

func TestSecrets(t *testing.T) {
	for k, v := range map[string]string{
		"T_OPENAI_KEY": "sk-1", "BRAVE_API_KEY": "brave-2", "T_TOOL_TOKEN": "tok-3", "T_CODE_TOKEN": "code-4",
		"T_PLAIN": "plain", "T_MCP_TOKEN": "mcp-5", "T_MCP_ENV": "env-6", "T_EMPTY": "",
	} {
		t.Setenv(k, v)
	}
	tools := `name = "a"
[models.primary]
provider = "openai"
model = "m"
base_url = "http://127.0.0.1:1/v1"
api_key_env = "T_OPENAI_KEY"

[[tools]]
builtin = "web_search"
backend = "brave"

[[tools]]
name = "show"
command = ["sh", "-c", "echo tool=$T_TOOL_TOKEN plain=$T_PLAIN code=$T_CODE_TOKEN empty=$T_EMPTY"]
env = ["T_PLAIN"]
secrets = ["T_TOOL_TOKEN", "T_EMPTY"]

[[tools]]
builtin = "run_code"
languages = ["bash"]
secrets = ["T_CODE_TOKEN"]
`
	mcp := `
[[mcp]]
name = "web"
url = "http://127.0.0.1:1/mcp"
headers = { Authorization = "Bearer ${T_MCP_TOKEN}" }

[[mcp]]
name = "local"
command = "server"
env = { X = "$T_MCP_TOKEN", TOKEN = "${T_MCP_ENV}", PLAIN = "fixed" }
`
	spec, err := agent.Parse([]byte(tools+mcp), "t.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"T_OPENAI_KEY", "BRAVE_API_KEY", "T_TOOL_TOKEN", "T_EMPTY", "T_CODE_TOKEN", "T_MCP_TOKEN", "T_MCP_ENV"}
	if !reflect.DeepEqual(spec.SecretNames, want) {
		t.Errorf("SecretNames = %v, want %v (a variable only in env is no secret)", spec.SecretNames, want)
	}

	// Build reads the values (no [[mcp]] here: Build would connect).
	spec, err = agent.Parse([]byte(tools), "t.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSecrets := []shell.Secret{{Name: "T_OPENAI_KEY", Value: "sk-1"}, {Name: "BRAVE_API_KEY", Value: "brave-2"},
		{Name: "T_TOOL_TOKEN", Value: "tok-3"}, {Name: "T_CODE_TOKEN", Value: "code-4"}}
	if !reflect.DeepEqual(ag.Secrets, wantSecrets) {
		t.Errorf("Secrets = %v, want %v (unset and empty ones left out)", ag.Secrets, wantSecrets)
	}

	// A tool's environment holds the secrets it names, and no others.
	run := func(tool, args string) string {
		res := ag.Tools[tool].Run(context.Background(), core.ToolCall{ID: "c", Name: tool, Args: json.RawMessage(args)}, shell.RunContext{})
		if res.Error != "" {
			t.Fatalf("%s: %s", tool, res.Error)
		}
		return strings.TrimSpace(res.Output)
	}
	if got := run("show", `{}`); got != "tool=tok-3 plain=plain code= empty=" {
		t.Errorf("the command saw %q", got)
	}
	if got := run("run_code", `{"language": "bash", "code": "echo code=$T_CODE_TOKEN tool=$T_TOOL_TOKEN key=$T_OPENAI_KEY"}`); !strings.Contains(got, "code=code-4 tool= key=") {
		t.Errorf("run_code saw %q", got)
	}
}

func TestInDoubt(t *testing.T) {
	for _, c := range []struct {
		line string
		want shell.InDoubtPolicy
	}{
		{"", shell.InDoubtUnknown},
		{`in_doubt = "unknown"`, shell.InDoubtUnknown},
		{`in_doubt = "rerun"`, shell.InDoubtRerun},
		{`in_doubt = "wait"`, shell.InDoubtWait},
	} {
		spec, err := agent.Parse([]byte(head+"[run]\n"+c.line+"\n"), "t.toml", scriptDir(t, "x.jsonl"))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		ag, err := spec.Build(context.Background(), agent.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if spec.InDoubt != c.want || ag.InDoubt != c.want {
			t.Errorf("%q: Spec.InDoubt = %q, Agent.InDoubt = %q; want %q", c.line, spec.InDoubt, ag.InDoubt, c.want)
		}
	}
}

func TestScriptOverrideIsRelativeToTheWorkingDirectory(t *testing.T) {
	reply := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf(`{"text": %q}`+"\n", text)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agentDir, workDir := t.TempDir(), t.TempDir()
	reply(agentDir, "own.jsonl", "from the agent's own script")
	reply(agentDir, "other.jsonl", "from the agent's directory")
	reply(workDir, "other.jsonl", "from the working directory")
	path := filepath.Join(agentDir, "agent.toml")
	os.WriteFile(path, []byte("name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"own.jsonl\"\n"), 0o644)
	answer := func(ag *shell.Agent) string {
		t.Helper()
		r, err := ag.Models[core.Primary].Complete(context.Background(), ask(1))
		if err != nil {
			t.Fatal(err)
		}
		return r.Text
	}

	t.Chdir(workDir)
	spec, err := agent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil || answer(ag) != "from the agent's own script" {
		t.Fatalf("a script in the file is relative to the file: %v", err)
	}
	ag, err = spec.Build(context.Background(), agent.BuildOptions{Script: "other.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(ag); got != "from the working directory" {
		t.Errorf("--script other.jsonl answered %q", got)
	}

	// Resumed from elsewhere, the run rebuilds the same agent.
	t.Chdir(t.TempDir())
	back, opts, err := agent.FromSource(ag.Source)
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(opts.Script) || filepath.Base(opts.Script) != "other.jsonl" {
		t.Errorf("recorded script = %q, want an absolute path", opts.Script)
	}
	again, err := back.Build(context.Background(), opts)
	if err != nil {
		t.Fatalf("rebuild at resume: %v", err)
	}
	if got := answer(again); got != "from the working directory" {
		t.Errorf("after resume the script answered %q", got)
	}
}

func TestStoredAgentNeedsNoScript(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(head), 0o644)
	spec, err := agent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "x.jsonl"))
	if _, err := agent.Load(path); err == nil || !strings.Contains(err.Error(), "x.jsonl does not exist") {
		t.Errorf("Load without the script: err = %v", err)
	}
	// Replay needs the config only: the stored agent still parses.
	if _, _, err := agent.FromSource(ag.Source); err != nil {
		t.Errorf("FromSource without the script: %v", err)
	}
}

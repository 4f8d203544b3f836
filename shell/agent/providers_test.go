package agent_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// TestProviderKeys: provider = "anthropic" and "openai-responses" build
// providers that reach their endpoints with the key from the named
// variable (registered as a secret), stream unless stream = false, and
// take their retry table; the keys only some providers take are refused
// elsewhere.
func TestProviderKeys(t *testing.T) {
	t.Setenv("T_ANTHROPIC_KEY", "sk-ant-agent")
	t.Setenv("T_OPENAI_KEY", "sk-oai-agent")
	ant := modeltest.New(t, modeltest.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	oai := modeltest.New(t, modeltest.Reply{Status: 503, Body: `{"error":{"message":"busy"}}`})
	src := fmt.Sprintf(`name = "a"
[models.primary]
provider = "anthropic"
model = "claude-sonnet-4-5"
base_url = %q
api_key_env = "T_ANTHROPIC_KEY"
max_tokens = 4096
thinking_budget = 2048
retry = { attempts = 2, backoff = "1ms", jitter = 0 }

[models.helper]
provider = "openai-responses"
model = "o4-mini"
base_url = "%s/v1"
api_key_env = "T_OPENAI_KEY"
reasoning_effort = "high"
reasoning_summary = "auto"
stream = false
max_retries = 2
retry = { backoff = "1ms" }
`, ant.URL, oai.URL)
	spec, err := agent.Parse([]byte(src), "t.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"T_OPENAI_KEY", "T_ANTHROPIC_KEY"}; !reflect.DeepEqual(spec.SecretNames, want) {
		t.Errorf("SecretNames = %v, want %v", spec.SecretNames, want)
	}
	if spec.Config.Models.Primary != "claude-sonnet-4-5" || spec.Config.Models.Helper != "o4-mini" {
		t.Errorf("models = %+v", spec.Config.Models)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := shell.ModelRequest{Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}}
	for _, c := range []struct {
		role     core.ModelRole
		srv      *modeltest.Server
		attempts int
	}{{core.Primary, ant, 2}, {core.Helper, oai, 3}} {
		_, err := ag.Models[c.role].Complete(context.Background(), req)
		var te *shell.TransientError
		if !errors.As(err, &te) || te.Attempts != c.attempts || len(c.srv.Requests()) != c.attempts {
			t.Errorf("%s: err = %v after %d requests, want a TransientError after %d", c.role, err, len(c.srv.Requests()), c.attempts)
		}
	}
	a := ant.Requests()[0]
	if a.Path != "/v1/messages" || a.Header.Get("x-api-key") != "sk-ant-agent" ||
		!strings.Contains(string(a.Body), `"stream":true`) || !strings.Contains(string(a.Body), `"thinking":{"budget_tokens":2048,"type":"enabled"}`) {
		t.Errorf("anthropic request %s %v\n%s", a.Path, a.Header, a.Body)
	}
	o := oai.Requests()[0]
	if o.Path != "/v1/responses" || o.Header.Get("Authorization") != "Bearer sk-oai-agent" ||
		strings.Contains(string(o.Body), `"stream"`) || !strings.Contains(string(o.Body), `"reasoning":{"effort":"high","summary":"auto"}`) {
		t.Errorf("responses request %s %v\n%s", o.Path, o.Header, o.Body)
	}

	head := "name = \"a\"\n[models.primary]\n"
	for _, c := range []struct{ name, toml, want string }{
		{"unknown provider", `provider = "gemini"` + "\nmodel = \"m\"\n", `provider "gemini" is not one of openai, openai-responses, anthropic, script`},
		{"no model", `provider = "anthropic"` + "\n", "model is required for provider anthropic"},
		{"reasoning on anthropic", `provider = "anthropic"` + "\nmodel = \"m\"\nreasoning_effort = \"high\"\n", "t.toml:5: models.primary: reasoning_effort: applies to provider openai-responses only"},
		{"bad effort", `provider = "openai-responses"` + "\nmodel = \"m\"\nreasoning_effort = \"max\"\n", `reasoning_effort: "max" is not one of minimal, low, medium, high`},
		{"thinking on openai", `provider = "openai"` + "\nmodel = \"m\"\nthinking_budget = 2000\n", "thinking_budget: applies to provider anthropic only"},
		{"thinking too small", `provider = "anthropic"` + "\nmodel = \"m\"\nthinking_budget = 100\n", "thinking_budget: 100 is not at least 1024 and below max_tokens (8192)"},
		{"stream on a script", `provider = "script"` + "\nscript = \"x.jsonl\"\nstream = false\n", "stream: applies to the HTTP providers (openai, openai-responses, anthropic), not script"},
		{"retry on a script", `provider = "script"` + "\nscript = \"x.jsonl\"\nretry = { attempts = 2 }\n", "t.toml:5: models.primary: retry: applies to the HTTP providers (openai, openai-responses, anthropic), not script"},
		{"script on openai", `provider = "openai"` + "\nmodel = \"m\"\nscript = \"x.jsonl\"\n", "t.toml:5: models.primary: script: applies to provider script only"},
		{"accepts on anthropic", `provider = "anthropic"` + "\nmodel = \"m\"\naccepts = [\"image\"]\n", "t.toml:5: models.primary: accepts: applies to provider openai only"},
		{"bad accepts", `provider = "openai"` + "\nmodel = \"m\"\naccepts = [\"video\"]\n", `accepts: "video" is not one of "image", "audio"`},
		{"no script", `provider = "script"` + "\n", "script is required for provider script"},
		{"missing script", `provider = "script"` + "\nscript = \"y.jsonl\"\n", "y.jsonl does not exist"},
	} {
		_, err := agent.Parse([]byte(head+c.toml), "t.toml", scriptDir(t, "x.jsonl"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func TestExampleAgentsLoadAndBuild(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/agents/*.toml")
	if len(files) < 9 {
		t.Fatalf("want the example agents, found %d", len(files))
	}
	for _, f := range files {
		spec, err := agent.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		ag, err := spec.Build(context.Background(), agent.BuildOptions{})
		if err != nil {
			t.Errorf("%s: build: %v", f, err)
			continue
		}
		for _, tool := range spec.Config.Tools {
			if tool.Mode != core.ModeExternal && ag.Tools[tool.Name] == nil && ag.SubAgents[tool.Name] == nil && ag.Handoffs[tool.Name] == nil {
				t.Errorf("%s: tool %s has no implementation", f, tool.Name)
			}
		}
		back, opts, err := agent.FromSource(ag.Source)
		if err != nil || core.ConfigHash(back.Config) != core.ConfigHash(spec.Config) || opts.Script != "" {
			t.Errorf("%s: source round trip: %v", f, err)
		}
	}
}

// scriptDir is a temporary directory holding a one-reply script under
// each of names.
func scriptDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(`{"text": "done"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// head is an agent file's start: a name and a script model (x.jsonl, which
// scriptDir makes), lines 1 to 4.
const head = "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"x.jsonl\"\n"

func TestErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown key", head + "modle = \"typo\"\n", "t.toml:5:1: unknown key \"models.primary.modle\""},
		{"syntax", "name = \n", "t.toml:1:"},
		{"empty name", "name = \"\"\n[models.primary]\nprovider = \"script\"\nscript = \"x.jsonl\"\n", "t.toml:1: name is empty"},
		{"no model", "name = \"a\"\n", "t.toml: [models.primary] is required"},
		{"bad provider", "name = \"a\"\n[models.primary]\nprovider = \"gpt\"\n", "t.toml:2: models.primary: provider \"gpt\""},
		{"format", "name = \"a\"\nformat = \"yaml\"\n[models.primary]\nprovider = \"script\"\nscript = \"x.jsonl\"\n",
			"t.toml:2: format \"yaml\" is not one of native, xml, json, fenced, strict, helpers, auto"},
		{"negative max_steps", head + "[limits]\nmax_calls_per_turn = 3\nmax_steps = -5\n", "t.toml:7: limits.max_steps is negative"},
		{"negative max_state_bytes", head + "[limits]\n\nmax_state_bytes = -1\n", "t.toml:7: limits.max_state_bytes is negative"},
		{"negative limit, dotted", head + "[run]\ntool_timeout = \"1s\"\n[limits]\nmax_corrections = -1\n", "t.toml:8: limits.max_corrections is negative"},
		{"negative limit, inline", "limits = { max_repeats = 2, max_escalations = -2 }\n" + head, "t.toml:1: limits.max_escalations is negative"},
		{"bad schema", head + "\n[[tools]]\nname = \"ok\"\nmode = \"external\"\n\n[[tools]]\nname = \"bad\"\nmode = \"external\"\nparameters = '{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integr\"}}}'\n",
			"t.toml:13: tools[1] \"bad\": parameters:"},
		{"bad schema as a table", head + "[[tools]]\nname = \"bad\"\nmode = \"external\"\n\n[tools.parameters]\ntype = \"array\"\n",
			"t.toml:9: tools[0] \"bad\": parameters:"},
		{"bad schema of a command", head + "[[tools]]\nname = \"wc\"\ncommand = [\"wc\"]\nparameters = '{\"type\": \"string\"}'\n",
			"t.toml:8: tools[0]: command tool \"wc\": parameters:"},
		{"schema not JSON", head + "[[tools]]\nname = \"x\"\nmode = \"external\"\ndescription = \"d\"\nparameters = '{\"type\": '\n",
			"t.toml:9: tools[0]: \"x\": parameters: not valid JSON"},
		{"duplicate tool", head + "[[tools]]\nbuiltin = \"run_code\"\n[[tools]]\nbuiltin = \"files\"\nroot = \".\"\n[[tools]]\nname = \"read_file\"\nmode = \"external\"\n",
			"t.toml:10: tools[2] \"read_file\": duplicate tool name"},
		{"unknown builtin", head + "[[tools]]\nbuiltin = \"teleport\"\n", "t.toml:5: tools[0]: unknown built-in tool \"teleport\""},
		{"bad duration", head + "[[tools]]\nbuiltin = \"run_code\"\ntimeout = \"soon\"\n", "t.toml:5: tools[0]: timeout: \"soon\" is not a duration"},
		{"neither kind", head + "[[tools]]\nname = \"x\"\n", "give builtin = NAME, command = [...]"},
		{"missing script", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"missing.jsonl\"\n",
			"t.toml:4: models.primary: script: DIR/missing.jsonl does not exist"},
		{"missing helper script", head + "[models.helper]\nprovider = \"script\"\n\nscript = \"../nowhere/h.jsonl\"\n",
			"t.toml:8: models.helper: script: "},
		{"script with a bad line", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"bad.jsonl\"\n",
			"t.toml:4: models.primary: script: "},
		{"in_doubt", head + "[run]\nin_doubt = \"retry\"\n", "t.toml:6: run.in_doubt \"retry\" is not one of unknown, rerun, wait"},
		{"run timeout", head + "[run]\nin_doubt = \"wait\"\nrun_timeout = \"forever\"\n", "t.toml:7: run.run_timeout: \"forever\" is not a duration"},
		{"model retry duration", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\n[models.primary.retry]\nattempts = 3\nbackoff = \"soon\"\n",
			"t.toml:7: models.primary: retry.backoff: \"soon\" is not a duration"},
		{"model retry jitter", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\n[models.primary.retry]\njitter = 1.5\n",
			"t.toml:6: models.primary: retry.jitter: 1.5 is not between 0 and 1"},
		{"model retry attempts", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nretry = { attempts = 0 }\n",
			"t.toml:5: models.primary: retry.attempts: 0 is below 1"},
		{"model retry backoffs", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\n[models.primary.retry]\nbackoff = \"10s\"\nmax_backoff = \"1s\"\n",
			"t.toml:7: models.primary: retry.max_backoff: 1s is shorter than backoff (10s)"},
		{"model retry zero", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\n[models.primary.retry]\nmax_elapsed = \"0s\"\n",
			"t.toml:6: models.primary: retry.max_elapsed: \"0s\" is zero"},
		{"model retry and max_retries", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nmax_retries = 2\n[models.primary.retry]\nattempts = 3\n",
			"t.toml:5: models.primary: max_retries: give retry.attempts or max_retries, not both"},
		{"max_retries", "name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nmax_retries = -2\n",
			"t.toml:5: models.primary: max_retries: -2 is below -1"},
		{"retry of a script model", head + "[models.primary.retry]\nattempts = 2\n", "t.toml:5: models.primary: retry: applies to the HTTP providers (openai, openai-responses, anthropic), not script"},
		{"tool retry inline", head + "[[tools]]\nbuiltin = \"http_get\"\nallow_hosts = [\"example.com\"]\nretry = { attempts = 4, backoff = \"-1s\" }\n",
			"t.toml:8: tools[0]: retry.backoff: \"-1s\" is negative"},
		{"tool retry as a table", head + "[[tools]]\nname = \"x\"\ncommand = [\"true\"]\nidempotent = true\n[tools.retry]\nattempts = 2\n\njitter = -0.5\n",
			"t.toml:12: tools[0]: retry.jitter: -0.5 is not between 0 and 1"},
		{"tool retry, not idempotent", head + "[[tools]]\nname = \"ok\"\nmode = \"external\"\n[[tools]]\nname = \"x\"\ncommand = [\"true\"]\nretry = { attempts = 2 }\n",
			"t.toml:11: tools[1]: retry: only idempotent tools are retried"},
		{"tool retry, external", head + "[[tools]]\nname = \"x\"\nmode = \"external\"\nidempotent = true\nretry = { attempts = 2 }\n",
			"t.toml:5: tools[0]: \"x\": retry does not apply to an external tool"},
		{"secrets of http_get", head + "[[tools]]\nbuiltin = \"http_get\"\nallow_hosts = [\"example.com\"]\nsecrets = [\"TOKEN\"]\n",
			"t.toml:8: tools[0]: secrets: only a command tool or run_code takes secrets"},
		{"secret not a name", head + "[[tools]]\nbuiltin = \"run_code\"\nsecrets = [\"TOKEN=abc\"]\n",
			"t.toml:7: tools[0]: secrets: \"TOKEN=abc\" is not a variable name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := scriptDir(t, "x.jsonl")
			os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("{\"text\": 1}\n"), 0o644)
			_, err := agent.Parse([]byte(c.src), "t.toml", dir)
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if err == nil || !errors.Is(err, agent.ErrInvalid) || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v\nwant it to contain %q", err, want)
			}
		})
	}
}

func TestParametersAsTableOrJSON(t *testing.T) {
	src := `name = "a"
[models.primary]
provider = "script"
script = "x.jsonl"
[[tools]]
name = "t1"
mode = "external"
parameters = { type = "object", properties = { b = { type = "integer" }, a = { type = "string" } } }
[[tools]]
name = "t2"
mode = "external"
parameters = '{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}'
`
	spec, err := agent.Parse([]byte(src), "t.toml", scriptDir(t, "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(spec.Config.Tools[0].Parameters); !strings.Contains(got, `"a":{"type":"string"}`) {
		t.Errorf("table schema = %s", got)
	}
	if got := string(spec.Config.Tools[1].Parameters); got != `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}` {
		t.Errorf("JSON schema order not kept: %s", got)
	}
}

func TestScriptOverrideIsRecorded(t *testing.T) {
	spec, err := agent.Load("../../testdata/agents/coder.toml")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{Script: "../../testdata/scripts/coder.jsonl", ScriptOffset: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, opts, err := agent.FromSource(ag.Source)
	if err != nil || !filepath.IsAbs(opts.Script) || opts.ScriptOffset != 1 {
		t.Fatalf("recorded options = %+v, %v", opts, err)
	}
}

func TestErrorPrefix(t *testing.T) {
	for _, c := range []struct{ policy, want string }{
		{"", ""},
		{"[policy]\nerror_prefix = \"error: \"\n", "error: "},
	} {
		spec, err := agent.Parse([]byte(head+c.policy), "t.toml", scriptDir(t, "x.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.Config.Policy.ErrorPrefix; got != c.want {
			t.Errorf("ErrorPrefix = %q, want %q", got, c.want)
		}
	}
}

// TestHelpersSourceTextKey: [policy] helpers_source_text reaches the
// config without a preset; off when the file leaves it out.
func TestHelpersSourceTextKey(t *testing.T) {
	for policy, want := range map[string]bool{"": false, "[policy]\nhelpers_source_text = true\n": true} {
		spec, err := agent.Parse([]byte(head+policy), "t.toml", scriptDir(t, "x.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.Config.Policy.HelpersSourceText; got != want {
			t.Errorf("%q: HelpersSourceText = %v, want %v", policy, got, want)
		}
	}
}

package agent_test

import (
	"errors"
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
		ag, err := spec.Build(agent.BuildOptions{})
		if err != nil {
			t.Errorf("%s: build: %v", f, err)
			continue
		}
		for _, tool := range spec.Config.Tools {
			if tool.Mode != core.ModeExternal && ag.Tools[tool.Name] == nil {
				t.Errorf("%s: tool %s has no implementation", f, tool.Name)
			}
		}
		back, opts, err := agent.FromSource(ag.Source)
		if err != nil || core.ConfigHash(back.Config) != core.ConfigHash(spec.Config) || opts.Script != "" {
			t.Errorf("%s: source round trip: %v", f, err)
		}
	}
}

func TestErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown key", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"x.jsonl\"\nmodle = \"typo\"\n", "t.toml:5:1: unknown key \"models.primary.modle\""},
		{"syntax", "name = \n", "t.toml:1:"},
		{"bad schema", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"x\"\n\n[[tools]]\nname = \"ok\"\nmode = \"external\"\n\n[[tools]]\nname = \"bad\"\nmode = \"external\"\nparameters = '{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integr\"}}}'\n", "t.toml:10: tools[1] \"bad\": parameters:"},
		{"no model", "name = \"a\"\n", "[models.primary] is required"},
		{"bad provider", "name = \"a\"\n[models.primary]\nprovider = \"gpt\"\n", "t.toml:2: models.primary: provider \"gpt\""},
		{"unknown builtin", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"x\"\n[[tools]]\nbuiltin = \"teleport\"\n", "t.toml:5: tools[0]: unknown built-in tool \"teleport\""},
		{"bad duration", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"x\"\n[[tools]]\nbuiltin = \"run_code\"\ntimeout = \"soon\"\n", "timeout: \"soon\" is not a duration"},
		{"neither kind", "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"x\"\n[[tools]]\nname = \"x\"\n", "give builtin = NAME, command = [...]"},
	}
	for _, c := range cases {
		_, err := agent.Parse([]byte(c.src), "t.toml", t.TempDir())
		if err == nil || !errors.Is(err, agent.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestParametersAsTableOrJSON(t *testing.T) {
	src := `name = "a"
[models.primary]
provider = "script"
script = "x"
[[tools]]
name = "t1"
mode = "external"
parameters = { type = "object", properties = { b = { type = "integer" }, a = { type = "string" } } }
[[tools]]
name = "t2"
mode = "external"
parameters = '{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}'
`
	spec, err := agent.Parse([]byte(src), "t.toml", t.TempDir())
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
	ag, err := spec.Build(agent.BuildOptions{Script: "../../testdata/scripts/coder.jsonl", ScriptOffset: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, opts, err := agent.FromSource(ag.Source)
	if err != nil || !filepath.IsAbs(opts.Script) || opts.ScriptOffset != 1 {
		t.Fatalf("recorded options = %+v, %v", opts, err)
	}
}

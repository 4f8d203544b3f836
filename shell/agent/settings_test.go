package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

func toolNames(ts []core.Tool) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

// TestEnabledSwitchesToolsOff: a [[tools]] or [[mcp]] table with enabled =
// false declares nothing and builds nothing (a built-in that could not be
// built here, an MCP server whose program does not exist), though its keys
// are still checked; tools_enabled = false switches every tool off, the
// memory tools included. A model that calls a tool that is off is told it
// does not exist.
func TestEnabledSwitchesToolsOff(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	const tables = `
[memory]
tools = true

[[tools]]
name = "echo"
command = ["echo", "{{text}}"]
parameters = '{"type": "object", "properties": {"text": {"type": "string"}}}'

[[tools]]
builtin = "web_search"
enabled = false              # no base_url: could not be built

[[tools]]
name = "approve"
mode = "external"
enabled = false

[[tools]]
name = "web_search"          # the name of the table that is off is free
mode = "external"

[[mcp]]
name = "fs"
command = "/nonexistent/mcp-server"
enabled = false
`
	s, err := agent.Parse([]byte(head+tables), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(s.Config.ToolList()); got != "echo,web_search,memory_search,memory_create,memory_traverse" {
		t.Fatalf("declared %s", got)
	}
	ag, err := s.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ag.Tools) != 1 || ag.Tools["echo"] == nil || ag.Close != nil {
		t.Fatalf("implemented %v (close %v)", ag.Tools, ag.Close != nil)
	}
	// Every tool off.
	s, err = agent.Parse([]byte("tools_enabled = false\n"+head+tables), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(s.Config.ToolList()); got != "" || s.Config.Memory.Tools {
		t.Fatalf("with tools_enabled = false, declared %q", got)
	}
	if ag, err = s.Build(context.Background(), agent.BuildOptions{}); err != nil || len(ag.Tools) != 0 {
		t.Fatalf("%v %v", ag, err)
	}
	// A table that is off is still read: a typo in it is an error.
	if _, err := agent.Parse([]byte(head+"[[tools]]\nbuiltin = \"run_code\"\nenabled = false\nlanguage = [\"bash\"]\n"), "t.toml", dir); err == nil ||
		!strings.Contains(err.Error(), `unknown key "tools.language"`) {
		t.Fatalf("a typo in a table that is off: %v", err)
	}
	if _, err := agent.Parse([]byte(head+"[[tools]]\nbuiltin = \"run_code\"\nenabled = \"no\"\n"), "t.toml", dir); err == nil {
		t.Fatal(`enabled = "no" was accepted`)
	}

	// The model calls a tool that is off: the core refuses it, as unknown.
	os.WriteFile(filepath.Join(dir, "calls.jsonl"), []byte(
		`{"tool_calls":[{"id":"c1","name":"run_code","arguments":{"language":"bash","code":"echo hi"}}]}`+"\n"+`{"text":"ok"}`+"\n"), 0o644)
	src := "name = \"a\"\n[models.primary]\nprovider = \"script\"\nscript = \"calls.jsonl\"\n[[tools]]\nbuiltin = \"run_code\"\nenabled = false\n"
	s, err = agent.Parse([]byte(src), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	ag, err = s.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "run it")
	if err != nil || out.Status != store.StatusCompleted || len(out.ToolsUsed) != 0 {
		t.Fatalf("%+v %v", out, err)
	}
	rec, _ := db.LoadLatest(context.Background(), out.RunID)
	if !slices.ContainsFunc(rec.State.Messages, func(m core.Message) bool {
		return strings.Contains(m.Content, `unknown tool "run_code"`)
	}) {
		t.Fatal("the model was not told run_code does not exist")
	}
}

// TestViewOutputSchemaAndCacheKeys: the keys reach the built agent's
// ToolSettings; a key on a tool it does not fit is an error at its line.
func TestViewOutputSchemaAndCacheKeys(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	src := head + `
[[tools]]
name = "summarize"
command = ["cat"]
view = ["run_id", "messages:5"]
output_schema = '{"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}'
idempotent = true
cache = "run"

[[tools]]
builtin = "http_get"
allow_hosts = ["example.com"]
cache = "90m"

[[tools]]
name = "stats"
command = ["cat"]
[tools.output_schema]
type = "array"
`
	s, err := agent.Parse([]byte(src), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := s.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := ag.ToolSettings["summarize"]
	if strings.Join(sum.View, ",") != "run_id,messages:5" || !strings.Contains(string(sum.OutputSchema), `"summary"`) || sum.Cache == nil || sum.Cache.TTL != 0 {
		t.Fatalf("summarize: %+v", sum)
	}
	if get := ag.ToolSettings["http_get"]; get.Cache == nil || get.Cache.TTL != 90*time.Minute || get.View != nil {
		t.Fatalf("http_get: %+v", get)
	}
	if stats := ag.ToolSettings["stats"]; string(stats.OutputSchema) != `{"type":"array"}` {
		t.Fatalf("stats: %+v", stats)
	}
	if len(ag.ToolSettings) != 3 {
		t.Fatalf("settings %v", ag.ToolSettings)
	}
	for _, c := range []struct{ name, src, want string }{
		{"view of a built-in", "[[tools]]\nbuiltin = \"run_code\"\n\nview = [\"step\"]\n", "t.toml:9: tools[0]: view: only a command tool takes a view"},
		{"view of an external tool", "[[tools]]\nname = \"x\"\nmode = \"external\"\nview = [\"step\"]\n", "t.toml:9: tools[0]: view: only a command tool"},
		{"a bad view field", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\nview = [\"step\", \"env\"]\n", `t.toml:9: tools[0]: view: unknown field "env"`},
		{"too many messages", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\nview = [\"messages:5000\"]\n", "t.toml:9: tools[0]: view: \"messages:5000\": N must be"},
		{"output schema of a built-in", "[[tools]]\nbuiltin = \"run_code\"\noutput_schema = '{}'\n", "t.toml:8: tools[0]: output_schema: only a command tool"},
		{"a bad output schema", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\noutput_schema = '{\"type\": \"strng\"}'\n", "t.toml:9: tools[0]: output_schema: "},
		{"output schema not JSON", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\noutput_schema = '{'\n", "t.toml:9: tools[0]: output_schema: not valid JSON"},
		{"cache, not idempotent", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\ncache = \"run\"\n", "t.toml:9: tools[0]: cache: only idempotent tools are cached"},
		{"cache of run_code", "[[tools]]\nbuiltin = \"run_code\"\ncache = \"1h\"\n", "t.toml:8: tools[0]: cache: only idempotent tools are cached"},
		{"cache of the files group", "[[tools]]\nbuiltin = \"files\"\nroot = \".\"\ncache = \"run\"\n", "t.toml:9: tools[0]: cache: write_file changes files"},
		{"cache of an external tool", "[[tools]]\nname = \"x\"\nmode = \"external\"\nidempotent = true\ncache = \"run\"\n", "t.toml:10: tools[0]: cache: the caller runs an external tool"},
		{"a bad cache", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\nidempotent = true\ncache = \"forever\"\n", `t.toml:10: tools[0]: cache: want "run"`},
		{"a zero cache", "[[tools]]\nname = \"x\"\ncommand = [\"cat\"]\nidempotent = true\ncache = \"0s\"\n", `cache: want "run"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := agent.Parse([]byte(head+"\n"+c.src), "t.toml", dir)
			if !errors.Is(err, agent.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %q", err, c.want)
			}
		})
	}
}

// TestCacheVersionFollowsTheTable: a cached tool's version (which keys its
// results across runs) is the same for the same table, also after a change
// of how long results are kept, and another when anything else of the
// table changes: its command, its declaration, a built-in's options.
func TestCacheVersionFollowsTheTable(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	version := func(table, tool string) string {
		t.Helper()
		s, err := agent.Parse([]byte(head+"\n[[tools]]\n"+table), "t.toml", dir)
		if err != nil {
			t.Fatal(err)
		}
		ag, err := s.Build(context.Background(), agent.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := ag.ToolSettings[tool].Cache
		if c == nil || c.Version == "" {
			t.Fatalf("%s: no cache version in %+v", tool, ag.ToolSettings[tool])
		}
		return c.Version
	}
	const lookup = "name = \"lookup\"\nidempotent = true\nparameters = '{\"type\": \"object\", \"properties\": {\"q\": {\"type\": \"string\"}}}'\n"
	base := version(lookup+"command = [\"cat\"]\ncache = \"1h\"\n", "lookup")
	if got := version(lookup+"command = [\"cat\"]\ncache = \"1h\"\n", "lookup"); got != base {
		t.Fatalf("the same table: %s, then %s", base, got)
	}
	if got := version(lookup+"command = [\"cat\"]\ncache = \"2h\"\n", "lookup"); got != base {
		t.Fatalf("another ttl changed the version: %s, then %s", base, got)
	}
	for what, table := range map[string]string{
		"another command":     lookup + "command = [\"tac\"]\ncache = \"1h\"\n",
		"another description": lookup + "description = \"Looks up.\"\ncommand = [\"cat\"]\ncache = \"1h\"\n",
		"another env":         lookup + "command = [\"cat\"]\nenv = [\"LANG\"]\ncache = \"1h\"\n",
	} {
		if got := version(table, "lookup"); got == base {
			t.Errorf("%s kept the version %s", what, got)
		}
	}
	get := version("builtin = \"http_get\"\nallow_hosts = [\"example.com\"]\ncache = \"1h\"\n", "http_get")
	if version("builtin = \"http_get\"\nallow_hosts = [\"example.org\"]\ncache = \"1h\"\n", "http_get") == get {
		t.Error("other allowed hosts kept the version")
	}
}

// TestBuildDeclaresEachToolOnce: the built agent's tool list is the file's,
// in its order, and each internal tool's implementation is declared as the
// file declares it (a description or idempotent key overriding a
// built-in's own), so the runner finds nothing to refuse.
func TestBuildDeclaresEachToolOnce(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	src := head + `
[[tools]]
builtin = "run_code"
description = "Run a snippet."
[[tools]]
name = "approve"
mode = "external"
[[tools]]
builtin = "files"
root = "."
idempotent = false
`
	s, err := agent.Parse([]byte(src), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := s.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(ag.Config.Tools, s.Config.Tools, func(a, b core.Tool) bool { return a.Name == b.Name && a.Mode == b.Mode }) ||
		core.ConfigHash(ag.Config) != core.ConfigHash(s.Config) {
		t.Fatalf("built %s, file %s", toolNames(ag.Config.Tools), toolNames(s.Config.Tools))
	}
	if d := ag.Tools["run_code"].Spec().Description; d != "Run a snippet." {
		t.Fatalf("run_code is declared as %q", d)
	}
	if ag.Tools["read_file"].Spec().Idempotent || ag.Tools["approve"] != nil {
		t.Fatal("the implementations are not declared as the file declares them")
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "hi"); err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
}

// TestRateKey: rate = "N/unit" reaches the tool's settings; a bad rate or
// one on an external tool is an error naming the key.
func TestRateKey(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	s, err := agent.Parse([]byte(head+`
[[tools]]
builtin = "system_stats"
rate = "10/min"
`), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := s.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := ag.ToolSettings["system_stats"].Rate; r == nil || *r != (shell.Rate{N: 10, Per: time.Minute}) {
		t.Fatalf("rate %+v", r)
	}
	for _, extra := range []string{"[[tools]]\nbuiltin = \"system_stats\"\nrate = \"lots\"\n",
		"[[tools]]\nname = \"ask\"\nmode = \"external\"\nrate = \"1/s\"\n"} {
		if _, err := agent.Parse([]byte(head+"\n"+extra), "t.toml", dir); err == nil || !strings.Contains(err.Error(), "rate") {
			t.Errorf("%q: %v", extra, err)
		}
	}
}

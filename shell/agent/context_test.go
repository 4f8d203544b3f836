package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// [context] and the primary model's window: a bound is on whenever one is
// known, its settings are checked, and enabled = false turns it off.
func TestContextTable(t *testing.T) {
	parse := func(src string) (*agent.Spec, error) {
		return agent.Parse([]byte(src), "t.toml", scriptDir(t, "x.jsonl"))
	}
	spec, err := parse(head)
	if err != nil || spec.Config.Context != nil {
		t.Fatalf("a script model with no window: %+v %v", spec.Config.Context, err)
	}
	spec, err = parse(head + "model = \"gpt-4o-2024-08-06\"\n")
	if err != nil || spec.Config.Context == nil || spec.Config.Context.MaxTokens != 102_400 || spec.Config.Context.BytesPerToken != 4 {
		t.Fatalf("a known window: %+v %v", spec.Config.Context, err)
	}
	spec, err = parse(head + "context_window = 32000\n[context]\nmax_fraction = 0.5\nkeep_turns = 2\nstrategies = [\"summarize\"]\nsummary_words = 100\n")
	want := core.ContextPolicy{MaxTokens: 16_000, KeepTurns: 2, Strategies: []core.ContextStrategy{core.Summarize}, SummaryWords: 100, BytesPerToken: 4}
	if err != nil || spec.Config.Context == nil || spec.Config.Context.MaxTokens != want.MaxTokens || spec.Config.Context.KeepTurns != 2 ||
		len(spec.Config.Context.Strategies) != 1 || spec.Config.Context.SummaryWords != 100 {
		t.Fatalf("a window and a fraction: %+v %v", spec.Config.Context, err)
	}
	spec, err = parse(head + "model = \"gpt-4o\"\n[context]\nenabled = false\n")
	if err != nil || spec.Config.Context != nil {
		t.Fatalf("enabled = false: %+v %v", spec.Config.Context, err)
	}
	for _, c := range []struct{ src, want string }{
		{head + "[context]\nkeep_turns = 2\n", "needs max_tokens"},
		{head + "context_window = 1000\n[context]\nmax_tokens = 2000\n", "over the primary model's context window of 1000"},
		{head + "[context]\nmax_tokens = 100\nstrategies = [\"forget\"]\n", `"forget" is not one of elide_results, summarize`},
		{head + "[context]\nmax_tokens = 100\nsummarizer = \"helper\"\n", "no [models.helper]"},
		{head + "[context]\nmax_tokens = 100\nmax_fraction = 1.5\n", "not in (0, 1]"},
	} {
		if _, err := parse(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
	if w := agent.KnownWindow("claude-sonnet-4-5"); w != 200_000 {
		t.Errorf("claude's window: %d", w)
	}
}

// [[agents]]: a sub-agent or a handoff is a tool of the agent; a table
// that names no file, a file that is missing, an unknown mode, or a handoff
// with parameters is refused; an agent file that names itself is refused
// when built, at the depth limit.
func TestAgentsTables(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	parse := func(src string) (*agent.Spec, error) { return agent.Parse([]byte(src), "t.toml", dir) }
	for _, c := range []struct{ src, want string }{
		{head + "[[agents]]\nname = \"r\"\n", "needs a name and a file"},
		{head + "[[agents]]\nname = \"r\"\nfile = \"nope.toml\"\n", "nope.toml"},
		{head + "[[agents]]\nname = \"r\"\nfile = \"x.jsonl\"\nmode = \"swarm\"\n", `mode "swarm" is not one of tool, handoff`},
		{head + "[[agents]]\nname = \"r\"\nfile = \"x.jsonl\"\nmode = \"handoff\"\nparameters = '{\"type\": \"object\"}'\n", "a handoff takes no parameters"},
	} {
		if _, err := parse(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
	self := filepath.Join(dir, "self.toml")
	if err := os.WriteFile(self, []byte(head+"[[agents]]\nname = \"again\"\nfile = \"self.toml\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := agent.Load(self)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(spec.Config.Tools); names != "again" {
		t.Fatalf("the sub-agent's tool: %s", names)
	}
	if _, err := spec.Build(context.Background(), agent.BuildOptions{}); err == nil || !strings.Contains(err.Error(), "nest more than 3 deep") {
		t.Fatalf("a file that names itself: %v", err)
	}
}

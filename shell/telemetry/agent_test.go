package telemetry

import (
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// The spans name each model's provider and server as the provider table
// says: the conventions' name for openai and anthropic, stepwise.NAME for
// the others, and the host of base_url or of the provider's default.
func TestAgentOfNamesProvidersFromTheTable(t *testing.T) {
	for _, c := range []struct {
		toml string
		want modelInfo
	}{
		{`provider = "anthropic"` + "\nmodel = \"claude\"\n", modelInfo{"anthropic", "claude", "api.anthropic.com", 443}},
		{`provider = "openai"` + "\nmodel = \"gpt\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n", modelInfo{"openai", "gpt", "127.0.0.1", 8080}},
		{`provider = "openai-responses"` + "\nmodel = \"o4\"\n", modelInfo{"stepwise.openai-responses", "o4", "api.openai.com", 443}},
	} {
		spec, err := agent.Parse([]byte("name = \"a\"\n[models.primary]\n"+c.toml), "a.toml", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got := agentOf("a", spec.Source(agent.BuildOptions{})).model(core.Primary); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.toml, got, c.want)
		}
	}
	if got := agentOf("a", []byte("not an agent")).model(core.Primary); got.provider != unknownProvider {
		t.Errorf("unreadable agent: %+v", got)
	}
}

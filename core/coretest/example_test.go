package coretest_test

import (
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// An example of testing one's own agent config: whatever the model replies and
// the tools return, the run ends cleanly within its limits.
func TestExampleAgentAlwaysEnds(t *testing.T) {
	cfg := core.DefaultConfig()
	cfg.Name = "support"
	cfg.Models.Helper = "big"
	cfg.Limits.MaxSteps = 12
	cfg.Tools = []core.Tool{
		{Name: "lookup_order", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
		{Name: "refund", Mode: core.ModeExternal, Parameters: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
	}
	rapid.Check(t, func(t *rapid.T) {
		final, _ := coretest.CheckRun(t, cfg, "where is my order?")
		if !final.Done() {
			t.Fatalf("run did not end: %s", core.DescribeState(final))
		}
	})
}

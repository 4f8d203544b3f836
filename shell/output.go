package shell

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/schema"
)

// checkOutput makes a successful result whose output does not fit the
// tool's output schema (when it declares one) the tool's error, naming the
// mismatch; the model reads it like any tool error. A failed result is
// left as it is.
func checkOutput(raw json.RawMessage, c core.ToolCall, res core.ToolResult) core.ToolResult {
	if len(raw) == 0 || res.Failed() {
		return res
	}
	s, err := schema.CompileOutput(raw)
	if err == nil {
		err = s.Check(res.Output)
	}
	if err == nil {
		return res
	}
	return core.ToolResult{CallID: res.CallID, Error: fmt.Sprintf("%s: %v", c.Name, err), Sources: res.Sources}
}

package tools

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// decodeArgs decodes a call's arguments into v (shell.DecodeArgs).
func decodeArgs(call core.ToolCall, v any) error { return shell.DecodeArgs(call.Args, v) }

// failf returns a failed result for call, prefixed with the tool's name.
func failf(call core.ToolCall, format string, args ...any) core.ToolResult {
	return core.ToolResult{CallID: call.ID, Error: call.Name + ": " + fmt.Sprintf(format, args...)}
}

// transientf is failf for a failure that may go away on its own (a
// refused connection, a timeout, a 5xx): an idempotent tool's call is
// retried by its retry policy, then the run stalls.
func transientf(call core.ToolCall, format string, args ...any) core.ToolResult {
	r := failf(call, format, args...)
	r.Transient = true
	return r
}

// interrupted is the result when the caller's context ended the call.
func interrupted(call core.ToolCall, err error) core.ToolResult {
	return failf(call, "interrupted before it finished (%v)", err)
}

package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
)

// decodeArgs decodes a call's arguments into v, refusing unknown fields and
// trailing data. The core has already checked them against the schema; this
// guards against a caller that did not.
func decodeArgs(call core.ToolCall, v any) error {
	raw := bytes.TrimSpace(call.Args)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	if dec.More() {
		return errors.New("bad arguments: more than one JSON value")
	}
	return nil
}

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

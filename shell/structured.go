package shell

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ObjectSchema reports whether schema describes a JSON object at its root:
// what the providers' native structured output takes (an answer of another
// type is asked for in the system prompt and checked by the core alone).
func ObjectSchema(schema json.RawMessage) bool {
	var root struct {
		Type any `json:"type"`
	}
	return len(schema) > 0 && json.Unmarshal(schema, &root) == nil && root.Type == "object"
}

// ErrNoOutput: a run has no structured output to decode.
var ErrNoOutput = errors.New("the run has no structured output")

// OutputAs decodes the structured output of a completed run of an agent
// with an output schema ([output], core.OutputPolicy) into a T:
//
//	type Verdict struct {
//		Label string  `json:"label"`
//		Score float64 `json:"score"`
//	}
//	v, err := shell.OutputAs[Verdict](out)
//
// The core has checked the value against the schema; OutputAs refuses a
// value T cannot hold (a field of another type) and ErrNoOutput for a run
// that did not complete or whose agent has no schema.
func OutputAs[T any](out Outcome) (T, error) {
	var v T
	if len(out.Output) == 0 {
		return v, fmt.Errorf("run %s (%s): %w: its agent has no [output] schema, or it did not complete", out.RunID, out.Status, ErrNoOutput)
	}
	if err := json.Unmarshal(out.Output, &v); err != nil {
		return v, fmt.Errorf("run %s: decode its output into %T: %w", out.RunID, v, err)
	}
	return v, nil
}

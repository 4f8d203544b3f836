package core

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// The core's side of the JSON Schema validator (package schema): a tool's
// parameter schema compiled once (Compile, Config.argSchema) and applied to
// its calls.

// argSchema is a tool's compiled parameter schema.
type argSchema = schema.Schema

// checkSchema reports whether raw is a usable parameter schema: empty means
// the tool takes no arguments; otherwise an object schema using only the
// supported keywords, with patterns that compile and required names that
// are properties.
func checkSchema(raw json.RawMessage) error {
	_, err := schema.Compile(raw) // a schema that compiles is valid
	return err
}

// validateArgs checks a call's arguments (decoded by schema.DecodeArgs)
// against t's parameter schema, compiled now, and returns them normalized
// (see schema.Schema.Validate). The input is never modified.
func validateArgs(t Tool, args map[string]any, rejectUnknown bool) (map[string]any, error) {
	s, err := schema.Compile(t.Parameters)
	if err != nil {
		return nil, fmt.Errorf("the tool's parameter schema is unusable: %v", err)
	}
	return s.Validate(args, rejectUnknown)
}

// checkArgs checks a call's arguments against its tool's compiled schema
// under the agent's policy.
func checkArgs(s *argSchema, args map[string]any, p Policy) (map[string]any, error) {
	return s.Check(args, schema.Checks{RejectUnknown: p.RejectUnknownArgs, StrictNumbers: p.StrictNumbers})
}

// OutputSchema is a compiled JSON Schema that a tool's output is checked
// against.
//
// Deprecated: use schema.Output.
type OutputSchema = schema.Output

// ErrOutputSchema wraps every error OutputSchema.Check returns.
//
// Deprecated: use schema.ErrOutput.
var ErrOutputSchema = schema.ErrOutput

// CompileOutputSchema compiles a tool's output schema.
//
// Deprecated: use schema.CompileOutput.
func CompileOutputSchema(raw json.RawMessage) (*OutputSchema, error) {
	return schema.CompileOutput(raw)
}

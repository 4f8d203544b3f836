package schema

import (
	"encoding/json"
	"fmt"
)

// Tool is the part of a core tool these tests use: a name and its
// parameter schema (the core's Tool cannot be imported here).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// checkSchema reports whether raw compiles as a parameter schema.
func checkSchema(raw json.RawMessage) error {
	_, err := Compile(raw)
	return err
}

// validateArgs is what the core's validateArgs does with a tool: compile
// its schema, then validate args against it.
func validateArgs(t Tool, args map[string]any, rejectUnknown bool) (map[string]any, error) {
	s, err := Compile(t.Parameters)
	if err != nil {
		return nil, fmt.Errorf("the tool's parameter schema is unusable: %v", err)
	}
	return s.Validate(args, rejectUnknown)
}

// decodeArgs and canonicalJSON keep the tests' old names.
var (
	decodeArgs    = DecodeArgs
	canonicalJSON = Canonical
)

package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidCall wraps every error ValidateCall returns; the message names the
// tool and what to fix, and goes back to the model as a correction.
var ErrInvalidCall = errors.New("invalid tool call")

// ValidateCall checks a parsed call against the agent's tools and returns it
// with canonical arguments (defaults injected, unknown arguments dropped or
// refused by policy). The error says what to fix, in words a model can use.
func ValidateCall(cfg Config, c NativeCall) (ToolCall, error) {
	t, ok := cfg.tool(c.Name)
	if !ok {
		return ToolCall{}, fmt.Errorf("%w: unknown tool %q; the tools are: %s", ErrInvalidCall, c.Name, strings.Join(toolNames(cfg.tools()), ", "))
	}
	args, err := decodeArgs(c.Arguments)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	schema, err := cfg.argSchema(t)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): the tool's parameter schema is unusable: %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	args, err = checkArgs(schema, args, cfg.Policy.RejectUnknownArgs)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	raw, err := canonicalJSON(args)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	tc := ToolCall{ID: c.ID, Name: c.Name, Args: raw}
	if _, isMem := memoryKind(c.Name); isMem && cfg.Memory.Tools {
		if _, err := decodeMemoryArgs(tc); err != nil {
			return ToolCall{}, fmt.Errorf("%w: %v", ErrInvalidCall, err)
		}
	}
	return tc, nil
}

// decodeArgs reads call arguments: a JSON object (numbers kept exact), in
// which no object, at any depth, has a key twice. Empty arguments mean no
// arguments.
func decodeArgs(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	if obj, ok := decodeObjectFast(text); ok {
		return obj, nil
	}
	return decodeArgsLibrary(text)
}

// decodeArgsLibrary is decodeArgs through encoding/json: every input, and
// the error texts the model reads.
func decodeArgsLibrary(text string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("arguments hold more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, found %s", jsonKind(v))
	}
	if p, dup := repeatedKey(text); dup {
		// encoding/json would keep the last one silently; which one the
		// model meant is not ours to guess.
		return nil, fmt.Errorf("argument %q is given more than once; give each argument once", p.String())
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core/schema"
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
	args, err := schema.DecodeArgs(c.Arguments)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	s, err := cfg.argSchema(t)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): the tool's parameter schema is unusable: %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	args, err = checkArgs(s, args, cfg.Policy)
	if err != nil {
		return ToolCall{}, fmt.Errorf("%w: %s (call %s): %v", ErrInvalidCall, c.Name, c.ID, err)
	}
	raw, err := schema.Canonical(args)
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

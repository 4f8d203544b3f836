package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stepwise-agent/stepwise/core"
)

// GoTool is a Go function made a tool by NewTool. Its declaration comes
// from the function's argument type; register it with Registry.Internal.
type GoTool struct {
	// Idempotent declares that running the function again after a crash
	// left its outcome unknown is safe (and lets its results be cached).
	// Set it before the tool is registered.
	Idempotent bool

	name, description string
	params            json.RawMessage
	props             []string // the top-level property names
	err               error    // a declaration problem, reported on registration
	call              func(ctx context.Context, args []byte) (string, error)
}

// NewTool makes fn a tool called name. Its JSON Schema is derived from the
// argument type A, which must be a struct (or a map with string keys):
//
//   - each exported field is a property named as encoding/json names it
//     (json:"name"; json:"-" leaves it out), in field order;
//   - a field is required unless its json tag has omitempty or omitzero;
//   - a jsonschema:"..." tag is the property's description;
//   - strings, booleans, integers (bounded by their Go type), floats,
//     slices and arrays (items), maps with string keys and nested structs
//     map to their JSON types; a pointer, slice or map field also takes
//     null;
//   - objects are closed (additionalProperties false), so the core refuses
//     an argument the struct has no field for.
//
// The core validates a call's arguments against that schema before the
// shell runs the tool, so fn gets them decoded strictly into A, exactly as
// given (no coercion; an unknown field is an error). fn's string is the
// output the model reads; its error is the tool's failure, which the
// model reads too (a *TransientError marks it as one that may go away,
// retried for an idempotent tool). fn gets the RunContext of the call,
// with the View the tool declared, from RunContextFrom(ctx).
//
// A type NewTool cannot describe (a channel, a func, a map with other
// keys, a recursive type) or a bad name makes a GoTool whose registration
// fails with the reason.
func NewTool[A any](name, description string, fn func(ctx context.Context, args A) (string, error)) *GoTool {
	t := &GoTool{name: name, description: description}
	if !core.ValidToolName(name) {
		t.err = fmt.Errorf("tool name %q: must be 1-64 letters, digits, '_', '-' or '.'", name)
		return t
	}
	if fn == nil {
		t.err = fmt.Errorf("tool %q: no function", name)
		return t
	}
	var zero A
	s, err := jsonschema.For[A](nil)
	if err != nil {
		t.err = fmt.Errorf("tool %q: no JSON Schema for its arguments (%T): %v", name, zero, err)
		return t
	}
	if s.Type != "object" {
		t.err = fmt.Errorf("tool %q: its arguments (%T) must be a struct or a map with string keys: a call's arguments are a JSON object", name, zero)
		return t
	}
	if t.params, err = json.Marshal(s); err != nil {
		t.err = fmt.Errorf("tool %q: its schema does not encode: %v", name, err)
		return t
	}
	probe := core.Config{Name: "probe", Models: core.Models{Primary: "probe"}, Tools: []core.Tool{{Name: name, Parameters: t.params}}}
	if err := probe.Validate(); err != nil {
		t.err = fmt.Errorf("tool %q: the schema derived from %T is not usable: %v", name, zero, err)
		return t
	}
	if at := reflect.TypeFor[A](); at.Kind() == reflect.Struct {
		t.props = append([]string{}, s.PropertyOrder...)
	}
	t.call = func(ctx context.Context, raw []byte) (string, error) {
		var a A
		if err := DecodeArgs(raw, &a); err != nil {
			return "", err
		}
		return fn(ctx, a)
	}
	return t
}

// Spec declares the tool: its name, description and derived schema.
func (t *GoTool) Spec() core.Tool {
	return core.Tool{Name: t.name, Description: t.description, Parameters: t.params, Idempotent: t.Idempotent}
}

// Err is the problem NewTool found with the tool's declaration, or nil.
func (t *GoTool) Err() error { return t.err }

// Run decodes the call's arguments and calls the function with ctx
// carrying rc (RunContextFrom).
func (t *GoTool) Run(ctx context.Context, call core.ToolCall, rc RunContext) core.ToolResult {
	if t.err != nil {
		return core.ToolResult{CallID: call.ID, Error: t.err.Error()}
	}
	if t.props != nil {
		if err := knownKeys(call.Args, t.props); err != nil {
			return core.ToolResult{CallID: call.ID, Error: call.Name + ": bad arguments: " + err.Error()}
		}
	}
	out, err := t.call(context.WithValue(ctx, runContextKey{}, rc), call.Args)
	if err != nil {
		var te *TransientError
		return core.ToolResult{CallID: call.ID, Error: err.Error(), Transient: errors.As(err, &te)}
	}
	return core.ToolResult{CallID: call.ID, Output: out}
}

type runContextKey struct{}

// RunContextFrom returns the RunContext of the call a Go tool (NewTool) is
// running for: its run, step, agent and the View it declared.
func RunContextFrom(ctx context.Context) (RunContext, bool) {
	rc, ok := ctx.Value(runContextKey{}).(RunContext)
	return rc, ok
}

// DecodeArgs decodes a call's arguments (a JSON object; empty means {})
// into v, refusing unknown fields and trailing data: how the built-in and
// Go tools read theirs. The core has already checked them against the
// tool's schema; this guards against a caller that did not.
func DecodeArgs(raw []byte, v any) error {
	raw = bytes.TrimSpace(raw)
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

// knownKeys refuses a top-level key that is not exactly a property name:
// encoding/json matches field names without regard to case, the schema
// does not.
func knownKeys(raw []byte, props []string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(props, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("unknown argument(s) %s (the arguments are: %s)", strings.Join(unknown, ", "), strings.Join(props, ", "))
	}
	return nil
}

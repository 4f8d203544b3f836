package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// CustomFormat is a tool-call format defined outside core: a parser and the
// renderers that go with it. Register it under a name with RegisterFormat,
// then select it with Config.Format like a built-in format.
//
// Its functions run inside Step and Resume, so they must be as pure as the
// built-in parsers: no I/O, no clock, no randomness, no state kept between
// calls, and no panics (fuzz them). The same input must always give the same
// output, byte for byte, or stored runs will not replay.
type CustomFormat struct {
	// Parse reads the tool calls out of a reply's text, in the order the
	// model wrote them; tools is the agent's tool list. A reply without a
	// call is a final answer: return its text and no calls. Arguments are raw
	// JSON text; the validator checks them against the tool's schema. An
	// error goes back to the model as a correction: return a *ParseError (its
	// Format is filled in when empty) or any other error, which is wrapped in
	// one. Required.
	Parse func(text string, tools []Tool) (Parsed, error)
	// RenderCall writes one call as a whole reply that Parse reads back as
	// that call. Required: the tool docs show it as the example, and
	// coretest writes generated replies with it.
	RenderCall func(c NativeCall) string
	// Docs writes the tool documentation for the system prompt. Nil gives a
	// generic page: an example written by RenderCall and each tool's
	// parameters listed as ToolParamDocs lists them.
	Docs func(tools []Tool) string
	// RenderResults writes a turn's results back to the model, in the order
	// of calls (results are aligned with calls). Nil gives labeled
	// paragraphs, "Result of NAME (call ID):" then the text.
	RenderResults func(calls []ToolCall, results []ToolResult) string
}

// ErrFormatRegistration wraps every error RegisterFormat returns.
var ErrFormatRegistration = errors.New("cannot register the format")

// builtinFormats are the formats core implements itself, in documentation order.
var builtinFormats = []Format{FormatNative, FormatXML, FormatJSON, FormatFenced, FormatStrict, FormatHelpers, FormatAuto}

// formatRegistry holds the registered formats. It is written only by
// RegisterFormat, which user packages call from init, and a name once
// registered never changes meaning, so every lookup during a run gives the
// same answer (docs/adr/0021-seed-parity.md).
var formatRegistry = struct {
	sync.RWMutex
	m map[Format]CustomFormat
}{m: map[Format]CustomFormat{}}

// RegisterFormat makes f available as Config.Format = name. Call it from an
// init function of the package that defines the format, so that every
// program that runs (or replays) an agent using it has it registered before
// the first config is validated: a config whose format is not registered is
// refused by Validate and Start, naming the format.
//
// The name is 1 to 64 letters, digits, '_', '-' or '.', and may not be a
// built-in format's name or one already registered (a name never changes
// meaning). Parse and RenderCall are required.
func RegisterFormat(name Format, f CustomFormat) error {
	switch {
	case !ValidToolName(string(name)):
		return fmt.Errorf("%w %q: a name is 1-64 letters, digits, '_', '-' or '.'", ErrFormatRegistration, name)
	case slices.Contains(builtinFormats, name):
		return fmt.Errorf("%w %q: it is a built-in format", ErrFormatRegistration, name)
	case f.Parse == nil:
		return fmt.Errorf("%w %q: Parse is nil", ErrFormatRegistration, name)
	case f.RenderCall == nil:
		return fmt.Errorf("%w %q: RenderCall is nil", ErrFormatRegistration, name)
	}
	formatRegistry.Lock()
	defer formatRegistry.Unlock()
	if _, dup := formatRegistry.m[name]; dup {
		return fmt.Errorf("%w %q: it is already registered", ErrFormatRegistration, name)
	}
	formatRegistry.m[name] = f
	return nil
}

// RegisteredFormats lists the names registered with RegisterFormat, sorted.
func RegisteredFormats() []Format {
	formatRegistry.RLock()
	defer formatRegistry.RUnlock()
	names := make([]Format, 0, len(formatRegistry.m))
	for name := range formatRegistry.m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// customFormat finds a registered format.
func customFormat(name Format) (CustomFormat, bool) {
	formatRegistry.RLock()
	defer formatRegistry.RUnlock()
	f, ok := formatRegistry.m[name]
	return f, ok
}

// knownFormat reports whether f is a built-in or registered format.
func knownFormat(f Format) bool {
	if slices.Contains(builtinFormats, f) {
		return true
	}
	_, ok := customFormat(f)
	return ok
}

// unknownFormatText says that a config's format is neither built in nor registered.
func unknownFormatText(f Format) string {
	msg := fmt.Sprintf("format %q is not one of native, xml, json, fenced, strict, helpers, auto", f)
	if reg := RegisteredFormats(); len(reg) > 0 {
		names := make([]string, len(reg))
		for i, r := range reg {
			names[i] = string(r)
		}
		msg += " or the registered formats " + strings.Join(names, ", ")
	}
	return msg
}

// parseCustom runs a registered format's parser and makes its error a
// ParseError of that format.
func parseCustom(name Format, f CustomFormat, text string, tools []Tool) (Parsed, error) {
	p, err := f.Parse(text, tools)
	if err == nil {
		return p, nil
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.Format == "" {
			cp := *pe
			cp.Format = name
			return Parsed{}, &cp
		}
		return Parsed{}, pe
	}
	return Parsed{}, &ParseError{Format: name, Msg: err.Error()}
}

// alignedResults pads or cuts results to one per call, so a renderer can
// index them by call.
func alignedResults(calls []ToolCall, results []ToolResult) []ToolResult {
	if len(results) == len(calls) {
		return results
	}
	out := make([]ToolResult, len(calls))
	copy(out, results)
	return out
}

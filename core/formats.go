package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FormatSpec describes a tool-call format: a parser and the renderers that
// go with it. Every format is one: each built-in format declares its
// FormatSpec in its own file (format_xml.go, ...) and one line of
// builtinFormats; a program adds its own with Formats.With and selects it
// with Config.Format like a built-in one.
//
// Its functions run inside Step and Resume, so they must be as pure as the
// built-in parsers: no I/O, no clock, no randomness, no state kept between
// calls, and no panics (fuzz them). The same input must always give the same
// output, byte for byte, or stored runs will not replay.
type FormatSpec struct {
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
	// paragraphs, "Result of NAME (call ID):" (", failed:" for a failed
	// call) then the text.
	RenderResults func(calls []ToolCall, results []ToolResult) string

	// What only a built-in format sets (Formats.With cannot):

	// parseReply reads the whole reply, its native calls too, and its
	// errors are the format's own; nil: Parse on the reply's text.
	parseReply func(r ModelReply, tools []Tool) (Parsed, error)
	// nativeTools sends the tools with the model request, as function
	// definitions the model calls natively.
	nativeTools bool
	// historyResults writes the result of a call whose tool has a Summary
	// as a line of the seed's loop history (renderTurnResults).
	historyResults bool
}

// CustomFormat is the former name of FormatSpec.
//
// Deprecated: use FormatSpec.
type CustomFormat = FormatSpec

// builtinFormats is the table of the formats core implements, in
// documentation order. A built-in format is its file, which declares its
// FormatSpec, and its line here.
var builtinFormats = []struct {
	name Format
	spec FormatSpec
}{
	{FormatNative, nativeFormat},
	{FormatXML, xmlFormat},
	{FormatJSON, jsonFormat},
	{FormatFenced, fencedFormat},
	{FormatStrict, strictFormat},
	{FormatHelpers, helpersFormat},
	{FormatAuto, autoFormat},
}

// builtinFormat finds a built-in format; "" is native.
func builtinFormat(name Format) (FormatSpec, bool) {
	if name == "" {
		name = FormatNative
	}
	for _, b := range builtinFormats {
		if b.name == name {
			return b.spec, true
		}
	}
	return FormatSpec{}, false
}

// Formats is a table of tool-call formats by name: the built-in formats and
// those a program adds with With. A table never changes once made (With
// returns a new one), so a config compiled with it (Compile) reads the same
// formats for as long as it lives. The nil *Formats is the built-in
// formats alone; every method accepts it.
type Formats struct {
	added map[Format]FormatSpec
}

// ErrFormatRegistration wraps every error Formats.With returns.
var ErrFormatRegistration = errors.New("cannot register the format")

// With returns a table holding fs's formats and f under name. The name is
// 1 to 64 letters, digits, '_', '-' or '.', and may not be a built-in
// format's name or one fs already has (a name never changes meaning).
// Parse and RenderCall are required. fs itself is left as it was.
func (fs *Formats) With(name Format, f FormatSpec) (*Formats, error) {
	_, builtin := builtinFormat(name)
	switch {
	case !ValidToolName(string(name)):
		return fs, fmt.Errorf("%w %q: a name is 1-64 letters, digits, '_', '-' or '.'", ErrFormatRegistration, name)
	case builtin:
		return fs, fmt.Errorf("%w %q: it is a built-in format", ErrFormatRegistration, name)
	case f.Parse == nil:
		return fs, fmt.Errorf("%w %q: Parse is nil", ErrFormatRegistration, name)
	case f.RenderCall == nil:
		return fs, fmt.Errorf("%w %q: RenderCall is nil", ErrFormatRegistration, name)
	}
	added := map[Format]FormatSpec{}
	if fs != nil {
		if _, dup := fs.added[name]; dup {
			return fs, fmt.Errorf("%w %q: it is already registered", ErrFormatRegistration, name)
		}
		maps.Copy(added, fs.added)
	}
	f.parseReply, f.nativeTools, f.historyResults = nil, false, false
	added[name] = f
	return &Formats{added: added}, nil
}

// Lookup finds a format by name, built-in ("" is native) or added.
func (fs *Formats) Lookup(name Format) (FormatSpec, bool) {
	if f, ok := builtinFormat(name); ok {
		return f, true
	}
	if fs == nil {
		return FormatSpec{}, false
	}
	f, ok := fs.added[name]
	return f, ok
}

// Added lists the names of the formats added with With, sorted.
func (fs *Formats) Added() []Format {
	if fs == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(fs.added))
}

// Names lists every format of the table: the built-in ones in
// documentation order, then the added ones, sorted.
func (fs *Formats) Names() []Format {
	names := make([]Format, 0, len(builtinFormats))
	for _, b := range builtinFormats {
		names = append(names, b.name)
	}
	return append(names, fs.Added()...)
}

// Parse reads the tool calls out of a reply in format f, as the package
// function Parse does, for every format of the table.
func (fs *Formats) Parse(f Format, r ModelReply, tools []Tool) (Parsed, error) {
	spec, ok := fs.Lookup(f)
	if !ok {
		return Parsed{}, &ParseError{Format: f, Msg: "unknown format"}
	}
	return spec.parse(f, r, tools)
}

// RenderCall writes one call in format f, as the package function
// RenderCall does, for every format of the table.
func (fs *Formats) RenderCall(f Format, c NativeCall) string {
	spec, ok := fs.Lookup(f)
	if !ok {
		spec = nativeFormat // an unknown format writes the native object
	}
	return spec.RenderCall(c)
}

// RenderResults writes a turn's results in format f, as the package
// function RenderResults does, for every format of the table.
func (fs *Formats) RenderResults(f Format, calls []ToolCall, results []ToolResult) string {
	spec, ok := fs.Lookup(f)
	if !ok {
		spec = nativeFormat // an unknown format writes labeled paragraphs
	}
	return spec.renderResults(calls, results)
}

// parse reads a reply in the format, named name.
func (s FormatSpec) parse(name Format, r ModelReply, tools []Tool) (Parsed, error) {
	if s.parseReply != nil {
		return s.parseReply(r, tools)
	}
	return parseCustom(name, s, r.Text, tools)
}

// renderResults writes results with the format's RenderResults, or as
// labeled paragraphs.
func (s FormatSpec) renderResults(calls []ToolCall, results []ToolResult) string {
	results = alignedResults(calls, results)
	if s.RenderResults != nil {
		return s.RenderResults(calls, results)
	}
	return labeledResults(calls, results)
}

// docs writes the tool docs with the format's Docs, or the generic page.
func (s FormatSpec) docs(tools []Tool) string {
	if s.Docs != nil {
		return s.Docs(tools)
	}
	return customDocs(s, tools)
}

// unknownFormatText says that a config's format is neither built in nor
// in the table fs.
func unknownFormatText(f Format, fs *Formats) string {
	msg := fmt.Sprintf("format %q is not one of native, xml, json, fenced, strict, helpers, auto", f)
	if added := fs.Added(); len(added) > 0 {
		names := make([]string, len(added))
		for i, r := range added {
			names[i] = string(r)
		}
		msg += " or the registered formats " + strings.Join(names, ", ")
	}
	return msg
}

// parseCustom runs an added format's parser and makes its error a
// ParseError of that format.
func parseCustom(name Format, f FormatSpec, text string, tools []Tool) (Parsed, error) {
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

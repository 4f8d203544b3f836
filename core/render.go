package core

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RenderResults is the text that hands a turn's results back to a model that
// writes calls as text, in the order the calls were made, in the style of
// built-in format f: <tool_result> blocks for xml, <helpers_result> blocks
// for helpers, ```tool_result blocks for fenced, a {"results": [...]} object
// for json, one {"tool": ..., "result": ...} object per call for strict, and
// labeled paragraphs otherwise (Formats.RenderResults also knows the
// formats a program adds). results are aligned with calls.
//
// In the two JSON formats a failed call reads {"tool": ..., "ok": false,
// "error": ...} (json adds its "tag"), so the model finds the failure under
// a key of its own; a success keeps its plain "result" (docs/adr/0021).
func RenderResults(f Format, calls []ToolCall, results []ToolResult) string {
	return (*Formats)(nil).RenderResults(f, calls, results)
}

// labeledResults writes each result as a paragraph, "Result of NAME (call
// ID):" (", failed:" for a failed call) then its text: the results of
// native, auto and of a format with no RenderResults.
func labeledResults(calls []ToolCall, results []ToolResult) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteString("\n")
		}
		failed := ""
		if results[i].Failed() {
			failed = ", failed"
		}
		fmt.Fprintf(&b, "Result of %s (call %s)%s:\n%s\n", c.Name, c.ID, failed, resultBody(results[i]))
	}
	return b.String()
}

// resultBody is a result's text as the model reads it: its output, or its
// error, or "(no output)".
func resultBody(r ToolResult) string {
	if text := resultText(r); text != "" {
		return text
	}
	return "(no output)"
}

// renderTurnResults is the message that hands a finished turn's results to
// a model that writes calls as text: RenderResults, except in the strict
// format for a call whose tool has a Summary, which reads as a line of the
// seed's loop history,
//
//	Tool 3 [web_search]: 12 items, the first 3: ...
//	Tool 4 [fetch]: {"ok": false, "error": "timeout"}
//
// where N is the number of the model call that asked for it
// (Counters.ModelCalls: the strict format makes one call per reply).
func renderTurnResults(cfg Config, st State, calls []ToolCall, results []ToolResult) string {
	spec, ok := cfg.formatSpec()
	if !ok {
		spec = nativeFormat
	}
	if !spec.historyResults {
		return spec.renderResults(calls, results)
	}
	results = alignedResults(calls, results)
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteString("\n")
		}
		t, _ := cfg.tool(c.Name)
		if !cfg.summary(t).on() {
			b.WriteString(spec.renderResults(calls[i:i+1], results[i:i+1]))
			continue
		}
		fmt.Fprintf(&b, "Tool %d [%s]: ", st.Counters.ModelCalls, c.Name)
		switch r := results[i]; {
		case r.Failed():
			b.WriteString(`{"ok": false, "error": `)
			appendJSONString(&b, r.Error)
			b.WriteString("}")
		case r.Output == "":
			b.WriteString("(no output)")
		default:
			b.WriteString(r.Output)
		}
	}
	return b.String()
}

// RenderCall writes one call in the syntax of built-in format f, as a whole
// reply that Parse(f, ...) reads back as that call: a <tool> block for xml
// (and auto), an envelope for json, a ```tool block for fenced, the call
// object for strict (which has no id), a <helpers> block for helpers (no id;
// argument names that are not Python identifiers go in a **{...} dict).
// Native (and an unknown format) gives the OpenAI-style {"id", "name",
// "arguments"} object. Formats.RenderCall also knows the formats a program
// adds.
func RenderCall(f Format, c NativeCall) string {
	return (*Formats)(nil).RenderCall(f, c)
}

// renderArgsJSON is call arguments as compact JSON; empty arguments are {}.
func renderArgsJSON(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	if !json.Valid([]byte(args)) {
		return args
	}
	return compactJSONText(args)
}

// renderHelpersCall writes c as one Python call statement with keyword
// arguments; arguments that are not JSON objects are left out.
func renderHelpersCall(c NativeCall) string {
	var b strings.Builder
	b.WriteString(c.Name)
	b.WriteByte('(')
	args := renderArgsJSON(c.Arguments)
	if strings.HasPrefix(args, "{") && json.Valid([]byte(args)) {
		var unnamed []jsonMember
		n := 0
		for _, m := range jsonMembers(args) {
			if !isPyIdentifier(m.key) {
				unnamed = append(unnamed, m)
				continue
			}
			if n > 0 {
				b.WriteString(", ")
			}
			b.WriteString(m.key)
			b.WriteByte('=')
			writePyLiteral(&b, m.raw)
			n++
		}
		if len(unnamed) > 0 {
			if n > 0 {
				b.WriteString(", ")
			}
			b.WriteString("**")
			writePyDict(&b, unnamed)
		}
	}
	b.WriteByte(')')
	return b.String()
}

// pyLiteral writes a JSON value as a Python literal.
func pyLiteral(raw string) string {
	var b strings.Builder
	writePyLiteral(&b, raw)
	return b.String()
}

func writePyLiteral(b *strings.Builder, raw string) {
	switch {
	case raw == "" || raw == "null":
		b.WriteString("None")
	case raw == "true":
		b.WriteString("True")
	case raw == "false":
		b.WriteString("False")
	case raw[0] == '{':
		writePyDict(b, jsonMembers(raw))
	case raw[0] == '[':
		b.WriteByte('[')
		for i, m := range jsonMembers(raw) {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyLiteral(b, m.raw)
		}
		b.WriteByte(']')
	case raw[0] == '"':
		s, _ := jsonStringOf(raw)
		b.WriteString(pyString(s))
	default: // a JSON number is a Python number as written
		b.WriteString(raw)
	}
}

func writePyDict(b *strings.Builder, members []jsonMember) {
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyString(m.key))
		b.WriteString(": ")
		writePyLiteral(b, m.raw)
	}
	b.WriteByte('}')
}

// pyString writes s as a double-quoted Python string literal.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

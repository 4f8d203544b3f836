package core

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RenderResults is the text that hands a turn's results back to a model that
// writes calls as text, in the order the calls were made, in the style of
// format f: <tool_result> blocks for xml, <helpers_result> blocks for
// helpers, ```tool_result blocks for fenced, a {"results": [...]} object for
// json, one {"tool": ..., "result": ...} object per call for strict, a
// registered format's own rendering, and labeled paragraphs otherwise.
// results are aligned with calls.
//
// In the two JSON formats a failed call reads {"tool": ..., "ok": false,
// "error": ...} (json adds its "tag"), so the model finds the failure under
// a key of its own; a success keeps its plain "result" (docs/adr/0021).
func RenderResults(f Format, calls []ToolCall, results []ToolResult) string {
	if cf, ok := customFormat(f); ok && cf.RenderResults != nil {
		return cf.RenderResults(calls, alignedResults(calls, results))
	}
	var b strings.Builder
	if f == FormatJSON {
		b.WriteString(`{"results": [`)
	}
	for i, c := range calls {
		var r ToolResult
		if i < len(results) {
			r = results[i]
		}
		text := resultText(r)
		if text == "" {
			text = "(no output)"
		}
		switch {
		case i > 0 && f == FormatJSON:
			b.WriteString(",")
		case i > 0:
			b.WriteString("\n")
		}
		switch f {
		case FormatXML, FormatHelpers:
			tag := "tool_result"
			if f == FormatHelpers {
				tag = "helpers_result"
			}
			fmt.Fprintf(&b, "<%s name=%s tag=%s>\n%s\n</%s>", tag, xmlAttr(c.Name), xmlAttr(c.ID), text, tag)
		case FormatFenced:
			fence := strings.Repeat("`", max(3, longestBacktickRun(text)+1))
			fmt.Fprintf(&b, "%stool_result %s %s\n%s\n%s", fence, c.Name, c.ID, text, fence)
		case FormatJSON, FormatStrict:
			if f == FormatJSON {
				b.WriteString("\n  ")
			}
			b.WriteString(`{"tool": `)
			appendJSONString(&b, c.Name)
			if f == FormatJSON {
				b.WriteString(`, "tag": `)
				appendJSONString(&b, c.ID)
			}
			if r.Failed() {
				b.WriteString(`, "ok": false, "error": `)
				appendJSONString(&b, r.Error)
			} else {
				b.WriteString(`, "result": `)
				appendJSONString(&b, r.Output)
			}
			b.WriteString("}")
		default:
			fmt.Fprintf(&b, "Result of %s (call %s):\n%s\n", c.Name, c.ID, text)
		}
	}
	if f == FormatJSON {
		b.WriteString("\n]}")
	}
	return b.String()
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
	f := cfg.format()
	if f != FormatStrict {
		return RenderResults(f, calls, results)
	}
	results = alignedResults(calls, results)
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteString("\n")
		}
		t, _ := cfg.tool(c.Name)
		if !cfg.summary(t).on() {
			b.WriteString(RenderResults(f, calls[i:i+1], results[i:i+1]))
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

func longestBacktickRun(s string) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// RenderCall writes one call in the syntax of format f, as a whole reply
// that Parse(f, ...) reads back as that call: a <tool> block for xml (and
// auto), an envelope for json, a ```tool block for fenced, the call object
// for strict (which has no id), a <helpers> block for helpers (no id;
// argument names that are not Python identifiers go in a **{...} dict), and
// what a registered format's RenderCall writes. Native gives the
// OpenAI-style {"id", "name", "arguments"} object.
func RenderCall(f Format, c NativeCall) string {
	switch f {
	case FormatXML, FormatAuto:
		return renderXMLCall(c)
	case FormatJSON:
		return renderJSONEnvelope("", []NativeCall{c})
	case FormatFenced:
		return renderFencedCall(c)
	case FormatStrict:
		return renderStrictCall(c)
	case FormatHelpers:
		return helpersOpen + "\n" + renderHelpersCall(c) + "\n" + helpersClose
	}
	if cf, ok := customFormat(f); ok {
		return cf.RenderCall(c)
	}
	var b strings.Builder
	b.WriteString(`{"id": `)
	appendJSONString(&b, c.ID)
	b.WriteString(`, "name": `)
	appendJSONString(&b, c.Name)
	b.WriteString(`, "arguments": `)
	appendJSONString(&b, c.Arguments)
	b.WriteString("}")
	return b.String()
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

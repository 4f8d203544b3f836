package core

import (
	"encoding/json"
	"strings"
)

// parseStrict reads the strict format: the reply, trimmed, is exactly one
// call object with exactly two keys
//
//	{"tool": "search", "args": {"query": "x"}}
//
// or it is a final answer in plain text. A reply that is a JSON object with
// other or missing keys, that starts like a call ({"tool") but is not valid
// JSON (cut off, or followed by more text), or that puts such a call in a
// ``` fence, is an error. Any other reply is the final answer.
func parseStrict(text string) (Parsed, error) {
	start := skipXMLSpace(text, 0)
	end := len(strings.TrimRight(text, " \t\r\n"))
	if start < end && strings.HasPrefix(text[start:end], "```") {
		// A call in a fence is not a final answer: say how to write it.
		if nl := strings.IndexByte(text[start:end], '\n'); nl >= 0 && looksLikeStrictCall(strings.TrimSpace(text[start+nl+1:end])) {
			return Parsed{}, parseErrAt(FormatStrict, text, start, "write the call object alone, without a ``` fence around it: %s", strictCallShape.example)
		}
	}
	if start >= end || text[start] != '{' {
		return Parsed{Text: text}, nil
	}
	if t := text[start:end]; json.Valid([]byte(t)) {
		c, perr := callFromObject(FormatStrict, text, start, t, strictCallShape, "the call")
		if perr != nil {
			return Parsed{}, perr
		}
		return Parsed{Calls: []NativeCall{c}, Raw: []string{t}}, nil
	}
	if !looksLikeStrictCall(text[start:end]) {
		return Parsed{Text: text}, nil
	}
	_, stop, perr := decodeJSONObjectAt(FormatStrict, text, start, end, "the call")
	if perr != nil {
		return Parsed{}, perr
	}
	rest := skipJSONSpace(text, stop, end)
	return Parsed{}, parseErrAt(FormatStrict, text, rest, "unexpected text after the call object: %s; a tool call must be the whole reply, with nothing before or after it (one call per reply)", quoteExcerpt(text[rest:end]))
}

var strictCallShape = callShape{argsKey: "args", needArgs: true, example: `{"tool": "search", "args": {"query": "x"}} (exactly these two keys)`}

// looksLikeStrictCall reports whether s starts with `{"tool"`, space allowed.
func looksLikeStrictCall(s string) bool {
	if !strings.HasPrefix(s, "{") {
		return false
	}
	k := skipXMLSpace(s, 1)
	return strings.HasPrefix(s[k:], `"tool"`)
}

// renderStrictCall writes c as the one call object of a reply.
func renderStrictCall(c NativeCall) string {
	var b strings.Builder
	b.WriteString(`{"tool": `)
	appendJSONString(&b, c.Name)
	b.WriteString(`, "args": `)
	b.WriteString(renderArgsJSON(c.Arguments))
	b.WriteString("}")
	return b.String()
}

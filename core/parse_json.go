package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stepwise-agent/stepwise/core/internal/jsontext"
)

// This file holds the json format and the JSON reading that every text
// format shares: a located ParseError, a JSON object read off the reply with
// a real decoder (so braces and closing tags inside strings are just text),
// and the {"tool": ..., <args>: {...}} call object used by json, fenced and
// strict.

// parseJSON reads the json format. The whole reply (surrounding space and an
// optional ```json fence allowed) is one envelope:
//
//	{"message": "text for the user", "tools": [{"tool": "search", "args": {"query": "x"}, "tag": "a1"}]}
//
// Every key may be left out; any other key is an error. A reply that is not
// JSON at all is a final answer. A reply that starts like an envelope (`{`
// then a key or `}`) but is malformed or cut off is an error.
func parseJSON(text string) (Parsed, error) {
	start, end, ok := jsonEnvelopeSpan(text)
	if !ok {
		return Parsed{Text: text}, nil
	}
	raw, stop, perr := decodeJSONObjectAt(FormatJSON, text, start, end, "the JSON envelope")
	if perr != nil {
		return Parsed{}, perr
	}
	if rest := skipJSONSpace(text, stop, end); rest < end {
		return Parsed{}, parseErrAt(FormatJSON, text, rest, "unexpected text after the JSON envelope: %s; the whole reply must be one JSON object", quoteExcerpt(text[rest:end]))
	}
	var p Parsed
	seen := map[string]bool{}
	for _, m := range jsonMembers(raw) {
		off, voff := start+m.off, start+m.voff
		if seen[m.key] {
			return Parsed{}, parseErrAt(FormatJSON, text, off, "the key %q appears twice in the envelope", m.key)
		}
		seen[m.key] = true
		switch m.key {
		case "message":
			if isJSONNull(m.raw) {
				continue
			}
			s, ok := jsonStringOf(m.raw)
			if !ok {
				return Parsed{}, parseErrAt(FormatJSON, text, voff, `"message" must be a string, found %s`, describeJSONKind(m.raw))
			}
			p.Text = s
		case "tools":
			if isJSONNull(m.raw) {
				continue
			}
			if !strings.HasPrefix(m.raw, "[") {
				return Parsed{}, parseErrAt(FormatJSON, text, voff, `"tools" must be an array of calls like [{"tool": "search", "args": {...}}], found %s`, describeJSONKind(m.raw))
			}
			base := start + m.voff
			for i, it := range jsonMembers(m.raw) {
				c, perr := callFromObject(FormatJSON, text, base+it.off, it.raw, envelopeCallShape, fmt.Sprintf("tools[%d]", i))
				if perr != nil {
					return Parsed{}, perr
				}
				p.Calls = append(p.Calls, c)
				p.Raw = append(p.Raw, it.raw)
			}
		default:
			return Parsed{}, parseErrAt(FormatJSON, text, off, `unknown key %q in the envelope; it may only hold "message" and "tools"`, m.key)
		}
	}
	return p, nil
}

// jsonEnvelopeSpan finds the envelope in a reply: the byte range of the text
// between the optional ```json fence, starting at its `{`. ok is false when
// the reply does not look like an envelope at all.
func jsonEnvelopeSpan(text string) (start, end int, ok bool) {
	start = skipJSONSpace(text, 0, len(text))
	end = len(strings.TrimRight(text, " \t\r\n"))
	if start >= end {
		return 0, 0, false
	}
	if strings.HasPrefix(text[start:end], "```") {
		nl := strings.IndexByte(text[start:end], '\n')
		if nl < 0 {
			return 0, 0, false
		}
		info := strings.TrimSpace(text[start+3 : start+nl])
		if info != "" && !strings.EqualFold(info, "json") {
			return 0, 0, false
		}
		body := start + nl + 1
		if end-3 >= body && strings.HasSuffix(text[body:end], "```") {
			end -= 3 // otherwise the fence was cut off with the reply
		}
		start = skipJSONSpace(text, body, end)
	}
	if start >= end || text[start] != '{' {
		return 0, 0, false
	}
	if next := skipJSONSpace(text, start+1, end); next < end && text[next] != '"' && text[next] != '}' {
		return 0, 0, false // "{braces} in prose", not JSON
	}
	return start, end, true
}

// callShape says which keys a call object of a format holds.
type callShape struct {
	argsKey  string // "args" or "parameters"
	tag      bool   // an optional "tag" (the call id) is allowed
	needArgs bool   // the arguments key must be present
	example  string // the expected form, for messages
}

var envelopeCallShape = callShape{argsKey: "args", tag: true, example: `{"tool": "search", "args": {"query": "x"}, "tag": "a1"}`}

// callFromObject reads one call object. raw is valid JSON starting at byte
// off of text; where names it in messages ("tools[0]", "the call").
func callFromObject(f Format, text string, off int, raw string, shape callShape, where string) (NativeCall, *ParseError) {
	if !strings.HasPrefix(raw, "{") {
		return NativeCall{}, parseErrAt(f, text, off, "%s must be an object like %s, found %s", where, shape.example, describeJSONKind(raw))
	}
	var c NativeCall
	seen := map[string]bool{}
	for _, m := range jsonMembers(raw) {
		moff, voff := off+m.off, off+m.voff
		if seen[m.key] {
			return NativeCall{}, parseErrAt(f, text, moff, "%s: the key %q appears twice", where, m.key)
		}
		seen[m.key] = true
		switch {
		case m.key == "tool":
			s, ok := jsonStringOf(m.raw)
			if !ok || strings.TrimSpace(s) == "" {
				return NativeCall{}, parseErrAt(f, text, voff, `%s: "tool" must be the tool's name as a non-empty string, found %s`, where, describeJSONKind(m.raw))
			}
			c.Name = s
		case m.key == shape.argsKey:
			if isJSONNull(m.raw) {
				continue
			}
			if !strings.HasPrefix(m.raw, "{") {
				return NativeCall{}, parseErrAt(f, text, voff, "%s: %q must be a JSON object of arguments, found %s", where, shape.argsKey, describeJSONKind(m.raw))
			}
			c.Arguments = compactJSONText(m.raw)
		case m.key == "tag" && shape.tag:
			if isJSONNull(m.raw) {
				continue
			}
			s, ok := jsonStringOf(m.raw)
			if !ok {
				return NativeCall{}, parseErrAt(f, text, voff, `%s: "tag" must be a string, found %s`, where, describeJSONKind(m.raw))
			}
			c.ID = s
		default:
			return NativeCall{}, parseErrAt(f, text, moff, "%s: unknown key %q; write the call as %s", where, m.key, shape.example)
		}
	}
	if !seen["tool"] {
		return NativeCall{}, parseErrAt(f, text, off, `%s: "tool" (the tool's name) is missing; write the call as %s`, where, shape.example)
	}
	if shape.needArgs && !seen[shape.argsKey] {
		return NativeCall{}, parseErrAt(f, text, off, "%s: %q (the arguments) is missing; write the call as %s", where, shape.argsKey, shape.example)
	}
	if c.Arguments == "" {
		c.Arguments = "{}"
	}
	return c, nil
}

// decodeJSONObjectAt reads the JSON value that starts at text[off] (a `{`),
// reading no further than end. It returns the value's text and the offset
// just after it. what names the value in messages.
func decodeJSONObjectAt(f Format, text string, off, end int, what string) (raw string, stop int, perr *ParseError) {
	dec := json.NewDecoder(strings.NewReader(text[off:end]))
	var m json.RawMessage
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			at := off + int(se.Offset) - 1
			return "", 0, parseErrAt(f, text, at, "%s is not valid JSON: %s", what, se.Error())
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return "", 0, parseErrAt(f, text, off, "%s ends before the JSON is complete (was the reply cut off?); close every string, array and object", what)
		default:
			return "", 0, parseErrAt(f, text, off, "%s is not valid JSON: %v", what, err)
		}
	}
	stop = off + int(dec.InputOffset())
	return text[off:stop], stop, nil
}

// jsonMember is one member of a JSON object (key and value) or one element of
// an array (value only). off is the byte offset of the key (of the element in
// an array) and voff that of the value, in the containing value's text.
type jsonMember struct {
	key       string
	raw       string
	off, voff int
}

// jsonMembers lists the members of a valid JSON object, or the elements of a
// valid JSON array, in the order written.
func jsonMembers(raw string) []jsonMember {
	dec := json.NewDecoder(strings.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	d, _ := tok.(json.Delim)
	var out []jsonMember
	for dec.More() {
		off := skipJSONSpace(raw, int(dec.InputOffset()), len(raw))
		var key string
		if d == '{' {
			tok, err := dec.Token()
			if err != nil {
				return out
			}
			key, _ = tok.(string)
		}
		voff := skipJSONSpace(raw, int(dec.InputOffset()), len(raw))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, jsonMember{key: key, raw: string(v), off: off, voff: voff})
	}
	return out
}

// skipJSONSpace skips JSON white space and the separators , and : from i,
// stopping at end.
func skipJSONSpace(s string, i, end int) int {
	for i < end {
		switch s[i] {
		case ' ', '\t', '\r', '\n', ',', ':':
			i++
		default:
			return i
		}
	}
	return i
}

func isJSONNull(raw string) bool { return raw == "null" }

func jsonStringOf(raw string) (string, bool) {
	if !strings.HasPrefix(raw, `"`) {
		return "", false
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		return "", false
	}
	return s, true
}

// describeJSONKind names the kind of a JSON value, for messages.
func describeJSONKind(raw string) string {
	switch {
	case raw == "":
		return "nothing"
	case raw[0] == '"':
		return "a string"
	case raw[0] == '{':
		return "an object"
	case raw[0] == '[':
		return "an array"
	case raw == "true" || raw == "false":
		return "a boolean"
	case raw == "null":
		return "null"
	}
	return "a number"
}

// compactJSONText removes insignificant space from valid JSON, keeping key
// order and number spelling.
func compactJSONText(raw string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(raw)) != nil {
		return raw
	}
	return b.String()
}

func jsonQuoted(s string) string { return jsontext.Quoted(s) }

// parseErrAt builds a ParseError located at byte off of text (1-based line
// and column, the column counted in characters).
func parseErrAt(f Format, text string, off int, format string, args ...any) *ParseError {
	off = max(0, min(off, len(text)))
	line, col := 1, 1
	for _, r := range text[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &ParseError{Format: f, Offset: off, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// renderJSONEnvelope writes an envelope holding message (left out when
// empty) and calls.
func renderJSONEnvelope(message string, calls []NativeCall) string {
	var b strings.Builder
	b.WriteString("{")
	if message != "" {
		b.WriteString(`"message": `)
		appendJSONString(&b, message)
		b.WriteString(", ")
	}
	b.WriteString(`"tools": [`)
	for i, c := range calls {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"tool": `)
		appendJSONString(&b, c.Name)
		b.WriteString(`, "args": `)
		b.WriteString(renderArgsJSON(c.Arguments))
		if c.ID != "" {
			b.WriteString(`, "tag": `)
			appendJSONString(&b, c.ID)
		}
		b.WriteString("}")
	}
	b.WriteString("]}")
	return b.String()
}

// appendJSONString writes s to b as a JSON string (jsontext.AppendString).
func appendJSONString(b *strings.Builder, s string) { jsontext.AppendString(b, s) }

// quoteExcerpt quotes the start of s for a message (jsontext.Excerpt).
func quoteExcerpt(s string) string { return jsontext.Excerpt(s) }

package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// argTemplate is one argv element (or the stdin text) of a command tool:
// literal text with {{name}} placeholders. Expanding it yields exactly one
// string; no shell ever sees it, so an argument's quotes, spaces, $( ) or
// ; are passed on literally.
type argTemplate []segment

// segment is literal text, or a placeholder when arg is set.
type segment struct {
	text string
	arg  string
}

// parseTemplate splits s into literals and {{name}} placeholders (spaces
// inside the braces are ignored). An unclosed "{{" or an empty name is an
// error; there is no escape for a literal "{{".
func parseTemplate(s string) (argTemplate, error) {
	var t argTemplate
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			t = append(t, segment{text: s})
			break
		}
		if i > 0 {
			t = append(t, segment{text: s[:i]})
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("%q: unclosed {{", s)
		}
		name := strings.TrimSpace(s[i+2 : i+2+j])
		if name == "" || strings.ContainsAny(name, "{}") {
			return nil, fmt.Errorf("%q: a placeholder needs an argument name, like {{path}}", s)
		}
		t = append(t, segment{arg: name})
		s = s[i+2+j+2:]
	}
	return t, nil
}

// args lists the argument names the template uses.
func (t argTemplate) args() []string {
	var names []string
	for _, s := range t {
		if s.arg != "" {
			names = append(names, s.arg)
		}
	}
	return names
}

// expand fills the placeholders with the string form of the arguments.
func (t argTemplate) expand(args map[string]any) string {
	var b strings.Builder
	for _, s := range t {
		if s.arg == "" {
			b.WriteString(s.text)
		} else {
			b.WriteString(argString(args[s.arg]))
		}
	}
	return b.String()
}

// argString is the string form of an argument: a string as is, a number
// as written, true/false, "" for a missing or null argument, and compact
// JSON for an array or object.
func argString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// decodeArgMap decodes a call's arguments into a map, numbers kept exact.
func decodeArgMap(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("bad arguments: %v", err)
	}
	if dec.More() {
		return nil, errors.New("bad arguments: more than one JSON value")
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

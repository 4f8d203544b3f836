package core

import (
	"strconv"
	"strings"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// docParams is a tool's parameter schema as the tool docs show it: compact
// JSON, without the defaults the schema check dropped (see docSchema).
func docParams(t Tool) string { return renderArgsJSON(docSchema(t)) }

// docSchema is a tool's parameter schema as the docs read it: as written,
// or, when the schema check dropped defaults, compacted and without them,
// so the model never reads a default stepwise does not honour.
func docSchema(t Tool) string {
	raw := string(t.Parameters)
	s, err := schema.Compile(t.Parameters)
	if err != nil || len(s.Dropped()) == 0 {
		return raw
	}
	text := compactJSONText(raw)
	for _, path := range s.Dropped() {
		text = withoutDefault(text, path)
	}
	return text
}

// withoutDefault removes the "default" member of the object found at path
// (object keys and array indexes) inside the JSON value raw; the rest keeps
// its text.
func withoutDefault(raw string, path []string) string {
	var b strings.Builder
	switch {
	case strings.HasPrefix(raw, "{"):
		b.WriteByte('{')
		n := 0
		for _, m := range jsonMembers(raw) {
			val := m.raw
			switch {
			case len(path) == 0 && m.key == "default":
				continue
			case len(path) > 0 && m.key == path[0]:
				val = withoutDefault(m.raw, path[1:])
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(raw[m.off:m.voff]) // the key as written, and its colon
			b.WriteString(val)
			n++
		}
		b.WriteByte('}')
	case strings.HasPrefix(raw, "[") && len(path) > 0:
		b.WriteByte('[')
		for i, m := range jsonMembers(raw) {
			if i > 0 {
				b.WriteByte(',')
			}
			if strconv.Itoa(i) == path[0] {
				b.WriteString(withoutDefault(m.raw, path[1:]))
			} else {
				b.WriteString(m.raw)
			}
		}
		b.WriteByte(']')
	default:
		return raw
	}
	return b.String()
}

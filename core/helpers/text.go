package helpers

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error locates a problem in a reply: Offset is a byte offset into it, Line
// and Col (1-based, the column counted in characters) the same place for
// people. Msg says what is wrong and how to write it, for the model.
type Error struct {
	Offset    int
	Line, Col int
	Msg       string
}

// Error is the message with its place: line 2 column 5: ...
func (e *Error) Error() string {
	return fmt.Sprintf("line %d column %d: %s", e.Line, e.Col, e.Msg)
}

// errAt builds an Error located at byte off of text.
func errAt(text string, off int, format string, args ...any) *Error {
	off = max(0, min(off, len(text)))
	line, col := 1, 1
	for _, r := range text[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &Error{Offset: off, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// quoteExcerpt quotes the start of s for a message.
func quoteExcerpt(s string) string {
	if s == "" {
		return "the end of the reply"
	}
	const limit = 24
	n := 0
	for i := range s {
		if n == limit {
			return fmt.Sprintf("%q...", s[:i])
		}
		n++
	}
	return fmt.Sprintf("%q", s)
}

// appendJSONString writes s as a JSON string: only ", \ and control
// characters are escaped (no HTML escaping); invalid UTF-8 becomes U+FFFD.
// The same bytes as the core's other text formats write.
func appendJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func jsonQuoted(s string) string {
	var b strings.Builder
	appendJSONString(&b, s)
	return b.String()
}

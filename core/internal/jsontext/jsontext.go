// Package jsontext writes the bits of JSON text that core and its
// subpackages write by hand, the same bytes everywhere: a string escaped
// only where JSON needs it (", \ and control characters; no HTML escaping;
// invalid UTF-8 as U+FFFD), and a short quoted excerpt for a message. It is
// pure and imports nothing of stepwise.
package jsontext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// AppendString writes s to b as a JSON string.
func AppendString(b *strings.Builder, s string) {
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

// Quoted is s as a JSON string.
func Quoted(s string) string {
	var b strings.Builder
	AppendString(&b, s)
	return b.String()
}

// Excerpt quotes the start of s (24 characters at most) for a message;
// an empty s is "the end of the reply".
func Excerpt(s string) string {
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
